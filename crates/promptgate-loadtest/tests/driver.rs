//! Keeps the load driver working in debug builds: short, low-rate runs against real loopback servers.
//! Nothing here asserts a timing; the numbers belong to docs/benchmarks.md.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use promptgate_llm::scripted::{Script, ScriptedUpstream, rendered, text};
use promptgate_loadtest::LoadError;
use promptgate_loadtest::load::{Target, drive};
use promptgate_loadtest::scenario::{Options, Scenario, run};
use promptgate_loadtest::wire::{BenchUpstream, Pacing};

fn completion(url: String, streamed: bool) -> Target {
    let body = Bytes::from(format!(
        r#"{{"model":"m","messages":[{{"role":"user","content":"hi"}}],"stream":{streamed}}}"#
    ));
    Target::new(&url, Arc::new(move |_| body.clone()), streamed).unwrap()
}

#[tokio::test]
async fn every_scheduled_request_is_sent_and_answered() {
    promptgate_loadtest::init_tls();
    let upstream = ScriptedUpstream::start().await.unwrap();
    upstream.replay_by_default(text(["Hello", " there."]));
    let target = completion(format!("{}/chat/completions", upstream.base_url()), true);

    let result = drive(&target, 20.0, Duration::from_secs(1)).await.unwrap();

    assert_eq!(result.sent, 20);
    assert_eq!(result.ok, 20, "first error: {:?}", result.first_error);
    assert_eq!(upstream.calls(), 20);
    assert!(result.total.p50 >= result.first_byte.p50);
}

#[tokio::test]
async fn a_target_on_two_servers_sends_to_each_in_turn() {
    promptgate_loadtest::init_tls();
    let first = ScriptedUpstream::start().await.unwrap();
    let second = ScriptedUpstream::start().await.unwrap();
    for upstream in [&first, &second] {
        upstream.replay_by_default(text(["Hello", " there."]));
    }
    let target = completion(format!("{}/chat/completions", first.base_url()), true)
        .and(&format!("{}/chat/completions", second.base_url()))
        .unwrap();

    let result = drive(&target, 20.0, Duration::from_secs(1)).await.unwrap();

    assert_eq!(result.ok, 20, "first error: {:?}", result.first_error);
    assert_eq!((first.calls(), second.calls()), (10, 10));
    let elsewhere = target.clone().and(&format!("{}/v1/other", second.base_url()));
    assert!(elsewhere.is_err(), "every server answers the same path");
}

#[tokio::test]
async fn json_answers_are_read_to_their_length_on_kept_connections() {
    let upstream = ScriptedUpstream::start().await.unwrap();
    upstream.replay_by_default(text(["Hello", " there."]));
    let target = completion(format!("{}/chat/completions", upstream.base_url()), false);

    let result = drive(&target, 20.0, Duration::from_secs(1)).await.unwrap();

    assert_eq!(result.ok, 20, "first error: {:?}", result.first_error);
    assert_eq!(upstream.calls(), 20);
    assert!(
        upstream.connections() < 20,
        "one request at a time reuses connections: {} for 20 requests",
        upstream.connections()
    );
}

#[tokio::test]
async fn the_bench_upstream_answers_streams_and_json_with_the_scripted_bytes() {
    promptgate_loadtest::init_tls();
    let (sse, completion_json) = rendered(&text(["Hello", " from", " the", " bench."])).unwrap();
    let upstream = BenchUpstream::start(&sse, &completion_json).await.unwrap();
    let url = format!("{}/chat/completions", upstream.base_url());

    let streamed = drive(&completion(url.clone(), true), 10.0, Duration::from_secs(1))
        .await
        .unwrap();
    let whole = drive(&completion(url, false), 10.0, Duration::from_secs(1))
        .await
        .unwrap();
    assert_eq!(
        (streamed.ok, whole.ok),
        (10, 10),
        "{:?} {:?}",
        streamed.first_error,
        whole.first_error
    );
    assert_eq!(upstream.calls(), 20);

    // What it says is what an OpenAI client reads: the same answer both ways.
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let sent = |stream: bool| {
        http.post(format!("{}/chat/completions", upstream.base_url()))
            .json(&serde_json::json!({"model": "m", "messages": [], "stream": stream}))
            .send()
    };
    let body: serde_json::Value = sent(false).await.unwrap().json().await.unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "Hello from the bench.");
    let events = sent(true).await.unwrap().text().await.unwrap();
    assert!(events.trim_end().ends_with("data: [DONE]"), "{events}");
    let text: String = events
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<serde_json::Value>(d).ok())
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(text, "Hello from the bench.");
}

#[tokio::test]
async fn refusals_and_cut_streams_count_as_errors_with_their_reason() {
    promptgate_loadtest::init_tls();
    let upstream = ScriptedUpstream::start().await.unwrap();
    upstream.push(Script::status(503, "overloaded"));
    upstream.push(text(["cut"]).cut());
    upstream.replay_by_default(text(["fine"]));
    let target = completion(format!("{}/chat/completions", upstream.base_url()), true);

    let result = drive(&target, 4.0, Duration::from_secs(1)).await.unwrap();

    assert_eq!(result.sent, 4);
    assert_eq!(result.errors, 2);
    let first = result.first_error.unwrap();
    assert!(first.contains("503") && first.contains("overloaded"), "{first}");
}

#[tokio::test]
async fn a_stream_without_its_end_marker_is_an_error() {
    promptgate_loadtest::init_tls();
    let upstream = ScriptedUpstream::start().await.unwrap();
    let mut unfinished = text(["no end"]);
    unfinished.steps.pop();
    upstream.replay_by_default(unfinished);
    let target = completion(format!("{}/chat/completions", upstream.base_url()), true);

    let result = drive(&target, 2.0, Duration::from_secs(1)).await.unwrap();

    assert_eq!(result.errors, 2);
    assert!(result.first_error.unwrap().contains("[DONE]"));
}

#[tokio::test]
async fn rates_that_are_not_positive_or_too_large_are_refused() {
    promptgate_loadtest::init_tls();
    let target = completion("http://127.0.0.1:9/".to_owned(), false);
    let zero = drive(&target, 0.0, Duration::from_secs(1)).await.unwrap_err();
    assert!(matches!(zero, LoadError::BadRate(_)), "{zero}");
    let huge = drive(&target, 1e9, Duration::from_secs(1)).await.unwrap_err();
    assert!(matches!(huge, LoadError::TooManyRequests { .. }), "{huge}");
}

#[tokio::test]
async fn the_postgres_scenario_without_a_url_says_how_to_give_one() {
    let options = Options {
        scenarios: vec![Scenario::SendPostgres],
        rate: Some(1.0),
        duration: Duration::from_secs(1),
        rounds: 1,
        held_turns: 1,
        burst: Default::default(),
        driver_workers: 1,
        warmup: Duration::ZERO,
        postgres_url: None,
        capacity_rates: Vec::new(),
        capacity_step: Duration::from_secs(1),
        p99_bound: Duration::from_millis(10),
        gateway: Default::default(),
        sustained: false,
        stream: Default::default(),
        scale: Default::default(),
        context_window: 128_000,
        thread_sizes: Vec::new(),
        overload: Default::default(),
    };
    let error = run(&options).await.unwrap_err();
    assert!(
        error.to_string().contains("PROMPTGATE_TEST_POSTGRES_URL"),
        "{error}"
    );
}

/// The cells of the report's last table row that starts with `prefix` (cell 0 is the empty text
/// before the leading `|`).
fn table_row(stdout: &str, prefix: &str) -> Vec<String> {
    stdout
        .lines()
        .rfind(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no row starting with {prefix} in:\n{stdout}"))
        .split('|')
        .map(|c| c.trim().to_owned())
        .collect()
}

/// Asserts that the report's row starting with `prefix` answered all ten requests without an error.
fn assert_ten_answered(stdout: &str, prefix: &str) {
    let cells = table_row(stdout, prefix);
    assert_eq!(cells[5], "10", "every request answered: {cells:?}");
    assert_eq!(cells[6], "0", "no errors: {cells:?}");
}

/// Runs the driver binary without Postgres and returns its report; it must succeed.
fn run_binary(args: &[&str]) -> String {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_promptgate-loadtest"))
        .args(args)
        .env_remove("PROMPTGATE_TEST_POSTGRES_URL")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    stdout
}

/// The whole binary: gateway child process, facade and send scenarios, the Markdown report.
#[test]
fn the_binary_measures_the_facade_and_a_send_through_a_real_gateway() {
    let stdout = run_binary(&[
        "--scenario",
        "facade-json",
        "--scenario",
        "send-sqlite",
        "--scenario",
        "held-turns",
        "--held-turns",
        "5",
        "--rate",
        "20",
        "--duration",
        "0.5",
        // A warm-up before each run: sends after it must still open new threads.
        "--warmup",
        "0.25",
        // The gateway on a one-worker runtime still serves both scenarios.
        "--gateway-workers",
        "1",
        "--rounds",
        "2",
    ]);
    for scenario in ["facade JSON", "send, SQLite"] {
        for path in ["direct", "gateway"] {
            assert_ten_answered(&stdout, &format!("| {scenario} | {path} |"));
        }
    }
    assert!(stdout.contains("Added by the gateway"), "{stdout}");
    assert!(
        stdout.contains("runtime worker threads 1, CPUs all. Driver (client and upstream): 1 worker")
            && stdout.contains("Each comparison ran in 2 rounds"),
        "the report says where the gateway ran:\n{stdout}"
    );
    assert!(stdout.contains("| SQLite |"), "memory row missing:\n{stdout}");
    let held = stdout
        .lines()
        .find(|l| l.starts_with("| 5 |"))
        .unwrap_or_else(|| panic!("no held-turns row in:\n{stdout}"));
    // The run itself fails unless all five turns reached the upstream; the row says how much each cost.
    let per_turn = held.split('|').nth(4).unwrap().trim();
    assert!(per_turn.parse::<f64>().is_ok(), "{held}");
}

/// The scale scenario: every point of both curves measured through a real gateway, with real MCP
/// servers and a filled project.
#[test]
fn the_binary_measures_a_send_for_many_mcp_servers_and_a_big_project() {
    let stdout = run_binary(&[
        "--scenario",
        "scale-mcp",
        "--scale-sends",
        "2",
        "--scale-pace-ms",
        "20",
        "--scale-max-threads",
        "100",
    ]);
    for has in [
        "0 MCP servers",
        "10 MCP servers",
        "50 MCP servers",
        "a project of 100 chats",
    ] {
        let cells = table_row(&stdout, &format!("| SQLite | {has} |"));
        let p50: f64 = cells[3].parse().unwrap();
        assert!(p50 > 0.0, "{cells:?}");
    }
    assert!(
        !stdout.contains("a project of 1000 chats"),
        "points past --scale-max-threads are left out:\n{stdout}"
    );
}

/// Runs an API's JSON and stream scenarios at a low rate and checks that every request of both paths
/// was answered (a stream only when it ended with that API's own last event).
fn measures_every_request_whole_and_streamed(api: &str) {
    let stdout = run_binary(&[
        "--scenario",
        &format!("{api}-json"),
        "--scenario",
        &format!("{api}-stream"),
        "--rate",
        "20",
        "--duration",
        "0.5",
        "--warmup",
        "0",
    ]);
    for scenario in [format!("{api} JSON"), format!("{api} stream")] {
        for path in ["direct", "gateway"] {
            assert_ten_answered(&stdout, &format!("| {scenario} | {path} |"));
        }
    }
}

/// The Responses API beside the chat facade: its streams end with `response.completed`, not
/// `[DONE]`, and count as answered only with it.
#[test]
fn the_binary_measures_the_responses_api_whole_and_streamed() {
    measures_every_request_whole_and_streamed("responses");
}

/// The Messages API beside the chat facade: its streams end with Anthropic's `message_stop` event,
/// not `[DONE]`, and count as answered only with it.
#[test]
fn the_binary_measures_the_messages_api_whole_and_streamed() {
    measures_every_request_whole_and_streamed("messages");
}

#[tokio::test]
async fn a_paced_upstream_sends_each_event_in_its_own_frame_on_its_schedule() {
    promptgate_loadtest::init_tls();
    let (sse, completion_json) = rendered(&text(["one ", "two ", "three"])).unwrap();
    let pacing = Pacing {
        first: Duration::from_millis(40),
        every: Duration::from_millis(15),
    };
    let upstream = BenchUpstream::start_paced(&sse, &completion_json, pacing)
        .await
        .unwrap();
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let response = http
        .post(format!("{}/chat/completions", upstream.base_url()))
        .json(&serde_json::json!({"model": "m", "messages": [], "stream": true}))
        .send()
        .await
        .unwrap();
    let mut frames = Vec::new();
    let mut body = response.bytes_stream();
    while let Some(frame) = futures::StreamExt::next(&mut body).await {
        frames.push(frame.unwrap());
    }
    // The same bytes as the one-frame upstream, one SSE event per frame: role, three words,
    // the finish, and [DONE]; sleeping between frames keeps them apart on the wire.
    let events = sse
        .split(|b| *b == b'\n')
        .filter(|l| l.starts_with(b"data: "))
        .count();
    assert_eq!(frames.len(), events, "{frames:?}");
    assert_eq!(frames.concat(), sse.to_vec());
    assert!(frames.iter().all(|f| f.ends_with(b"\n\n")));

    // A run against it takes at least the schedule: the first delay and the spacing after it.
    let target = completion(format!("{}/chat/completions", upstream.base_url()), true);
    let result = drive(&target, 5.0, Duration::from_secs(1)).await.unwrap();
    assert_eq!(result.ok, 5, "first error: {:?}", result.first_error);
    let schedule = pacing.first + pacing.every * (events as u32 - 1);
    assert!(result.first_byte.p50 >= pacing.first, "{:?}", result.first_byte);
    assert!(result.total.p50 >= schedule, "{:?}", result.total);
    // JSON answers are not paced.
    let whole = drive(
        &completion(format!("{}/chat/completions", upstream.base_url()), false),
        5.0,
        Duration::from_secs(1),
    )
    .await
    .unwrap();
    assert_eq!(whole.ok, 5);
}

/// Both facade paths (streamed and JSON) at 20 requests a second, for half a second after 0.2 s
/// of warm-up: ten requests each.
const BOTH_FACADE_PATHS_BRIEFLY: &[&str] = &[
    "--scenario",
    "facade-stream",
    "--scenario",
    "facade-json",
    "--rate",
    "20",
    "--duration",
    "0.5",
    "--warmup",
    "0.2",
];

/// Sustained mode through the binary: one window per path, paced upstream, the CPU table.
#[test]
fn the_sustained_mode_reports_one_window_and_the_gateways_cpu_per_request_and_chunk() {
    let stdout = run_binary(
        &[
            ["--sustained"].as_slice(),
            BOTH_FACADE_PATHS_BRIEFLY,
            &["--chunks", "4", "--first-chunk-ms", "5", "--chunk-every-ms", "1"],
            &["--gateway-workers", "1"],
        ]
        .concat(),
    );
    assert!(
        stdout.contains("one continuous window of 0.5 s per path"),
        "{stdout}"
    );
    assert!(
        stdout.contains("4 content chunks, every SSE event in its own chunked frame, the first after 5.000 ms, then one every 1.000 ms"),
        "{stdout}"
    );
    // The CPU table comes last and names each scenario again.
    let stream = table_row(&stdout, "| facade stream |");
    assert_eq!(
        stream[2], "10",
        "every request of the window answered: {stream:?}"
    );
    let per_request: f64 = stream[5].parse().unwrap();
    let per_chunk: f64 = stream[6].parse().unwrap();
    assert!((per_chunk - per_request / 4.0).abs() < 1.0, "{stream:?}");
    let json = table_row(&stdout, "| facade JSON |");
    assert_eq!(json[6], "—", "a JSON answer has no chunks: {json:?}");
}

/// The floor under the facade: the bare proxy in the gateway's place answers both kinds of
/// completion as the upstream does, and the report says what ran.
#[test]
fn the_bare_proxy_stands_in_for_the_gateway_on_the_facade() {
    let stdout = run_binary(
        &[
            ["--sustained", "--bare-proxy"].as_slice(),
            BOTH_FACADE_PATHS_BRIEFLY,
            &["--chunks", "3", "--gateway-workers", "1"],
        ]
        .concat(),
    );
    assert!(
        stdout.contains("In the gateway's place: the bare proxy"),
        "{stdout}"
    );
    for scenario in ["facade JSON", "facade stream"] {
        assert_ten_answered(&stdout, &format!("| {scenario} | gateway |"));
    }
}

/// A burst through the binary: every send answered, and memory read before, right after and after
/// the idle spell.
#[test]
fn the_burst_scenario_reports_memory_before_and_after_a_burst_of_sends() {
    let stdout = run_binary(&["--scenario", "burst", "--burst-turns", "8", "--burst-idle", "0.2"]);
    assert!(
        stdout.contains(
            "8 new-thread sends within 100 ms, then 0 s idle, then the driver closes its connections"
        ),
        "{stdout}"
    );
    let cells = table_row(&stdout, "| 8 |");
    assert_eq!(
        (cells[2].as_str(), cells[3].as_str()),
        ("8", "0"),
        "every send answered: {cells:?}"
    );
    for cell in cells[4..=7].iter().chain([&cells[9]]) {
        assert!(cell.parse::<f64>().is_ok_and(|mib| mib > 0.0), "{cells:?}");
    }
}

/// Long threads through the binary: each length filled into SQLite and sent to, with its first
/// byte, first text and peak memory; a thread past the small window sends fewer messages than it
/// holds.
#[test]
fn the_long_threads_scenario_reports_each_thread_length() {
    let stdout = run_binary(&[
        "--scenario",
        "scale-threads",
        "--thread-sizes",
        "4,300",
        "--context-window",
        "12000",
        "--rounds",
        "2",
    ]);
    assert!(
        stdout.contains("## Long threads (bench model window 12000 tokens, 2 rounds, medians)"),
        "{stdout}"
    );
    // Memory per send in two columns: the first send's peak above the size before it, and the
    // highest peak of any send above the gateway's idle size.
    assert!(
        stdout.contains("| first send: peak above the size before it (MiB) |")
            && stdout.contains("| peak above idle, highest (MiB) |"),
        "{stdout}"
    );
    for size in ["4", "300"] {
        let cells = table_row(&stdout, &format!("| SQLite | {size} |"));
        for cell in [&cells[6], &cells[7]] {
            assert!(cell.parse::<f64>().is_ok_and(|ms| ms > 0.0), "{cells:?}");
        }
        for cell in [&cells[5], &cells[8]] {
            assert!(cell.parse::<f64>().is_ok_and(|mib| mib >= 0.0), "{cells:?}");
        }
    }
    let short = table_row(&stdout, "| SQLite | 4 |");
    assert_eq!(
        short[9], "10",
        "the whole short thread with its three sends: {short:?}"
    );
    let long = table_row(&stdout, "| SQLite | 300 |");
    let sent: usize = long[9].parse().unwrap();
    assert!(
        sent > 0 && sent < 300,
        "the long thread was fitted to the window: {long:?}"
    );
}

/// The JSON step test at 20 requests/s a unit, with steps short enough for a test.
const BRIEF_JSON_STEPS: &[&str] = &[
    "--scenario",
    "overload-json",
    "--rate",
    "20",
    "--step-secs",
    "0.5",
    "--warmup",
    "0.2",
    "--gateway-workers",
    "1",
];

/// The step test past saturation through the binary: a table per path, a row per step, with the
/// answered and refused requests counted apart; well under capacity nothing is refused.
#[test]
fn the_overload_steps_report_goodput_and_refusals_per_step() {
    let stdout = run_binary(
        &[
            ["--scenario", "overload-send", "--step-multiples", "0.5,1"].as_slice(),
            BRIEF_JSON_STEPS,
        ]
        .concat(),
    );
    for path in ["chat completions, JSON", "sends, SQLite"] {
        assert!(
            stdout.contains(&format!("## Past saturation: {path} (adaptive admission on")),
            "{stdout}"
        );
    }
    let step = table_row(&stdout, "| 10 | 0.5 |");
    assert_eq!((step[3].as_str(), step[4].as_str()), ("5", "5"), "{step:?}");
    let step = table_row(&stdout, "| 20 | 1.0 |");
    assert_eq!(
        (step[3].as_str(), step[4].as_str(), step[5].as_str()),
        ("10", "10", "0"),
        "every request answered, none refused: {step:?}"
    );
}

/// The floors under a refusal: each stack in the gateway's place refuses every request of the step
/// test with the 503 the driver counts as a refusal, and answers the driver's readiness check.
#[test]
fn every_bare_refuser_stack_refuses_each_request_of_a_step() {
    for stack in ["epoll", "tokio", "hyper"] {
        let stdout = run_binary(
            &[
                ["--step-multiples", "1", "--bare-refuser", stack].as_slice(),
                BRIEF_JSON_STEPS,
            ]
            .concat(),
        );
        let step = table_row(&stdout, "| 20 | 1.0 |");
        assert_eq!(
            (
                step[3].as_str(),
                step[4].as_str(),
                step[5].as_str(),
                step[6].as_str()
            ),
            ("10", "0", "10", "0"),
            "{stack}: every request refused, nothing else: {step:?}"
        );
    }
}
