//! What the web app (and any useChat frontend) needs from the server: editing an earlier message,
//! message ids scoped to their thread, signed artifact links an iframe can load in tokens mode,
//! and the built app served at `/` without shadowing the API.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{Backend, Gateway, error_code, scripted_config, single_user_gateway};
use promptgate_llm::scripted::{text, tool_calls};
use promptgate_server::config::AuthMode;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// The stored messages of a listing as `role: text` lines.
fn texts(messages: &Value) -> Vec<String> {
    common::stored_turns(messages)
        .into_iter()
        .map(|(role, text)| format!("{role}: {text}"))
        .collect()
}

/// What the model was sent, system prompt left out, as `role: content` lines.
fn sent_to_model(request: &Value) -> Vec<String> {
    common::sent_to_model(request)
        .into_iter()
        .map(|(role, content)| format!("{role}: {content}"))
        .collect()
}

fn user_message(id: &str, text: &str) -> Value {
    json!({"id": id, "role": "user", "parts": [{"type": "text", "text": text}]})
}

/// useChat sends only the new message when the app uses `prepareSendMessagesRequest`.
fn send(thread: &str, message: Value, message_id: Option<&str>) -> Value {
    json!({"id": thread, "trigger": "submit-message", "messages": [message], "messageId": message_id, "model": "scripted"})
}

async fn current_once(gw: &Gateway, thread: &str, last: &str) -> Value {
    for _ in 0..200 {
        let (status, messages) = gw.get(&format!("/v1/threads/{thread}/messages")).await;
        assert_eq!(status, StatusCode::OK, "{messages}");
        if texts(&messages).last().is_some_and(|t| t == last) {
            return messages;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("thread {thread} never ended with {last:?}");
}

async fn an_edited_message_replaces_the_old_one_and_what_followed(backend: Backend) {
    let (gw, upstream) = single_user_gateway(backend).await;
    for (id, question, answer) in [
        ("m1", "Plan a trip to Rome", "Rome plan."),
        ("m2", "Add a day", "Four days."),
    ] {
        upstream.push(text([answer]));
        let sse = gw
            .stream("/v1/chat", send("trip", user_message(id, question), None))
            .await;
        assert_eq!(sse.text(), answer);
        current_once(&gw, "trip", &format!("assistant: {answer}")).await;
    }

    // useChat's sendMessage({text, messageId: "m1"}) sends the edited first message under its id.
    upstream.push(text(["Paris plan."]));
    let sse = gw
        .stream(
            "/v1/chat",
            send("trip", user_message("m1", "Plan a trip to Paris"), Some("m1")),
        )
        .await;
    assert_eq!(sse.text(), "Paris plan.");
    assert_eq!(
        sent_to_model(&upstream.last_request().unwrap()),
        ["user: Plan a trip to Paris"],
        "the model sees the edit, not the old question or what followed it"
    );
    let current = current_once(&gw, "trip", "assistant: Paris plan.").await;
    assert_eq!(
        texts(&current),
        ["user: Plan a trip to Paris", "assistant: Paris plan."]
    );
    assert_eq!(current[0]["id"], "m1");
    let (_, everything) = gw.get("/v1/threads/trip/messages?replaced=true").await;
    assert_eq!(
        everything.as_array().unwrap().len(),
        6,
        "replaced messages stay stored: {everything}"
    );

    // The conversation goes on from the edit.
    upstream.push(text(["Louvre on day two."]));
    gw.stream("/v1/chat", send("trip", user_message("m3", "And museums?"), None))
        .await;
    assert_eq!(
        sent_to_model(&upstream.last_request().unwrap()),
        [
            "user: Plan a trip to Paris",
            "assistant: Paris plan.",
            "user: And museums?"
        ]
    );
}

common::on_both_backends!(an_edited_message_replaces_the_old_one_and_what_followed);

async fn message_ids_are_scoped_to_their_thread(backend: Backend) {
    let (gw, upstream) = single_user_gateway(backend).await;
    for (thread, answer) in [("first", "One."), ("second", "Two.")] {
        upstream.push(text([answer]));
        let sse = gw
            .stream("/v1/chat", send(thread, user_message("m1", "hello"), None))
            .await;
        assert_eq!(sse.status, StatusCode::OK);
        assert_eq!(sse.text(), answer);
        let messages = current_once(&gw, thread, &format!("assistant: {answer}")).await;
        assert_eq!(messages[0]["id"], "m1");
    }
}

common::on_both_backends!(message_ids_are_scoped_to_their_thread);

async fn threads_are_searched_by_title_and_message_text(backend: Backend) {
    let (gw, upstream) = single_user_gateway(backend).await;
    for (thread, question, answer) in [
        ("garden", "Plan my garden", "Plant tomatoes in May."),
        ("trip", "Plan a trip", "Visit the botanical gardens of Padua."),
        ("cooking", "Dinner ideas", "Risotto."),
    ] {
        upstream.push(text([answer]));
        gw.stream("/v1/chat", send(thread, user_message("m1", question), None))
            .await;
        current_once(&gw, thread, &format!("assistant: {answer}")).await;
    }
    let ids = |threads: &Value| -> Vec<String> {
        let mut ids: Vec<String> = threads
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_owned())
            .collect();
        ids.sort();
        ids
    };
    let (status, found) = gw.get("/v1/threads?q=tomatoes").await;
    assert_eq!(status, StatusCode::OK, "{found}");
    assert_eq!(ids(&found), ["garden"], "a word of an answer");
    let (_, found) = gw.get("/v1/threads?q=Plan").await;
    assert_eq!(ids(&found), ["garden", "trip"], "a word of the titles");
    let (_, found) = gw.get("/v1/threads?q=botanical%20padua").await;
    assert_eq!(ids(&found), ["trip"], "every word, in any case");
    let (_, found) = gw.get("/v1/threads?q=volcano").await;
    assert_eq!(ids(&found), Vec::<String>::new());
    let (_, all) = gw.get("/v1/threads?q=").await;
    assert_eq!(ids(&all).len(), 3, "an empty search lists every thread");
}

common::on_both_backends!(threads_are_searched_by_title_and_message_text);

#[tokio::test]
async fn a_signed_artifact_link_loads_without_a_header_and_only_as_signed() {
    common::init();
    let upstream = promptgate_llm::scripted::ScriptedUpstream::start().await.unwrap();
    let gw = Gateway::start(
        Backend::Sqlite,
        scripted_config(AuthMode::Tokens, &upstream.base_url()),
    )
    .await;
    let user = gw.store.create_user("ada").await.unwrap();
    let token = gw.store.issue_token(&user.id).await.unwrap();

    let args = json!({"title": "Clock", "html": "<h1>Tick</h1>"}).to_string();
    upstream.push(tool_calls(&[("call_r", "render_html", &[args.as_str()])]));
    upstream.push(text(["Here it is."]));
    let res = gw
        .response(
            Method::POST,
            "/v1/chat",
            Some(&send("art", user_message("m1", "draw a clock"), None)),
            Some(&token),
        )
        .await;
    let body = res.text().await.unwrap();
    let sse = common::parse_sse(StatusCode::OK, Default::default(), &body);
    let artifact = sse.of_type("tool-output-available")[0]["output"]["artifact_id"]
        .as_str()
        .unwrap()
        .to_owned();

    // The plain URL needs the header an iframe cannot send.
    let plain = gw
        .response(Method::GET, &format!("/v1/artifacts/{artifact}"), None, None)
        .await;
    assert_eq!(plain.status(), StatusCode::UNAUTHORIZED);

    let link_path = format!("/v1/artifacts/{artifact}/link");
    let (status, err) = gw.call(Method::POST, &link_path, None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{err}");
    let (status, link) = gw.call(Method::POST, &link_path, None, Some(&token)).await;
    assert_eq!(status, StatusCode::OK, "{link}");
    let url = link["url"].as_str().unwrap();
    assert!(
        url.starts_with(&format!("http://{}/v1/artifacts/", gw.addr)),
        "absolute: {url}"
    );
    assert!(!url.contains(&token), "the token never goes into a URL");
    assert!(link["expires_at"].as_u64().unwrap() > 0);

    let res = gw.http.get(url).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(
        res.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("sandbox allow-scripts")
    );
    assert!(res.text().await.unwrap().contains("<h1>Tick</h1>"));

    // Any change to what was signed is refused.
    let tampered = url.replace("expires=", "expires=9");
    let res = gw.http.get(&tampered).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let err: Value = res.json().await.unwrap();
    assert_eq!(error_code(&err), "invalid_link");
    let other = gw.store.create_user("bob").await.unwrap();
    let res = gw
        .http
        .get(url.replace(&format!("user={}", user.id), &format!("user={}", other.id)))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::FORBIDDEN);

    // Someone else's artifact gets no link.
    let bob = gw.store.issue_token(&other.id).await.unwrap();
    let (status, _) = gw.call(Method::POST, &link_path, None, Some(&bob)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_built_app_is_served_at_root_without_shadowing_the_api() {
    let dir = std::env::temp_dir().join(format!("promptgate-ui-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("assets")).unwrap();
    std::fs::write(dir.join("index.html"), "<!doctype html><title>app</title>").unwrap();
    std::fs::write(dir.join("assets/app-1.js"), "console.log(1)").unwrap();
    let mut config = common::test_config(AuthMode::SingleUser);
    config.ui.dir = Some(dir.to_string_lossy().into_owned());
    let gw = Gateway::start(Backend::Sqlite, config).await;

    for page in ["/", "/threads/abc", "/settings"] {
        let res = gw.response(Method::GET, page, None, None).await;
        assert_eq!(res.status(), StatusCode::OK, "{page}");
        let csp = common::html_page_policy(&res);
        assert!(
            csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"),
            "{csp}"
        );
        assert!(res.text().await.unwrap().contains("<title>app</title>"));
    }
    let res = gw.response(Method::GET, "/assets/app-1.js", None, None).await;
    assert_eq!(res.headers()["content-type"], "text/javascript; charset=utf-8");
    assert!(
        res.headers()["cache-control"]
            .to_str()
            .unwrap()
            .contains("immutable")
    );

    let (status, err) = gw.get("/v1/no-such-endpoint").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_code(&err), "not_found");
    let (status, _) = gw.get("/v1/settings").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(gw.get("/healthz").await.0, StatusCode::OK);
    let (status, spec) = gw.get("/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    assert!(spec["paths"].is_object());
    let (status, _) = gw.post("/somewhere", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "only GET and HEAD reach the app");
    let res = gw.response(Method::GET, "/../Cargo.toml", None, None).await;
    assert!(!res.text().await.unwrap().contains("[package]"));
    std::fs::remove_dir_all(&dir).unwrap();
}
