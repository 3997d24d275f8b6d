//! Lists a page at a time over HTTP: the thread list, a thread's messages and the thread search keep
//! their JSON array and announce the next page in a `Link` header; `limit` and `cursor` are checked.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{Gateway, error_code, scripted_config};
use promptgate_server::config::AuthMode;
use promptgate_server::state::LOCAL_USER_ID;
use promptgate_store::testing::TestDb;
use promptgate_store::{NewMessage, NewThread, Role};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

async fn gateway(db: &TestDb) -> Gateway {
    let config = scripted_config(AuthMode::SingleUser, "http://127.0.0.1:9");
    let gw = Gateway::over_store(db.another_instance().await, db.url(), config).await;
    // The local user exists once the gateway has answered a first request.
    assert_eq!(gw.get("/v1/settings").await.0, StatusCode::OK);
    gw
}

/// The page at `path`: its body and the target of its `Link: <…>; rel="next"`, if any.
async fn page(gw: &Gateway, path: &str) -> (Value, Option<String>) {
    let res = gw.response(Method::GET, path, None, None).await;
    assert_eq!(res.status(), StatusCode::OK, "{path}");
    let next = res.headers().get("link").map(|link| {
        let link = link.to_str().unwrap();
        assert!(link.ends_with(">; rel=\"next\""), "{link}");
        link.trim_start_matches('<').split('>').next().unwrap().to_owned()
    });
    (res.json().await.unwrap(), next)
}

/// Every page from `path` on, following the links: the values of `field` of each item, per page.
async fn walk(gw: &Gateway, path: &str, field: &str) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut next = Some(path.to_owned());
    while let Some(path) = next {
        let (body, link) = page(gw, &path).await;
        let items = body.as_array().unwrap();
        pages.push(
            items
                .iter()
                .map(|i| i[field].as_str().unwrap().to_owned())
                .collect(),
        );
        next = link;
        assert!(pages.len() < 50, "the links never end");
    }
    pages
}

async fn say(db: &TestDb, thread: &str, role: Role, words: &str) {
    let message = NewMessage {
        id: None,
        thread_id: thread.to_owned(),
        role,
        parts: json!([{ "type": "text", "text": words }]),
        metadata: json!({}),
        status: None,
    };
    db.append_message(LOCAL_USER_ID, &message).await.unwrap();
}

async fn thread(db: &TestDb, id: &str, title: &str) {
    let new = NewThread {
        id: Some(id.to_owned()),
        project_id: None,
        title: Some(title.to_owned()),
    };
    db.create_thread(LOCAL_USER_ID, &new).await.unwrap();
}

async fn threads_messages_and_search_come_a_page_at_a_time(db: TestDb) {
    let gw = gateway(&db).await;
    for n in 1..=5 {
        thread(&db, &format!("t{n}"), &format!("Garden plan {n}")).await;
    }
    assert_eq!(
        walk(&gw, "/v1/threads?limit=2", "id").await,
        [vec!["t5", "t4"], vec!["t3", "t2"], vec!["t1"]],
        "newest first, each thread once"
    );
    let (all, next) = page(&gw, "/v1/threads").await;
    assert_eq!(
        all.as_array().unwrap().len(),
        5,
        "the default page holds them all"
    );
    assert_eq!(next, None);

    for n in 1..=3 {
        say(&db, "t1", Role::User, &format!("q{n}")).await;
        say(&db, "t1", Role::Assistant, &format!("a{n}")).await;
    }
    let pages = walk(&gw, "/v1/threads/t1/messages?limit=4", "id").await;
    assert_eq!(pages.iter().map(Vec::len).collect::<Vec<_>>(), [4, 2]);
    let (newest, _) = page(&gw, "/v1/threads/t1/messages?limit=2").await;
    let texts: Vec<&str> = newest
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["parts"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        ["q3", "a3"],
        "the first page is the end of the thread, in conversation order"
    );
    let stored = walk(&gw, "/v1/threads/t1/messages?replaced=true&limit=5", "id").await;
    assert_eq!(stored.iter().map(Vec::len).collect::<Vec<_>>(), [5, 1]);

    // Search results come in pages too, each thread once.
    let mut found = walk(&gw, "/v1/threads?q=garden%20plan&limit=2", "id")
        .await
        .concat();
    found.sort();
    assert_eq!(found, ["t1", "t2", "t3", "t4", "t5"]);
    assert_eq!(walk(&gw, "/v1/threads?q=plan%203", "id").await, [vec!["t3"]]);
}

async fn limits_and_cursors_are_checked(db: TestDb) {
    let gw = gateway(&db).await;
    thread(&db, "t1", "Garden").await;
    thread(&db, "t2", "Garden").await;
    let (status, body) = gw.get("/v1/threads?limit=0").await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::BAD_REQUEST, "invalid_query")
    );
    let (status, body) = gw.get("/v1/threads?limit=many").await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::BAD_REQUEST, "invalid_query")
    );
    let (status, body) = gw.get("/v1/threads?cursor=nonsense").await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::BAD_REQUEST, "invalid_cursor")
    );

    // A cursor handed out by one list is refused by another.
    let (_, link) = page(&gw, "/v1/threads?limit=1").await;
    let cursor = link.unwrap().split("cursor=").nth(1).unwrap().to_owned();
    let (status, body) = gw.get(&format!("/v1/threads/t1/messages?cursor={cursor}")).await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::BAD_REQUEST, "invalid_cursor")
    );
    let (status, body) = gw.get(&format!("/v1/threads?q=garden&cursor={cursor}")).await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::BAD_REQUEST, "invalid_cursor")
    );

    // A limit past the maximum is lowered to it rather than refused.
    let (status, body) = gw.get("/v1/threads?limit=1000000").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body.as_array().unwrap().len(), 2);
    let (status, _) = gw.get("/v1/threads/nope/messages?limit=5").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

promptgate_store::on_both_backends!(
    threads_messages_and_search_come_a_page_at_a_time,
    limits_and_cursors_are_checked
);
