//! Two gateway instances on one Postgres, as behind a load balancer: a thread runs one turn whichever
//! instance took it, Stop and resuming reach the turn from either, a retry finds its turn's state on
//! the other instance, and a killed instance's turn is marked `interrupted` once its lease runs out.
//! Each instance has its own store connections, listener and memory; the last test runs one of them
//! as a separate `promptgate` process and kills it.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::{
    Backend, Gateway, error_code, message_retry, read_rest, resume, scripted_config_with,
    slow_answer_under_way, use_chat_body, use_chat_retry, words,
};
use promptgate_llm::scripted::{Script, ScriptedUpstream, text};
use promptgate_server::config::{AuthMode, EMBEDDED_DEFAULT};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// Short leases, so a dead instance is noticed within seconds.
const FAST_LEASES: &str = "[turn]\nlease_secs = 2\nheartbeat_secs = 1\n";

/// Two instances on one fresh Postgres database, both answering from one scripted upstream.
async fn two_instances(extra_toml: &str) -> (Gateway, Gateway, ScriptedUpstream) {
    common::init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    let config = || scripted_config_with(AuthMode::SingleUser, &upstream.base_url(), extra_toml);
    let a = Gateway::start(Backend::Postgres, config()).await;
    let b = a.another_instance(config()).await;
    assert_ne!(
        a.state.service.instance_id(),
        b.state.service.instance_id(),
        "each instance has its own id"
    );
    (a, b, upstream)
}

#[tokio::test]
async fn a_thread_busy_on_one_instance_is_refused_on_the_other() {
    let (a, b, upstream) = two_instances("").await;
    let first = common::hung_turn(&a, &upstream, "busy").await;

    let (status, err) = b.post("/v1/chat", use_chat_body("busy", "two", "scripted")).await;
    assert_eq!(status, StatusCode::CONFLICT, "{err}");
    assert_eq!(error_code(&err), "turn_in_progress");
    // The refused send left nothing behind: one question, one answer in progress.
    let (_, messages) = b.get("/v1/threads/busy/messages").await;
    assert_eq!(messages.as_array().unwrap().len(), 2, "{messages}");

    // Once the first turn is over (stopped from the other instance), the thread takes a new one there.
    let (_, stopped) = b.post("/v1/chat/busy/stop", json!({})).await;
    assert_eq!(stopped["stopped"], true);
    first.await.unwrap().unwrap();
    a.stored_messages("busy", 2).await;
    upstream.push(text(["Second."]));
    let sse = b.chat("busy", "two").await;
    assert_eq!(sse.status, StatusCode::OK);
    assert_eq!(sse.text(), "Second.");
}

#[tokio::test]
async fn stop_on_either_instance_stops_the_turn_where_it_runs() {
    let (a, b, upstream) = two_instances("").await;
    let (body, seen) = slow_answer_under_way(&a, &upstream, "s", "w", 3).await;

    let (status, stopped) = b.post("/v1/chat/s/stop", json!({})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(stopped["stopped"], true, "the turn runs on the other instance");
    let owner = read_rest(body, seen).await;
    assert!(owner.types().contains(&"abort"), "{:?}", owner.types());
    assert!(owner.done);
    assert!(!owner.text().contains("w199"), "the turn was cut short");

    let stored = b.stored_messages("s", 2).await;
    assert_eq!(stored[1]["status"], "stopped");
    let (_, again) = b.post("/v1/chat/s/stop", json!({})).await;
    assert_eq!(again["stopped"], false, "nothing runs any more");
    let (_, again) = a.post("/v1/chat/s/stop", json!({})).await;
    assert_eq!(again["stopped"], false);
}

#[tokio::test]
async fn a_reload_on_the_other_instance_resumes_the_stream_from_start() {
    let (a, b, upstream) = two_instances("").await;
    let idle = b.response(Method::GET, "/v1/chat/r/stream", None, None).await;
    assert_eq!(idle.status(), StatusCode::NO_CONTENT, "no turn runs yet");

    let (body, seen) = slow_answer_under_way(&a, &upstream, "r", "r", 3).await;
    // Two readers on the other instance and one on the owner follow the same turn.
    let (remote, second_remote, local, owner) = tokio::join!(
        resume(&b, "r"),
        resume(&b, "r"),
        resume(&a, "r"),
        read_rest(body, seen)
    );
    assert_eq!(remote.status, StatusCode::OK);
    assert_eq!(remote.headers["content-type"], "text/event-stream");
    assert_eq!(remote.headers["x-vercel-ai-ui-message-stream"], "v1");
    assert_eq!(remote.types().first(), Some(&"start"), "{:?}", remote.types());
    assert!(remote.done && owner.done);
    assert_eq!(owner.text(), words("r"));
    assert_eq!(
        remote.events, owner.events,
        "the remote reader sees the owner's chunks"
    );
    assert_eq!(second_remote.events, owner.events);
    assert_eq!(local.events, owner.events);
    assert_eq!(remote.headers["x-promptgate-turn-id"], owner.turn_id());

    let stored = b.stored_messages("r", 2).await;
    assert_eq!(stored[1]["status"], "complete");
    let idle = b.response(Method::GET, "/v1/chat/r/stream", None, None).await;
    assert_eq!(idle.status(), StatusCode::NO_CONTENT, "the turn is over");
}

#[tokio::test]
async fn with_continue_a_dropped_client_is_resumed_on_the_other_instance() {
    let (a, b, upstream) = two_instances("[turn]\non_disconnect = \"continue\"\n").await;
    common::drop_then_resume(&a, &b, &upstream, "c").await;
}

/// The thread's first turn ("hi", answered "First."), sent to `gw`: its id.
async fn first_turn(gw: &Gateway, upstream: &ScriptedUpstream, thread: &str) -> String {
    upstream.push(text(["First."]));
    gw.chat(thread, "hi").await.turn_id()
}

#[tokio::test]
async fn a_retry_on_the_other_instance_finds_its_turn() {
    let (a, b, upstream) = two_instances("").await;
    let turn = first_turn(&a, &upstream, "rt").await;

    upstream.push(text(["Second."]));
    let sse = b
        .stream("/v1/chat", use_chat_retry("rt", "again", "retry_of", &turn))
        .await;
    assert_eq!(sse.status, StatusCode::OK);
    assert_eq!(sse.text(), "Second.");

    // The same field on the other route, also on the other instance.
    upstream.push(text(["Third."]));
    let sse = a
        .thread_message("rt", message_retry("more", "retry_of", &turn))
        .await;
    assert_eq!(sse.text(), "Third.");

    let (status, err) = b
        .post(
            "/v1/threads/rt/messages",
            json!({"message": "x", "retry_of": "turn_0000"}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{err}");
    assert_eq!(error_code(&err), "unknown_turn");
}

#[tokio::test]
async fn a_retry_after_its_window_is_a_409_on_any_instance() {
    let (a, b, upstream) = two_instances("[turn]\nretry_window_secs = 0\n").await;
    let turn = first_turn(&a, &upstream, "late").await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (status, err) = b
        .post("/v1/chat", use_chat_retry("late", "again", "retryOf", &turn))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{err}");
    assert_eq!(error_code(&err), "retry_expired");
    assert_eq!(
        b.stored_messages("late", 2).await.as_array().unwrap().len(),
        2,
        "nothing of a refused retry is stored"
    );
}

#[tokio::test]
async fn a_killed_instances_turn_is_interrupted_after_its_lease() {
    let (survivor, upstream) = common::single_user_gateway_with(Backend::Postgres, FAST_LEASES).await;

    // The other instance is a process of its own, on the same database.
    let port = common::free_port();
    let dir = std::env::temp_dir().join(format!("promptgate-two-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("promptgate.toml");
    std::fs::write(
        &config,
        format!(
            "{EMBEDDED_DEFAULT}\n{FAST_LEASES}\n[[providers]]\nname = \"scripted\"\nkind = \"openai\"\n\
             base_url = \"{}\"\n\n[[models]]\nid = \"scripted\"\nname = \"Scripted\"\nprovider = \"scripted\"\n\
             upstream_model = \"upstream-model\"\n",
            upstream.base_url()
        ),
    )
    .unwrap();
    let mut doomed = common::Killed(
        Command::new(env!("CARGO_BIN_EXE_promptgate"))
            .arg("serve")
            .arg("--config")
            .arg(&config)
            .env_remove("PROMPTGATE_CONFIG")
            .env("DATABASE_URL", &survivor.database_url)
            .env("PROMPTGATE_LISTEN", format!("127.0.0.1:{port}"))
            .env("PROMPTGATE_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    let mut ready = false;
    for _ in 0..400 {
        if let Ok(res) = http.get(format!("{base}/readyz")).send().await
            && res.status().is_success()
        {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(ready, "the second instance did not become ready");

    upstream.push(Script::new().hang());
    let request = http
        .post(format!("{base}/v1/chat"))
        .json(&use_chat_body("orphan", "hello", "scripted"));
    let running = tokio::spawn(async move { request.send().await?.text().await });
    for _ in 0..400 {
        if upstream.calls() > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(upstream.calls(), 1, "the turn runs on the process");
    let (status, _) = survivor
        .post("/v1/chat", use_chat_body("orphan", "me too", "scripted"))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "the process holds the thread");
    // A reload on the survivor follows the turn through the database.
    let follower = {
        let http = survivor.http.clone();
        let url = survivor.url("/v1/chat/orphan/stream");
        tokio::spawn(async move {
            let res = http.get(url).send().await.unwrap();
            (res.status(), res.text().await.unwrap())
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;

    doomed.0.kill().unwrap();
    doomed.0.wait().unwrap();
    let _ = running.await;

    // Its lease runs out (2 s), and the survivor's heartbeat marks the answer interrupted.
    let mut status = Value::Null;
    for _ in 0..300 {
        let (_, messages) = survivor.get("/v1/threads/orphan/messages").await;
        status = messages[1]["status"].clone();
        if status == "interrupted" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status, "interrupted");
    // The follower is told the turn is gone, and its stream ends.
    let (code, body) = follower.await.unwrap();
    let followed = common::parse_sse(code, Default::default(), &body);
    assert_eq!(followed.status, StatusCode::OK);
    assert_eq!(followed.types().first(), Some(&"start"), "{:?}", followed.types());
    assert_eq!(
        followed.of_type("error")[0]["errorText"],
        promptgate_service::LOST_TURN_TEXT
    );
    assert!(followed.done);
    let idle = survivor
        .response(Method::GET, "/v1/chat/orphan/stream", None, None)
        .await;
    assert_eq!(idle.status(), StatusCode::NO_CONTENT);
    upstream.push(text(["Back."]));
    let sse = survivor.chat("orphan", "again").await;
    assert_eq!(sse.status, StatusCode::OK);
    assert_eq!(sse.text(), "Back.");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Statements run on `database_url` as an operator would, outside the gateways.
async fn run_sql(database_url: &str, statements: &[&str]) {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(database_url).await.unwrap();
    for statement in statements {
        sqlx::query(sqlx::AssertSqlSafe(*statement))
            .execute(&pool)
            .await
            .unwrap();
    }
    pool.close().await;
}

/// Cuts every instance's listening connection as soon as it is back, as while Postgres restarts:
/// no instance hears another's signals until the task is aborted.
fn keep_listeners_deaf(database_url: &str) -> tokio::task::JoinHandle<()> {
    let url = database_url.to_owned();
    tokio::spawn(async move {
        sqlx::any::install_default_drivers();
        let pool = sqlx::AnyPool::connect(&url).await.unwrap();
        loop {
            let cut = format!(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '{}'",
                promptgate_store::LISTENER_APPLICATION_NAME
            );
            let _ = sqlx::query(sqlx::AssertSqlSafe(cut)).execute(&pool).await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
}

#[tokio::test]
async fn a_resume_is_served_when_its_request_goes_unheard_and_the_frames_are_refused_a_while() {
    let (a, b, upstream) = two_instances("").await;
    let deaf = keep_listeners_deaf(&a.database_url);
    run_sql(
        &a.database_url,
        &[
            "CREATE FUNCTION refuse_frames() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
             RAISE EXCEPTION 'frames refused for a while'; END $$",
            "CREATE TRIGGER refuse_frames BEFORE INSERT ON turn_frames FOR EACH ROW \
             EXECUTE FUNCTION refuse_frames()",
        ],
    )
    .await;
    let (body, seen) = slow_answer_under_way(&a, &upstream, "unheard", "u", 3).await;
    let lift = async {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        run_sql(&a.database_url, &["DROP TRIGGER refuse_frames ON turn_frames"]).await;
    };
    let (remote, owner, ()) = tokio::join!(resume(&b, "unheard"), read_rest(body, seen), lift);
    deaf.abort();
    assert!(owner.done);
    assert_eq!(remote.status, StatusCode::OK);
    assert!(remote.of_type("error").is_empty(), "{:?}", remote.events);
    assert!(remote.done);
    assert_eq!(remote.text(), words("u"));
    assert_eq!(remote.events, owner.events);
}
