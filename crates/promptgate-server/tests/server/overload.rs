//! Past what the server carries: a send, completion or Messages request over the admission limit is
//! refused at once with 503 `overloaded` and `Retry-After`, nothing of it stored; health, metrics
//! and Stop still answer; a client flooding the server cannot keep another from being answered; and
//! the limit itself moves with the load (`promptgate_admission_limit`); sends that store their answers
//! also follow the database writer's queue (`promptgate_admission_store_limit`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use crate::common;

use common::{Backend, Gateway, NEWEST_UI_STREAM, error_code, scripted_config, use_chat_body};
use promptgate_llm::scripted::{Script, ScriptedUpstream, role_chunk, text};
use promptgate_server::config::admission::AdmissionConfig;
use promptgate_server::config::{AuthMode, Config};
use reqwest::{Method, StatusCode};
use serde_json::json;

/// A config over `upstream` whose admission limit stays at `limit` (it cannot move), and whose
/// upstream timeouts outlast any test, so a held answer holds.
fn fixed_limit(mode: AuthMode, upstream: &ScriptedUpstream, limit: usize) -> Config {
    let mut config = scripted_config(mode, &upstream.base_url());
    config.admission.initial_limit = limit;
    config.admission.min_limit = limit;
    config.admission.max_limit = Some(limit);
    patient(config)
}

fn patient(mut config: Config) -> Config {
    for provider in &mut config.providers {
        provider.first_byte_timeout_secs = Some(600);
        provider.idle_timeout_secs = Some(600);
    }
    config
}

/// A fresh scripted upstream and a single-user config over it whose run-queue limit cannot shrink:
/// on a busy test machine the server's work runs late by far more than it would in production, and
/// must not count as overload here.
async fn run_queue_ignored() -> (ScriptedUpstream, Config) {
    common::init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    let mut config = patient(scripted_config(AuthMode::SingleUser, &upstream.base_url()));
    config.admission.delay_tolerance_ms = 1000;
    (upstream, config)
}

/// A frontend's origin that the server allows.
const FRONTEND: &str = "https://chat.example";

/// An answer that starts and then never goes on: its turn keeps its place under the limit.
fn held() -> Script {
    Script::new().chunk(role_chunk()).hang()
}

/// Starts a send to a new thread and returns once its answer has begun (the turn is admitted).
async fn send(gw: &Gateway, thread: &str, token: Option<&str>) -> reqwest::Response {
    let mut req = gw
        .http
        .post(gw.url("/v1/chat"))
        .header(NEWEST_UI_STREAM.0, NEWEST_UI_STREAM.1)
        .json(&use_chat_body(thread, "Hello", "scripted"));
    if let Some(token) = token {
        req = req.bearer_auth(token);
    }
    req.send().await.unwrap()
}

/// A chat completion, which keeps no thread.
async fn complete(gw: &Gateway) -> reqwest::Response {
    gw.response(
        Method::POST,
        "/v1/chat/completions",
        Some(&json!({"model": "scripted", "messages": [{"role": "user", "content": "Hi"}]})),
        None,
    )
    .await
}

/// Asserts `res` is the gate's refusal: 503, `Retry-After`, the JSON error body with a request id.
async fn assert_refused(res: reqwest::Response) {
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    let retry_after = res.headers().get("retry-after").expect("no Retry-After");
    assert!(retry_after.to_str().unwrap().parse::<u64>().unwrap() >= 1);
    let body: serde_json::Value = res.json().await.unwrap();
    assert_eq!(error_code(&body), "overloaded", "{body}");
    assert!(
        !body["error"]["request_id"].as_str().unwrap_or("").is_empty(),
        "{body}"
    );
}

/// Waits until the upstream has had `calls` requests (a turn asks it once its answer has begun).
async fn upstream_called(upstream: &ScriptedUpstream, calls: usize) {
    for _ in 0..400 {
        if upstream.calls() >= calls {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the upstream had {} requests, not {calls}", upstream.calls());
}

#[tokio::test]
async fn past_the_limit_a_send_is_refused_at_once_and_nothing_of_it_is_stored() {
    common::init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    let mut config = fixed_limit(AuthMode::SingleUser, &upstream, 2);
    config.server.cors.allowed_origins = vec![FRONTEND.to_owned()];
    let gw = Gateway::start(Backend::Sqlite, config).await;
    upstream.push(held());
    upstream.push(held());
    let first = send(&gw, "held-1", None).await;
    let second = send(&gw, "held-2", None).await;
    assert_eq!(
        (first.status(), second.status()),
        (StatusCode::OK, StatusCode::OK)
    );
    upstream_called(&upstream, 2).await;

    assert_refused(send(&gw, "refused", None).await).await;
    let completion = complete(&gw).await;
    assert_refused(completion).await;
    // A frontend on an allowed origin can read the refusal, and the client's request id names it.
    let from_browser = gw
        .http
        .post(gw.url("/v1/chat/completions"))
        .header("origin", FRONTEND)
        .header("x-request-id", "refused-in-a-browser")
        .json(&json!({"model": "scripted", "messages": [{"role": "user", "content": "Hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(from_browser.headers()["access-control-allow-origin"], FRONTEND);
    assert_eq!(from_browser.headers()["x-request-id"], "refused-in-a-browser");
    let body: serde_json::Value = from_browser.json().await.unwrap();
    assert_eq!(body["error"]["request_id"], "refused-in-a-browser", "{body}");
    let messages = gw
        .http
        .post(gw.url("/v1/messages"))
        .header("x-request-id", "refused-claude")
        .json(
            &json!({"model": "scripted", "max_tokens": 64, "messages": [{"role": "user", "content": "Hi"}]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(messages.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(messages.headers().contains_key("retry-after"));
    assert_eq!(messages.headers()["request-id"], "refused-claude");
    let body: serde_json::Value = messages.json().await.unwrap();
    assert_eq!(
        body["error"]["type"], "overloaded_error",
        "Anthropic's shape: {body}"
    );
    assert_eq!(body["request_id"], "refused-claude", "{body}");

    assert_eq!(upstream.calls(), 2, "a refused request reached the model");
    let (status, _) = gw.get("/v1/threads/refused").await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "the refused send left a thread behind"
    );

    // What a saturated server must still answer.
    assert_eq!(gw.get("/healthz").await.0, StatusCode::OK);
    assert_eq!(gw.get("/readyz").await.0, StatusCode::OK);
    assert!(
        gw.metric("promptgate_admission_refused_total{reason=\"saturated\"}")
            .await
            >= 3.0
    );
    assert_eq!(gw.metric("promptgate_admission_in_flight").await, 2.0);
    let (status, stopped) = gw.post("/v1/chat/held-1/stop", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{stopped}");
    assert_eq!(stopped["stopped"], true);

    // The stopped turn's place is free once its answer has been written out.
    first.text().await.unwrap();
    upstream.push(text(["Now", " there is room."]));
    let admitted = send(&gw, "after-stop", None).await;
    assert_eq!(admitted.status(), StatusCode::OK);
    assert!(admitted.text().await.unwrap().contains("there is room"));
    drop(second);
}

#[tokio::test]
async fn one_user_flooding_the_server_does_not_keep_another_from_being_answered() {
    common::init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    let mut config = fixed_limit(AuthMode::Tokens, &upstream, 4);
    // The per-user cap would stop the flood by itself; the share under saturation is what is tested.
    config.limits.user_turns_in_flight = 100;
    config.limits.user_sends_per_minute = 1000;
    let gw = Gateway::start(Backend::Sqlite, config).await;
    let heavy = gw.store.create_user("heavy").await.unwrap();
    let heavy = gw.store.issue_token(&heavy.id).await.unwrap();
    let light = gw.store.create_user("light").await.unwrap();
    let light = gw.store.issue_token(&light.id).await.unwrap();

    let mut flood = Vec::new();
    for n in 0..4 {
        upstream.push(held());
        let res = send(&gw, &format!("flood-{n}"), Some(&heavy)).await;
        assert_eq!(res.status(), StatusCode::OK);
        flood.push(res);
    }
    assert_refused(send(&gw, "flood-more", Some(&heavy)).await).await;

    upstream.push(text(["Answered", " all the same."]));
    let answer = send(&gw, "light", Some(&light)).await;
    assert_eq!(answer.status(), StatusCode::OK);
    assert!(answer.text().await.unwrap().contains("all the same"));
    // The flood still holds more than its share, so its next send is refused again.
    assert_refused(send(&gw, "flood-again", Some(&heavy)).await).await;
    drop(flood);
}

#[tokio::test]
async fn the_limit_grows_while_it_is_in_use_and_work_runs_on_time() {
    let (upstream, mut config) = run_queue_ignored().await;
    config.admission.initial_limit = 4;
    config.admission.min_limit = 2;
    let gw = Gateway::start(Backend::Sqlite, config).await;
    assert_eq!(gw.metric("promptgate_admission_limit").await, 4.0);

    let mut running = Vec::new();
    for n in 0..3 {
        upstream.push(held());
        let res = send(&gw, &format!("busy-{n}"), None).await;
        assert_eq!(res.status(), StatusCode::OK);
        running.push(res);
    }
    for _ in 0..400 {
        if gw.metric("promptgate_admission_limit").await > 4.0 {
            drop(running);
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the limit never moved with three of its four places in use");
}

/// Holds SQLite's write lock on `url` from a connection of its own, as a long write elsewhere
/// would, until the connection is dropped or rolled back.
async fn hold_the_writer(url: &str) -> sqlx::AnyConnection {
    use sqlx::Connection;
    let mut conn = sqlx::AnyConnection::connect(url).await.unwrap();
    sqlx::query("BEGIN IMMEDIATE").execute(&mut conn).await.unwrap();
    conn
}

#[tokio::test]
async fn sends_waiting_for_a_stalled_database_writer_make_further_sends_refused_at_once() {
    let (upstream, mut config) = run_queue_ignored().await;
    config.admission.min_limit = 1;
    config.admission.store_delay_tolerance_ms = AdmissionConfig::default().store_delay_tolerance_ms;
    let gw = Gateway::start(Backend::Sqlite, config).await;
    for _ in 0..5 {
        upstream.push(text(["Stored", " after the wait."]));
    }
    let writer = hold_the_writer(&gw.database_url).await;

    // Three sends start and wait for the writer: the run queue is idle, the database's is not.
    let mut waiting = Vec::new();
    for n in 0..3 {
        let http = gw.http.clone();
        let url = gw.url("/v1/chat");
        let body = use_chat_body(&format!("waiting-{n}"), "Hello", "scripted");
        waiting.push(tokio::spawn(async move {
            let res = http
                .post(url)
                .header(NEWEST_UI_STREAM.0, NEWEST_UI_STREAM.1)
                .json(&body)
                .send()
                .await
                .unwrap();
            (res.status(), res.text().await.unwrap())
        }));
    }
    let mut limit = f64::MAX;
    for _ in 0..400 {
        limit = gw.metric("promptgate_admission_store_limit").await;
        if limit < 3.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        limit < 3.0,
        "the sends' limit stayed at {limit} while writes waited"
    );

    assert_refused(send(&gw, "refused", None).await).await;
    assert!(
        gw.metric("promptgate_admission_refused_total{reason=\"store\"}")
            .await
            >= 1.0
    );
    // A completion keeps no thread: the database's queue does not refuse it.
    let completion = complete(&gw).await;
    assert_eq!(completion.status(), StatusCode::OK);
    assert_eq!(gw.get("/healthz").await.0, StatusCode::OK);

    // Once the writer is free, the waiting sends are answered and stored, and sends get in again.
    drop(writer);
    for task in waiting {
        let (status, body) = task.await.unwrap();
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(body.contains("after the wait"), "{body}");
    }
    let (status, _) = gw.get("/v1/threads/waiting-0").await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = gw.get("/v1/threads/refused").await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "the refused send left a thread behind"
    );
    let admitted = send(&gw, "after", None).await;
    assert_eq!(admitted.status(), StatusCode::OK);
    assert!(admitted.text().await.unwrap().contains("after the wait"));
}
