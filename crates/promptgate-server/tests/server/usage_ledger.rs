//! `GET /v1/usage`: the ledger as users read it over HTTP (their own rows; everyone's for an admin
//! and the operator of a single-user deployment), as JSON and CSV, with the metrics by model; and a
//! process killed mid-turn, which leaves the tokens of the turn's finished steps once, not twice.

#![allow(clippy::unwrap_used, clippy::panic)]

use std::time::Duration;

use promptgate_llm::scripted::{
    Script, ScriptedUpstream, content_chunk, role_chunk, text, tool_calls, usage_chunk,
};
use promptgate_server::config::AuthMode;
use promptgate_store::{TokenCounts, UsageKind, UsageRecord};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::common::{
    self, Backend, Gateway, error_code, on_both_backends, scripted_config_with, use_chat_body,
};

const PRICES: &str = "[[prices]]\nmodel = \"scripted\"\ninput = 1.0\noutput = 4.0\n";

async fn usage(gw: &Gateway, query: &str, token: &str) -> (StatusCode, Value) {
    gw.call(Method::GET, &format!("/v1/usage?{query}"), None, Some(token))
        .await
}

/// The requests a usage report counts in all its groups.
fn requests_in(report: &Value) -> u64 {
    let groups = report["data"].as_array().unwrap();
    groups.iter().map(|r| r["requests"].as_u64().unwrap()).sum()
}

/// Waits until `token`'s user has `requests` requests in the ledger (a facade's row is written once
/// its stream ended, in the background), and returns the report by model.
async fn report_with(gw: &Gateway, token: &str, requests: u64) -> Value {
    for _ in 0..400 {
        let (status, body) = usage(gw, "group_by=model", token).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        if requests_in(&body) == requests {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the ledger never reached {requests} requests");
}

async fn each_user_reads_their_own_usage_as_json_or_csv(backend: Backend) {
    common::init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    let gw = Gateway::start(
        backend,
        scripted_config_with(AuthMode::Tokens, &upstream.base_url(), PRICES),
    )
    .await;
    let ada = gw.store.create_user("ada").await.unwrap();
    let ada_token = gw.store.issue_token(&ada.id).await.unwrap();
    let bob = gw.store.create_user("bob").await.unwrap();
    let bob_token = gw.store.issue_token(&bob.id).await.unwrap();

    // Ada sends in a thread (10 prompt tokens, 3 words); Bob asks the OpenAI facade.
    upstream.push(text(["Tides ", "are ", "daily."]));
    let res = gw
        .response(
            Method::POST,
            "/v1/chat",
            Some(&use_chat_body("t", "Tides?", "scripted")),
            Some(&ada_token),
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    res.text().await.unwrap();
    upstream.push(text(["Hello ", "there."]));
    let res = gw
        .response(
            Method::POST,
            "/v1/chat/completions",
            Some(&json!({"model": "scripted", "messages": [{"role": "user", "content": "Hi"}]})),
            Some(&bob_token),
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    res.text().await.unwrap();

    let mine = report_with(&gw, &ada_token, 1).await;
    assert_eq!(mine["object"], "usage");
    assert_eq!(mine["scope"], "own");
    let row = &mine["data"][0];
    assert_eq!(row["group"], "scripted");
    assert_eq!(
        (row["input_tokens"].as_u64(), row["output_tokens"].as_u64()),
        (Some(10), Some(3))
    );
    // 10 tokens at 1 and 3 at 4 per million.
    assert!((row["cost"].as_f64().unwrap() - 22e-6).abs() < 1e-12, "{row}");
    assert_eq!(row["unpriced_requests"], 0);
    let theirs = report_with(&gw, &bob_token, 1).await;
    assert_eq!(
        theirs["data"][0]["output_tokens"], 2,
        "Bob sees his request, not Ada's"
    );

    let (status, by_user) = usage(&gw, "group_by=user", &ada_token).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(by_user["data"].as_array().unwrap().len(), 1, "{by_user}");
    assert_eq!(by_user["data"][0]["group"], ada.id.as_str());
    let (_, by_day) = usage(&gw, "group_by=day", &ada_token).await;
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    assert_eq!(by_day["data"][0]["group"], today.as_str());
    let (_, before) = usage(&gw, "from=2020-01-01&to=2020-02-01", &ada_token).await;
    assert_eq!(
        before["data"],
        json!([]),
        "nothing in a range before the requests"
    );

    let res = gw
        .response(
            Method::GET,
            "/v1/usage?format=csv&group_by=model",
            None,
            Some(&ada_token),
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["content-type"], "text/csv; charset=utf-8");
    let csv = res.text().await.unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 2, "{csv}");
    assert!(
        lines[0].starts_with("group,requests,input_tokens,output_tokens,"),
        "{csv}"
    );
    assert!(lines[1].starts_with("scripted,1,10,3,"), "{csv}");

    // An admin reads everyone's.
    gw.store.set_admin(&bob.id, true).await.unwrap();
    let (_, all) = usage(&gw, "group_by=user", &bob_token).await;
    assert_eq!(all["scope"], "all", "{all}");
    assert_eq!(all["data"].as_array().unwrap().len(), 2, "{all}");
    // Each day by user, as the admin view's chart reads it; and the same as CSV.
    let (status, daily) = usage(&gw, "group_by=day&then_by=user", &bob_token).await;
    assert_eq!(status, StatusCode::OK, "{daily}");
    assert_eq!(daily["then_by"], "user");
    let mut rows: Vec<_> = daily["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["group"].clone(),
                r["subgroup"].clone(),
                r["output_tokens"].clone(),
            )
        })
        .collect();
    rows.sort_by_key(|r| r.2.as_u64());
    assert_eq!(
        rows,
        vec![
            (json!(today), json!(bob.id), json!(2)),
            (json!(today), json!(ada.id), json!(3)),
        ]
    );
    let (_, same) = usage(&gw, "group_by=day&then_by=day", &bob_token).await;
    assert_eq!(error_code(&same), "invalid_query");
    let res = gw
        .response(
            Method::GET,
            "/v1/usage?format=csv&group_by=day&then_by=model",
            None,
            Some(&bob_token),
        )
        .await;
    let csv = res.text().await.unwrap();
    assert!(csv.starts_with("group,subgroup,requests,"), "{csv}");
    assert!(csv.contains(&format!("\n{today},scripted,2,20,5,")), "{csv}");

    let (status, body) = usage(&gw, "from=yesterday", &ada_token).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&body), "invalid_query");
    let (status, body) = gw.get("/v1/usage").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");

    let metrics = gw.metrics_text().await;
    let input: f64 = metrics
        .lines()
        .filter(|line| {
            line.starts_with("promptgate_usage_tokens_total{")
                && line.contains("model=\"scripted\"")
                && line.contains("type=\"input\"")
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert_eq!(input, 20.0, "both requests' prompt tokens: {metrics}");
    assert!(
        metrics.contains("promptgate_usage_cost_total{model=\"scripted\"}"),
        "{metrics}"
    );
}

/// A completed Responses API request of `user`'s on the scripted model, recorded straight in the
/// store, with `input` prompt tokens and no key.
fn completed_row(user: &str, turn: &str, input: u64) -> UsageRecord {
    UsageRecord {
        user_id: user.to_owned(),
        turn_id: turn.to_owned(),
        key_id: None,
        thread_id: None,
        kind: UsageKind::Responses,
        model: "scripted".to_owned(),
        provider: "scripted".to_owned(),
        tokens: TokenCounts {
            input,
            ..TokenCounts::default()
        },
        tool_calls: 0,
        web_calls: 0,
        duration_ms: 5,
        status: "complete".to_owned(),
        cost: None,
    }
}

/// The one user of a single-user deployment is its operator and reads everyone's rows.
async fn the_operator_of_a_single_user_deployment_sees_everyone(backend: Backend) {
    let (gw, _upstream) = common::single_user_gateway(backend).await;
    let other = gw.store.create_user("guest").await.unwrap();
    let mut row = completed_row(&other.id, "turn_elsewhere", 7);
    row.key_id = Some("key_guest".to_owned());
    gw.store.record_usage(&row).await.unwrap();
    let (status, body) = gw.get("/v1/usage?group_by=key").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["scope"], "all");
    assert_eq!(body["data"][0]["group"], "key_guest");
    assert_eq!(body["data"][0]["input_tokens"], 7);
    assert_eq!(
        body["data"][0]["cost"],
        Value::Null,
        "no price table: the cost is unknown"
    );
    assert_eq!(body["data"][0]["unpriced_requests"], 1);
}

/// A report without `to` counts every row recorded before it, also after a burst: the store's
/// stamps increase by at least a millisecond each, so a burst puts them up to a second ahead of the
/// wall clock.
async fn a_report_without_an_end_counts_a_burst_recorded_just_before(backend: Backend) {
    const BURST: u64 = 150;
    let (gw, _upstream) = common::single_user_gateway(backend).await;
    let user = gw.store.create_user("burst").await.unwrap();
    for n in 0..BURST {
        let row = completed_row(&user.id, &format!("turn_burst_{n}"), 1);
        gw.store.record_usage(&row).await.unwrap();
    }
    let (status, body) = gw.get("/v1/usage?group_by=model").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(requests_in(&body), BURST, "{body}");
    assert_eq!(body["data"][0]["input_tokens"], BURST, "{body}");
}

/// What a streamed facade request's client reads before it leaves: the first words of the second
/// step's answer, after a tool step; the upstream then reports the step's tokens and hangs.
fn leaving_scripts(upstream: &ScriptedUpstream) {
    upstream.push(tool_calls(&[("c1", "no_such_tool", &["{}"])]));
    upstream.push(
        Script::new()
            .chunk(role_chunk())
            .chunk(content_chunk("Halfway"))
            .chunk(usage_chunk(90, 9))
            .hang(),
    );
}

/// A streamed facade request (chat completions, then Messages) whose client drops the connection
/// mid-answer leaves a ledger row: what the upstream reported until then, marked `disconnected`.
async fn a_facade_client_that_leaves_mid_stream_leaves_a_row(backend: Backend) {
    use futures::StreamExt;
    let (gw, upstream) = common::single_user_gateway(backend).await;
    let requests = [
        (
            "/v1/chat/completions",
            json!({"model": "scripted", "stream": true,
            "messages": [{"role": "user", "content": "go"}]}),
        ),
        (
            "/v1/messages",
            json!({"model": "scripted", "stream": true, "max_tokens": 100,
            "messages": [{"role": "user", "content": "go"}]}),
        ),
    ];
    for (n, (path, body)) in requests.into_iter().enumerate() {
        leaving_scripts(&upstream);
        let res = gw.response(Method::POST, path, Some(&body), None).await;
        assert_eq!(res.status(), StatusCode::OK, "{path}");
        let mut stream = res.bytes_stream();
        let mut seen = String::new();
        while !seen.contains("Halfway") {
            let bytes = stream.next().await.unwrap().unwrap();
            seen.push_str(&String::from_utf8_lossy(&bytes));
        }
        drop(stream); // the client leaves

        let expected = json!([{"group": "disconnected", "requests": n + 1,
            "input": 100 * (n + 1), "output": 14 * (n + 1)}]);
        let mut rows = Value::Null;
        for _ in 0..400 {
            let (_, report) = gw
                .call(Method::GET, "/v1/usage?group_by=status", None, None)
                .await;
            rows = report["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    json!({"group": r["group"], "requests": r["requests"],
                    "input": r["input_tokens"], "output": r["output_tokens"]})
                })
                .collect();
            if rows == expected {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        assert_eq!(
            rows, expected,
            "{path}: the tool step's and the cut step's tokens"
        );
    }
}

const FACADE_REQUESTS: usize = 24;

/// `FACADE_REQUESTS` chat completions at once; every one answered.
async fn completions_at_once(gw: &Gateway, upstream: &ScriptedUpstream) {
    for _ in 0..FACADE_REQUESTS {
        upstream.push(text(["one two"]));
    }
    let body = json!({"model": "scripted", "messages": [{"role": "user", "content": "hi"}]});
    let answered = futures::future::join_all(
        (0..FACADE_REQUESTS).map(|_| gw.call(Method::POST, "/v1/chat/completions", Some(body.clone()), None)),
    )
    .await;
    for (status, body) in answered {
        assert_eq!(status, StatusCode::OK, "{body}");
    }
}

/// The facades' rows of requests that end together reach the store together: every request has
/// its row, in fewer inserts than requests.
async fn facade_rows_that_end_together_are_written_together(backend: Backend) {
    let (gw, upstream) = common::single_user_gateway(backend).await;
    completions_at_once(&gw, &upstream).await;
    let mut report = Value::Null;
    for _ in 0..400 {
        (_, report) = gw.call(Method::GET, "/v1/usage?group_by=model", None, None).await;
        if report["data"][0]["requests"] == FACADE_REQUESTS {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(report["data"][0]["requests"], FACADE_REQUESTS, "{report}");
    assert_eq!(report["data"][0]["input_tokens"], 10 * FACADE_REQUESTS);
    // A statement is timed once its future completes, which can be after another connection has
    // read the rows it committed: the count is read once it has settled.
    let series = r#"promptgate_store_query_duration_seconds_count{op="ledger.insert"}"#;
    for _ in 0..400 {
        if gw.metric(series).await >= 1.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let inserts = gw.metric(series).await;
    assert!(
        (1.0..FACADE_REQUESTS as f64).contains(&inserts),
        "{inserts} inserts for {FACADE_REQUESTS} rows"
    );
}

on_both_backends!(
    facade_rows_that_end_together_are_written_together,
    each_user_reads_their_own_usage_as_json_or_csv,
    the_operator_of_a_single_user_deployment_sees_everyone,
    a_report_without_an_end_counts_a_burst_recorded_just_before,
    a_facade_client_that_leaves_mid_stream_leaves_a_row,
);

/// A process killed mid-turn: the ledger keeps the tokens of the steps that ended before, once; the
/// next turn adds its own row.
/// A usage row's requests, input tokens and output tokens.
fn counts(row: &Value) -> (Option<u64>, Option<u64>, Option<u64>) {
    (
        row["requests"].as_u64(),
        row["input_tokens"].as_u64(),
        row["output_tokens"].as_u64(),
    )
}

#[tokio::test]
async fn a_killed_process_leaves_its_finished_steps_in_the_ledger_once() {
    let (upstream, dir, port) =
        crate::nothing_lost::binary_setup("[turn]\ncheckpoint_interval_ms = 50\n").await;
    let server = crate::nothing_lost::start_binary(&dir, port, "first").await;
    let card = json!({"title": "Tide", "html": "<p>06:40</p>"}).to_string();
    upstream.push(tool_calls(&[("c1", "render_html", &[card.as_str()])]));
    upstream.push(
        Script::new()
            .chunk(role_chunk())
            .chunk(content_chunk("Drawn."))
            .chunk(usage_chunk(90, 9))
            .hang(),
    );
    let stream = crate::nothing_lost::send_in_background(port, "killed");
    crate::nothing_lost::wait_for_checkpoint(port, "killed", "Drawn").await;
    drop(server); // SIGKILL: nothing more is saved
    let _ = stream.await;

    let server = crate::nothing_lost::start_binary(&dir, port, "second").await;
    let http = reqwest::Client::new();
    let usage_by =
        |group: &str| common::json_of(http.get(format!("http://127.0.0.1:{port}/v1/usage?group_by={group}")));
    let left = usage_by("model").await;
    let row = &left["data"][0];
    assert_eq!(
        counts(row),
        (Some(1), Some(10), Some(5)),
        "the tool step's tokens, once: {left}"
    );
    let statuses = || async {
        usage_by("status").await["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["group"].clone(), r["input_tokens"].clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        statuses().await,
        vec![(json!("interrupted"), json!(10))],
        "the row of the turn whose answer start-up marked interrupted says so"
    );

    upstream.push(text(["Back ", "again."]));
    let res = crate::nothing_lost::chat_request(port, "killed", "Again")
        .send()
        .await
        .unwrap();
    assert!(res.text().await.unwrap().contains("again."));
    let after = usage_by("model").await;
    let row = &after["data"][0];
    assert_eq!(counts(row), (Some(2), Some(20), Some(7)), "{after}");
    assert_eq!(
        statuses().await,
        vec![(json!("complete"), json!(10)), (json!("interrupted"), json!(10))]
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A clean stop (SIGTERM) right after a burst of facade requests: every request's row is in the
/// ledger after the restart, none waiting in memory was lost.
#[tokio::test]
async fn a_clean_stop_writes_the_facade_rows_it_gathered() {
    use crate::nothing_lost::{binary_setup, start_binary};
    let (upstream, dir, port) = binary_setup("").await;
    let mut server = start_binary(&dir, port, "first").await;
    let gw_url = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    for _ in 0..FACADE_REQUESTS {
        upstream.push(text(["one two"]));
    }
    let body = json!({"model": "scripted", "messages": [{"role": "user", "content": "hi"}]});
    let answered = futures::future::join_all((0..FACADE_REQUESTS).map(|_| {
        http.post(format!("{gw_url}/v1/chat/completions"))
            .json(&body)
            .send()
    }))
    .await;
    for res in answered {
        assert_eq!(res.unwrap().status(), StatusCode::OK);
    }
    common::sigterm(&server.child);
    assert!(server.child.wait().unwrap().success());

    let _server = start_binary(&dir, port, "second").await;
    let report = common::json_of(http.get(format!("{gw_url}/v1/usage?group_by=status"))).await;
    assert_eq!(requests_in(&report), FACADE_REQUESTS as u64, "{report}");
}
