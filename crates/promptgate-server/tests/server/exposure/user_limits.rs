//! Per-user limits in tokens mode: sends per minute and turns at once, 429 with Retry-After.

use std::time::Duration;

use promptgate_llm::scripted::{Script, ScriptedUpstream, text};
use promptgate_server::config::{AuthMode, Config};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::common::{Backend, Gateway, error_code, init, scripted_config, use_chat_body};

async fn token_for(gw: &Gateway, name: &str) -> String {
    let user = gw.store.create_user(name).await.unwrap();
    gw.store.issue_token(&user.id).await.unwrap()
}

async fn send(gw: &Gateway, token: &str, path: &str, body: Value) -> reqwest::Response {
    gw.response(Method::POST, path, Some(&body), Some(token)).await
}

fn completion() -> Value {
    json!({"model": "scripted", "messages": [{"role": "user", "content": "hi"}]})
}

async fn assert_limited(res: reqwest::Response) {
    assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry_after: u64 = res
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("a Retry-After in seconds");
    assert!(retry_after >= 1);
    let body: Value = res.json().await.unwrap();
    assert_eq!(error_code(&body), "rate_limited");
}

/// A tokens-mode gateway over `upstream`, as `configure` leaves its config, and the tokens of its
/// two users, alice and bob.
async fn alice_and_bob(
    backend: Backend,
    upstream: &ScriptedUpstream,
    configure: impl FnOnce(&mut Config),
) -> (Gateway, String, String) {
    let mut config = scripted_config(AuthMode::Tokens, &upstream.base_url());
    configure(&mut config);
    let gw = Gateway::start(backend, config).await;
    let alice = token_for(&gw, "alice").await;
    let bob = token_for(&gw, "bob").await;
    (gw, alice, bob)
}

#[tokio::test]
async fn sends_past_the_per_minute_limit_get_429_with_retry_after_for_that_user_only() {
    init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    upstream.replay_by_default(text(["fine"]));
    let (gw, alice, bob) = alice_and_bob(Backend::Sqlite, &upstream, |config| {
        config.limits.user_sends_per_minute = 2;
    })
    .await;

    let first = send(&gw, &alice, "/v1/chat", use_chat_body("a1", "one", "scripted")).await;
    assert_eq!(first.status(), 200);
    let _ = first.text().await;
    let second = send(&gw, &alice, "/v1/chat/completions", completion()).await;
    assert_eq!(second.status(), 200);
    let _ = second.text().await;
    assert_limited(
        send(
            &gw,
            &alice,
            "/v1/threads/a1/messages",
            json!({"message": {"role": "user", "parts": []}}),
        )
        .await,
    )
    .await;
    assert_limited(send(&gw, &alice, "/v1/chat/completions", completion()).await).await;
    let calls = upstream.calls();

    let bobs = send(&gw, &bob, "/v1/chat/completions", completion()).await;
    assert_eq!(bobs.status(), 200, "another user is not limited by alice's sends");
    let _ = bobs.text().await;
    assert_eq!(
        upstream.calls(),
        calls + 1,
        "refused sends never reached the model"
    );

    // Reads are not sends.
    let (status, _) = gw
        .call(reqwest::Method::GET, "/v1/threads", None, Some(&alice))
        .await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_user_with_a_turn_running_at_the_limit_gets_429_until_it_ends() {
    init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    upstream.push(Script::new().hang());
    upstream.replay_by_default(text(["next"]));
    let (gw, alice, bob) = alice_and_bob(Backend::Postgres, &upstream, |config| {
        config.limits.user_turns_in_flight = 1;
    })
    .await;

    let running = {
        let http = gw.http.clone();
        let url = gw.url("/v1/chat");
        let alice = alice.clone();
        tokio::spawn(async move {
            let res = http
                .post(url)
                .bearer_auth(alice)
                .json(&use_chat_body("long", "wait", "scripted"))
                .send()
                .await
                .unwrap();
            res.text().await.unwrap()
        })
    };
    while upstream.calls() == 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_limited(send(&gw, &alice, "/v1/chat", use_chat_body("other", "two", "scripted")).await).await;
    let bobs = send(&gw, &bob, "/v1/chat/completions", completion()).await;
    assert_eq!(bobs.status(), 200);
    let _ = bobs.text().await;

    let stop = gw
        .response(Method::POST, "/v1/chat/long/stop", None, Some(&alice))
        .await;
    assert!(stop.status().is_success(), "{}", stop.status());
    let _ = tokio::time::timeout(Duration::from_secs(60), running)
        .await
        .unwrap();
    let mut after = send(&gw, &alice, "/v1/chat/completions", completion()).await;
    // The slot is given back when the stopped answer's last byte has gone out; the client may see
    // its stream end a moment before the server has dropped the response.
    for _ in 0..100 {
        if after.status() != StatusCode::TOO_MANY_REQUESTS {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        after = send(&gw, &alice, "/v1/chat/completions", completion()).await;
    }
    assert_eq!(after.status(), 200);
}
