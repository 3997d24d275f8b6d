//! Budgets and token limits set by an admin: a send past one gets 429 naming the limit and when it
//! resets, a send near one carries a warning, and the counts are shared by every instance.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use crate::common::{self, Backend, Gateway, NEWEST_UI_STREAM, Sse, error_code, parse_sse, use_chat_body};
use crate::keys_api::{Pair, pair, pair_with};
use promptgate_llm::scripted::{ScriptedUpstream, text};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// The scripted upstream reports 10 prompt tokens and one per word: this answer costs 13.
const THREE_WORDS: &str = "one two three";

async fn send(gw: &Gateway, token: &str, thread: &str) -> Sse {
    let res = gw
        .http
        .post(gw.url("/v1/chat"))
        .bearer_auth(token)
        .header(NEWEST_UI_STREAM.0, NEWEST_UI_STREAM.1)
        .json(&use_chat_body(thread, "hi", "scripted"))
        .send()
        .await
        .unwrap();
    let (status, headers) = (res.status(), res.headers().clone());
    let body = res.text().await.unwrap();
    if status.is_success() {
        parse_sse(status, headers, &body)
    } else {
        Sse {
            status,
            headers,
            events: vec![serde_json::from_str(&body).unwrap()],
            done: false,
            comments: 0,
        }
    }
}

fn warnings(sse: &Sse) -> Value {
    sse.of_type("start")[0]["messageMetadata"]["budgetWarnings"].clone()
}

fn retry_after(sse: &Sse) -> u64 {
    sse.headers["retry-after"].to_str().unwrap().parse().unwrap()
}

/// Waits for a window of `length_ms` to begin (windows start at multiples of it since the epoch),
/// so the steps after it run within one window.
async fn at_window_start(length_ms: i64) {
    let now = chrono::Utc::now().timestamp_millis();
    tokio::time::sleep(Duration::from_millis(
        (length_ms - now.rem_euclid(length_ms)) as u64 + 20,
    ))
    .await;
}

/// Returns at once when the current window of `length_ms` has `need_ms` left, else waits for the
/// next one.
async fn with_window_left(length_ms: i64, need_ms: i64) {
    let now = chrono::Utc::now().timestamp_millis();
    if length_ms - now.rem_euclid(length_ms) < need_ms {
        at_window_start(length_ms).await;
    }
}

async fn user_id(gw: &Gateway, token: &str) -> String {
    gw.store.user_by_token(token).await.unwrap().unwrap().id
}

async fn a_budget_stops_the_next_send_and_resets_with_the_period(backend: Backend) {
    let Pair {
        a,
        b,
        upstream,
        admin,
        ada,
    } = pair(backend).await;
    let ada_id = user_id(&a, &ada).await;
    let period_secs = 4;
    let (status, budget) = a
        .put_as(
            &format!("/v1/admin/users/{ada_id}/budget"),
            json!({"period_tokens": 16, "period_secs": period_secs}),
            &admin,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{budget}");
    assert_eq!(budget["period_tokens"], 16);

    at_window_start(period_secs * 1000).await;
    upstream.push(text([THREE_WORDS]));
    let first = send(&a, &ada, "t1").await;
    assert_eq!(first.status, StatusCode::OK);
    assert!(warnings(&first).is_null(), "nothing spent yet");
    // 13 of 16 spent: the next send still goes, warned, on the other instance.
    upstream.push(text([THREE_WORDS]));
    let second = send(&b, &ada, "t2").await;
    assert_eq!(second.status, StatusCode::OK);
    let warned = warnings(&second);
    assert_eq!(
        (warned[0]["limit"].as_str(), warned[0]["used"].as_i64()),
        (Some("period_tokens"), Some(13)),
        "{warned}"
    );
    let stored = b.stored_messages_as("t2", 2, &ada).await;
    let answer = stored
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap();
    assert_eq!(
        answer["metadata"]["budgetWarnings"], warned,
        "the stored answer keeps the warning"
    );

    // 26 of 16: the third is refused on either instance, before the model is asked.
    let calls = upstream.calls();
    let third = send(&a, &ada, "t3").await;
    assert_eq!(third.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(error_code(&third.events[0]), "budget_exceeded");
    assert!(
        common::error_message(&third.events[0]).contains("resets at"),
        "{:?}",
        third.events
    );
    assert!((1..=period_secs as u64).contains(&retry_after(&third)));
    let (status, err) = a
        .post_as(
            "/v1/chat/completions",
            json!({"model": "scripted", "messages": [{"role": "user", "content": "hi"}]}),
            &ada,
        )
        .await;
    assert_eq!(
        (status, error_code(&err)),
        (StatusCode::TOO_MANY_REQUESTS, "budget_exceeded")
    );
    assert_eq!(upstream.calls(), calls, "a refused send never reaches the model");
    upstream.push(text([THREE_WORDS]));
    assert_eq!(
        send(&b, &admin, "other").await.status,
        StatusCode::OK,
        "another user is not limited"
    );

    assert_the_next_period_starts_from_nothing(&b, &upstream, &ada, period_secs, "t4").await;
}

/// Waits for the next budget period of `period_secs` and sends once more as `token`: answered,
/// with no warning.
async fn assert_the_next_period_starts_from_nothing(
    gw: &Gateway,
    upstream: &ScriptedUpstream,
    token: &str,
    period_secs: i64,
    thread: &str,
) {
    at_window_start(period_secs * 1000).await;
    upstream.push(text([THREE_WORDS]));
    let fresh = send(gw, token, thread).await;
    assert_eq!(fresh.status, StatusCode::OK, "{:?}", fresh.events);
    assert!(warnings(&fresh).is_null());
}

common::on_both_backends!(a_budget_stops_the_next_send_and_resets_with_the_period);

/// The scripted model at 0.1 a token in and out (THREE_WORDS costs 1.3), and an unpriced one.
const PRICED: &str = "[[prices]]\nmodel = \"scripted\"\ninput = 100000.0\noutput = 100000.0\n\n\
     [[models]]\nid = \"unpriced\"\nname = \"Unpriced\"\nprovider = \"scripted\"\nupstream_model = \"m\"\n";

async fn send_to(gw: &Gateway, token: &str, thread: &str, model: &str) -> (StatusCode, Value) {
    gw.post_as("/v1/chat", use_chat_body(thread, "hi", model), token)
        .await
}

async fn a_money_budget_stops_the_next_send_and_resets_with_the_period(backend: Backend) {
    let Pair {
        a,
        b,
        upstream,
        admin,
        ada,
    } = pair_with(backend, PRICED).await;
    let ada_id = user_id(&a, &ada).await;
    let period_secs = 4;
    let path = format!("/v1/admin/users/{ada_id}/budget");
    let (status, err) = a.put_as(&path, json!({"period_cost": 1.6}), &admin).await;
    assert_eq!(
        (status, error_code(&err)),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_body"),
        "a money budget needs its period"
    );
    let (status, budget) = a
        .put_as(
            &path,
            json!({"period_cost": 1.6, "period_secs": period_secs}),
            &admin,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{budget}");
    let (_, read) = b.call(Method::GET, &path, None, Some(&admin)).await;
    assert_eq!(
        (read["period_cost"].as_f64(), read["period_tokens"].as_i64()),
        (Some(1.6), None),
        "{read}"
    );

    // A model without a price cannot be counted in money: refused before anything is stored.
    let calls = upstream.calls();
    let (status, err) = send_to(&a, &ada, "free", "unpriced").await;
    assert_eq!(
        (status, error_code(&err)),
        (StatusCode::FORBIDDEN, "unpriced_model"),
        "{err}"
    );
    assert!(
        err["error"]["message"].as_str().unwrap().contains("unpriced"),
        "{err}"
    );
    let (status, _) = a
        .call(Method::GET, "/v1/threads/free/messages", None, Some(&ada))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "the refused send left no thread");
    assert_eq!(upstream.calls(), calls);

    at_window_start(period_secs * 1000).await;
    upstream.push(text([THREE_WORDS]));
    let first = send(&a, &ada, "m1").await;
    assert_eq!(first.status, StatusCode::OK);
    assert!(warnings(&first).is_null(), "nothing spent yet");
    a.stored_messages_as("m1", 2, &ada).await;
    // 1.3 of 1.6 spent: the next send goes, warned in money, on the other instance.
    upstream.push(text([THREE_WORDS]));
    let second = send(&b, &ada, "m2").await;
    assert_eq!(second.status, StatusCode::OK);
    let warned = warnings(&second);
    assert_eq!(
        (
            warned[0]["limit"].as_str(),
            warned[0]["used"].as_f64(),
            warned[0]["max"].as_f64()
        ),
        (Some("period_cost"), Some(1.3), Some(1.6)),
        "{warned}"
    );
    b.stored_messages_as("m2", 2, &ada).await;

    // 2.6 of 1.6: refused, in a thread and through a facade, before the model is asked.
    let calls = upstream.calls();
    let third = send(&a, &ada, "m3").await;
    assert_eq!(third.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(error_code(&third.events[0]), "cost_budget_exceeded");
    let message = third.events[0]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("money budget") && message.contains("resets at"),
        "{message}"
    );
    assert!((1..=period_secs as u64).contains(&retry_after(&third)));
    let (status, err) = b
        .post_as(
            "/v1/messages",
            json!({"model": "scripted", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}),
            &ada,
        )
        .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{err}");
    assert_eq!(upstream.calls(), calls, "a refused send never reaches the model");

    assert_the_next_period_starts_from_nothing(&b, &upstream, &ada, period_secs, "m4").await;
}

common::on_both_backends!(a_money_budget_stops_the_next_send_and_resets_with_the_period);

async fn a_tokens_per_minute_limit_holds_across_two_instances(backend: Backend) {
    let Pair {
        a,
        b,
        upstream,
        admin,
        ada,
    } = pair(backend).await;
    let (status, key) = a.post_as("/v1/keys", json!({"name": "script"}), &ada).await;
    assert_eq!(status, StatusCode::CREATED);
    let (key_id, secret) = (key["id"].as_str().unwrap(), key["secret"].as_str().unwrap());
    let path = format!("/v1/admin/keys/{key_id}/budget");
    let (status, err) = a.put_as(&path, json!({"tokens_per_minute": 10}), &ada).await;
    assert_eq!((status, error_code(&err)), (StatusCode::FORBIDDEN, "admin_only"));
    let (status, err) = a.put_as(&path, json!({"tokens_per_minute": 0}), &admin).await;
    assert_eq!(
        (status, error_code(&err)),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_body")
    );
    let (status, budget) = a.put_as(&path, json!({"tokens_per_minute": 10}), &admin).await;
    assert_eq!(status, StatusCode::OK, "{budget}");
    let (_, read) = b.call(Method::GET, &path, None, Some(&admin)).await;
    assert_eq!(read["tokens_per_minute"], 10);

    // Within one minute: 13 tokens on one instance spend the key's minute on the other.
    with_window_left(60_000, 20_000).await;
    upstream.push(text([THREE_WORDS]));
    assert_eq!(send(&a, secret, "k1").await.status, StatusCode::OK);
    a.stored_messages_as("k1", 2, secret).await;
    let refused = send(&b, secret, "k2").await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(error_code(&refused.events[0]), "tokens_per_minute_exceeded");
    assert!((1..=60).contains(&retry_after(&refused)), "{:?}", refused.headers);
    // The limit is the key's: the user's other key still sends.
    upstream.push(text([THREE_WORDS]));
    assert_eq!(send(&b, &ada, "k3").await.status, StatusCode::OK);
}

common::on_both_backends!(a_tokens_per_minute_limit_holds_across_two_instances);

impl Gateway {
    /// Waits until the thread's answer is stored (the turn settled its budget in the same writer).
    async fn stored_messages_as(&self, thread: &str, expected: usize, token: &str) -> Value {
        for _ in 0..200 {
            let (_, messages) = self
                .get_as(&format!("/v1/threads/{thread}/messages"), token)
                .await;
            if messages
                .as_array()
                .is_some_and(|m| m.len() >= expected && m.iter().all(|m| m["status"] != "streaming"))
            {
                return messages;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("thread {thread} never had {expected} stored messages");
    }
}

/// A chat completion by `token`: its status and body.
async fn complete(gw: &Gateway, token: &str) -> (StatusCode, Value) {
    let body = json!({"model": "scripted", "messages": [{"role": "user", "content": "hi"}]});
    gw.call(Method::POST, "/v1/chat/completions", Some(body), Some(token))
        .await
}

/// The budget queries this process ran so far (both instances of a pair share the metrics).
async fn budget_reads(gw: &Gateway) -> f64 {
    gw.metric(r#"promptgate_store_query_duration_seconds_count{op="budgets.limits"}"#)
        .await
}

/// A request by a spender without limits reads no budget; once an admin sets one (on the other
/// instance on Postgres; SQLite serves one instance), the next request counts against it and the
/// one after is refused.
async fn a_spender_without_limits_reads_no_budget_until_one_is_set_on_another_instance(backend: Backend) {
    let on_postgres = matches!(backend, Backend::Postgres);
    let Pair {
        a,
        b,
        upstream,
        admin,
        ada,
    } = pair(backend).await;
    let b = if on_postgres { &b } else { &a };
    for _ in 0..3 {
        upstream.push(text([THREE_WORDS]));
        let (status, body) = complete(b, &ada).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    assert_eq!(budget_reads(b).await, 0.0, "no budget is read for ada");

    let path = format!("/v1/admin/users/{}/budget", user_id(&a, &ada).await);
    let (status, body) = a.put_as(&path, json!({"tokens_per_minute": 10}), &admin).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    with_window_left(60_000, 20_000).await;
    // The other instance learns of the change from the database's notification, moments later:
    // from then on its requests read the budget.
    let reads_before = budget_reads(b).await;
    let mut learnt = false;
    for _ in 0..200 {
        upstream.push(text([THREE_WORDS]));
        let (status, body) = complete(b, &ada).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        if budget_reads(b).await > reads_before {
            learnt = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(learnt, "the instance never read the budget set on the other");
    // That request's 13 tokens were counted before its answer: the next request is refused.
    let (status, body) = complete(b, &ada).await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::TOO_MANY_REQUESTS, "tokens_per_minute_exceeded")
    );
    assert!(budget_reads(b).await >= 2.0);
}

common::on_both_backends!(a_spender_without_limits_reads_no_budget_until_one_is_set_on_another_instance);
