//! Every answer a user saw is stored, whatever fails: a read right after `[DONE]`, a database that
//! goes away mid-turn, a process killed or asked to stop, text with U+0000 in it.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{Backend, Gateway, error_code, parse_sse, scripted_config_with, use_chat_body};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use promptgate_llm::scripted::{Script, ScriptedUpstream, Step, finish_chunk, role_chunk, text, tool_calls};
use promptgate_server::config::AuthMode;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// The assistant message of a thread as listed, and its text.
fn answer_of(messages: &Value) -> (&Value, String) {
    let answer = messages
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "assistant")
        .unwrap_or_else(|| panic!("no answer stored: {messages}"));
    (answer, text_of(answer))
}

fn text_of(message: &Value) -> String {
    message["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["type"] == "text")
        .map(|p| p["text"].as_str().unwrap())
        .collect()
}

// ---- the answer is there when the stream says done ----

async fn an_answer_is_stored_when_done_is_sent(backend: Backend) {
    let (gw, upstream) = common::single_user_gateway_with(backend, "").await;
    upstream.replay_by_default(text(["Stored ", "before ", "done."]));
    let sends = (0..200).map(|i| {
        let gw = &gw;
        async move {
            let thread = format!("read-after-done-{i}");
            let sse = gw.chat(&thread, "Hello").await;
            assert!(sse.done, "{:?}", sse.types());
            let (status, messages) = gw.get(&format!("/v1/threads/{thread}/messages")).await;
            assert_eq!(status, StatusCode::OK);
            let (answer, text) = answer_of(&messages);
            assert_eq!(answer["status"], "complete", "{answer}");
            assert_eq!(text, sse.text());
        }
    });
    // Ten at a time: concurrent enough for writes to race the reads.
    futures::stream::iter(sends)
        .buffer_unordered(10)
        .collect::<Vec<()>>()
        .await;
}

common::on_both_backends!(an_answer_is_stored_when_done_is_sent);

// ---- one turn per thread, and the thread free as soon as the answer is stored ----

async fn a_second_send_to_a_busy_thread_is_refused(backend: Backend) {
    let (gw, upstream) = common::single_user_gateway_with(backend, "").await;
    upstream.push(
        Script::new()
            .chunk(role_chunk())
            .chunk(promptgate_llm::scripted::content_chunk("Thinking"))
            .hang(),
    );
    let first = common::send_until_upstream_called(&gw, &upstream, "busy", "First").await;
    let (status, body) = gw
        .post("/v1/chat", use_chat_body("busy", "Second", "scripted"))
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::CONFLICT, "turn_in_progress")
    );
    assert_eq!(upstream.calls(), 1, "the refused send must not reach the model");

    let (_, stopped) = gw.post("/v1/chat/busy/stop", json!({})).await;
    assert_eq!(stopped["stopped"], true);
    let first = first.await.unwrap().unwrap();
    assert!(first.trim_end().ends_with("data: [DONE]"), "{first}");
    // Right after [DONE] the thread takes the next message: the slot is freed before the end.
    upstream.push(text(["Next."]));
    let next = gw.chat("busy", "Third").await;
    assert_eq!(next.status, StatusCode::OK);
    assert_eq!(next.text(), "Next.");
    let (_, messages) = gw.get("/v1/threads/busy/messages?replaced=true").await;
    let statuses: Vec<_> = messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["status"].as_str().unwrap_or("-").to_owned())
        .collect();
    assert_eq!(statuses, ["-", "stopped", "-", "complete"], "{messages}");
}

common::on_both_backends!(a_second_send_to_a_busy_thread_is_refused);

// ---- U+0000 ----

async fn nul_in_model_text_is_stored_and_refused_in_input(backend: Backend) {
    let (gw, upstream) = common::single_user_gateway_with(backend, "").await;
    upstream.push(text(["Before\u{0}after ", "and more."]));
    let sse = gw.chat("nul", "Say it").await;
    assert!(sse.text().contains('\u{0}'));
    let (_, messages) = gw.get("/v1/threads/nul/messages").await;
    let (answer, stored) = answer_of(&messages);
    assert_eq!(answer["status"], "complete");
    assert_eq!(stored, sse.text(), "the stored answer is what was streamed");

    let (status, body) = gw
        .post("/v1/chat", use_chat_body("nul-in", "a\u{0}b", "scripted"))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(error_code(&body) == "invalid_body");
    let (status, body) = gw
        .put("/v1/settings", json!({"preferred_name": "Ada\u{0}"}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let (status, body) = gw.get("/v1/threads/a%00b/messages").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("NUL"));
    let (status, _) = gw.call(Method::DELETE, "/v1/threads/a%00b", None, None).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
}

/// An artifact the model writes with U+0000 in it is sent back to the model to fix, on both stores
/// alike, rather than failing on Postgres as if the database were down.
async fn nul_in_an_artifact_is_for_the_model_to_fix(backend: Backend) {
    let (gw, upstream) = common::single_user_gateway_with(backend, "").await;
    let args = json!({"title": "Clock", "html": "<html><body>Tick\u{0}tock</body></html>"}).to_string();
    upstream.push(tool_calls(&[("call_r", "render_html", &[args.as_str()])]));
    upstream.push(text(["Fixed it."]));
    let sse = gw.chat("nul-art", "draw a clock").await;
    assert_eq!(sse.text(), "Fixed it.");
    let output = &sse.of_type("tool-output-available")[0]["output"];
    assert_eq!(output["ok"], false, "{output}");
    let errors = output["errors"].to_string();
    assert!(errors.contains("NUL character (U+0000)"), "{errors}");
    let told = upstream.last_request().unwrap().to_string();
    assert!(!told.contains("database is unavailable"), "{told}");
}

common::on_both_backends!(
    nul_in_an_artifact_is_for_the_model_to_fix,
    nul_in_model_text_is_stored_and_refused_in_input
);

// ---- empty and malformed upstream answers ----

#[tokio::test]
async fn an_empty_answer_is_retried_once_then_reported() {
    let (gw, upstream) = common::single_user_gateway_with(Backend::Sqlite, "").await;
    let empty = || {
        Script::new()
            .chunk(role_chunk())
            .chunk(finish_chunk("stop"))
            .done()
    };
    upstream.push(empty());
    upstream.push(empty());
    let sse = gw.chat("empty", "Hello").await;
    assert_eq!(upstream.calls(), 2);
    let errors = sse.of_type("error");
    assert_eq!(errors.len(), 1, "{:?}", sse.types());
    assert_eq!(
        errors[0]["errorText"],
        promptgate_service::events::EMPTY_ANSWER_TEXT
    );
    assert_eq!(sse.types().last(), Some(&"finish"));
    let (_, messages) = gw.get("/v1/threads/empty/messages").await;
    assert_eq!(answer_of(&messages).0["status"], "error");

    // A JSON body that is no completion, where a stream was asked for.
    upstream.push(Script::new().step(Step::Status(200, "{}".to_owned())));
    let sse = gw.chat("not-a-stream", "Hello").await;
    assert_eq!(sse.of_type("error").len(), 1, "{:?}", sse.types());
    let (_, messages) = gw.get("/v1/threads/not-a-stream/messages").await;
    assert_eq!(answer_of(&messages).0["status"], "error");
}

// ---- a database outage in the middle of a hundred turns ----

/// A Postgres cluster of this test's own, so it can be stopped without disturbing other tests.
struct OwnCluster {
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
}

impl OwnCluster {
    fn start() -> OwnCluster {
        let bin = PathBuf::from(
            std::env::var("PROMPTGATE_TEST_PG_BIN")
                .expect("PROMPTGATE_TEST_PG_BIN is not set: run the tests through scripts/with-postgres.sh"),
        );
        let dir = scratch_dir("outage");
        std::fs::create_dir_all(&dir).unwrap();
        if is_root() {
            // initdb refuses to run as root: the cluster belongs to the postgres system user.
            assert!(
                Command::new("chown")
                    .arg("postgres:postgres")
                    .arg(&dir)
                    .status()
                    .unwrap()
                    .success()
            );
        }
        let port = common::free_port();
        let cluster = OwnCluster { dir, bin, port };
        let data = cluster.dir.join("data");
        cluster.run(
            "initdb",
            &[
                "-D",
                data.to_str().unwrap(),
                "--auth=trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
            ],
        );
        cluster.start_again();
        cluster
    }

    fn run(&self, tool: &str, args: &[&str]) {
        let program = self.bin.join(tool);
        let mut command = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&program);
            c
        } else {
            Command::new(&program)
        };
        let out = command.args(args).stdout(Stdio::null()).output().unwrap();
        assert!(
            out.status.success(),
            "{tool} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn pg_ctl(&self, args: &[&str]) {
        let data = self.dir.join("data");
        let mut all = vec!["-D", data.to_str().unwrap(), "-w"];
        all.extend_from_slice(args);
        self.run("pg_ctl", &all);
    }

    fn start_again(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100",
            self.port,
            self.dir.display()
        );
        let log = self.dir.join("server.log");
        self.pg_ctl(&["-l", log.to_str().unwrap(), "-o", &options, "start"]);
    }

    fn stop(&self) {
        self.pg_ctl(&["-m", "fast", "stop"]);
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        let program = self.bin.join("pg_ctl");
        let args = [
            "-D",
            data.to_str().unwrap_or_default(),
            "-m",
            "immediate",
            "-w",
            "stop",
        ];
        let _ = if is_root() {
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(&program)
                .args(args)
                .output()
        } else {
            Command::new(&program).args(args).output()
        };
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A fresh directory under the system's temporary one.
fn scratch_dir(kind: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    std::env::temp_dir().join(format!("promptgate-{kind}-{}-{n}-{nanos}", std::process::id()))
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

#[tokio::test]
async fn a_database_outage_mid_turn_loses_no_answer() {
    let cluster = OwnCluster::start();
    let store = promptgate_store::Store::connect(&cluster.url()).await.unwrap();
    store.migrate().await.unwrap();
    common::init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    // Short grace and checkpoints, so the stream's end meets the outage.
    let config = scripted_config_with(
        AuthMode::SingleUser,
        &upstream.base_url(),
        "[turn]\nsave_grace_secs = 1\ncheckpoint_interval_ms = 100\n",
    );
    let gw = Gateway::over_store(store, &cluster.url(), config).await;
    let pieces: Vec<String> = (0..12).map(|i| format!("piece {i}. ")).collect();
    upstream.replay_by_default(text(&pieces).with_delay_between(Duration::from_millis(400)));

    const TURNS: usize = 100;
    let mut streams = FuturesUnordered::new();
    for i in 0..TURNS {
        let http = gw.http.clone();
        let url = gw.url("/v1/chat");
        let body = use_chat_body(&format!("outage-{i}"), "Tell me", "scripted");
        streams.push(tokio::spawn(async move {
            // A loaded machine can make the admission gate refuse a send (503, Retry-After); a
            // client sends it again, and the test needs all of them running when the database goes.
            let mut tries = 0;
            let res = loop {
                let res = http.post(&url).json(&body).send().await.unwrap();
                tries += 1;
                if res.status() != StatusCode::SERVICE_UNAVAILABLE || tries == 100 {
                    break res;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            };
            (i, common::sse_of(res).await)
        }));
    }
    let started = std::time::Instant::now();
    while upstream.calls() < TURNS {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "only {} of {TURNS} turns reached the model",
            upstream.calls()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cluster.stop();

    // While the database is down: Stop still works, and requests that need the database fail
    // fast and say so.
    let (status, stopped) = gw.post("/v1/chat/outage-0/stop", json!({})).await;
    assert_eq!((status, &stopped["stopped"]), (StatusCode::OK, &json!(true)));
    let (status, body) = gw.get("/v1/threads").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(error_code(&body), "store_unavailable");
    let res = gw.response(Method::GET, "/v1/threads", None, None).await;
    assert!(res.headers().contains_key("retry-after"));
    let (status, _) = gw.get("/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    // The failed round trips are counted for the operator, by operation.
    assert!(
        gw.metric(r#"promptgate_store_errors_total{op="pages.list_threads_page",kind="unavailable"}"#)
            .await
            >= 1.0
    );

    // Longer than the pool's old ten-second wait, so nothing is saved by merely waiting it out.
    tokio::time::sleep(Duration::from_secs(12)).await;
    cluster.start_again();

    let mut seen = Vec::new();
    while let Some(joined) = streams.next().await {
        seen.push(joined.unwrap());
    }
    let mut told_not_stored = 0;
    for (i, sse) in &seen {
        assert!(sse.done, "turn {i} did not end its stream: {:?}", sse.types());
        let errors: Vec<_> = sse.of_type("error");
        if !errors.is_empty() {
            assert!(
                errors
                    .iter()
                    .any(|e| e["errorText"] == promptgate_service::events::NOT_STORED_TEXT),
                "turn {i} ended with an unexpected error: {errors:?}"
            );
            told_not_stored += 1;
        }
    }
    assert!(
        told_not_stored > 0,
        "the outage should have outlasted some final saves"
    );

    // Every answer is stored once the database is back, exactly as it was streamed.
    for (i, sse) in &seen {
        let thread = format!("outage-{i}");
        let mut last = Value::Null;
        for _ in 0..600 {
            let (status, messages) = gw.get(&format!("/v1/threads/{thread}/messages")).await;
            if status == StatusCode::OK
                && messages.as_array().is_some_and(|m| {
                    m.iter()
                        .any(|m| m["role"] == "assistant" && m["status"] != "streaming")
                })
            {
                last = messages;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let (answer, stored) = answer_of(&last);
        let expected = if *i == 0 { "stopped" } else { "complete" };
        assert_eq!(answer["status"], expected, "turn {i}: {answer}");
        assert_eq!(stored, sse.text(), "turn {i}");
    }
}

// ---- the process killed or asked to stop ----

pub(crate) struct Server {
    pub(crate) child: Child,
    log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// Starts the `promptgate` binary on `dir`'s config and SQLite file, and waits until it is ready.
pub(crate) async fn start_binary(dir: &Path, port: u16, run: &str) -> Server {
    let log = dir.join(format!("{run}.log"));
    let child = Command::new(env!("CARGO_BIN_EXE_promptgate"))
        .args(["serve", "--config"])
        .arg(dir.join("promptgate.toml"))
        .env_remove("PROMPTGATE_CONFIG")
        .env_remove("DATABASE_URL")
        .env("PROMPTGATE_LOG", "info")
        .env("PROMPTGATE_LISTEN", format!("127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let server = Server { child, log };
    let http = reqwest::Client::new();
    for _ in 0..400 {
        if let Ok(res) = http.get(format!("http://127.0.0.1:{port}/readyz")).send().await
            && res.status().is_success()
        {
            return server;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("promptgate did not become ready: {}", server.log());
}

/// A directory with a config for the binary: SQLite in it, the scripted model, `extra` appended.
pub(crate) fn binary_dir(upstream: &ScriptedUpstream, extra: &str) -> PathBuf {
    binary_dir_on(upstream, None, extra)
}

/// A scripted upstream, a [`binary_dir`] on it with `extra` appended, and a free port: what a test
/// starts the binary on, and starts it on again after killing or stopping it.
pub(crate) async fn binary_setup(extra: &str) -> (ScriptedUpstream, PathBuf, u16) {
    common::init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    let dir = binary_dir(&upstream, extra);
    (upstream, dir, common::free_port())
}

/// [`binary_dir`] on `database_url` (`None`: a SQLite file in the directory).
fn binary_dir_on(upstream: &ScriptedUpstream, database_url: Option<&str>, extra: &str) -> PathBuf {
    let dir = scratch_dir("lost");
    std::fs::create_dir_all(&dir).unwrap();
    let database_url = database_url.map_or_else(
        || format!("sqlite://{}/gw.db?mode=rwc", dir.display()),
        str::to_owned,
    );
    let config = format!(
        "listen = \"127.0.0.1:0\"\ndatabase_url = \"{database_url}\"\ndefault_model = \"scripted\"\n\
         [auth]\nmode = \"single_user\"\n{extra}\n\
         [[providers]]\nname = \"scripted\"\nkind = \"openai\"\nbase_url = \"{}\"\n\
         [[models]]\nid = \"scripted\"\nname = \"Scripted\"\nprovider = \"scripted\"\nupstream_model = \"m\"\n",
        upstream.base_url()
    );
    std::fs::write(dir.join("promptgate.toml"), config).unwrap();
    dir
}

/// A send of `text` to `thread` on the server process listening on `port`.
pub(crate) fn chat_request(port: u16, thread: &str, text: &str) -> reqwest::RequestBuilder {
    reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/v1/chat"))
        .json(&use_chat_body(thread, text, "scripted"))
}

/// Starts a send and reads its stream in the background; the stream may break when the server dies.
pub(crate) fn send_in_background(port: u16, thread: &str) -> tokio::task::JoinHandle<Option<common::Sse>> {
    let request = chat_request(port, thread, "Tell me");
    tokio::spawn(async move {
        let res = request.send().await.ok()?;
        let status = res.status();
        let headers = res.headers().clone();
        let body = res.text().await.ok()?;
        Some(parse_sse(status, headers, &body))
    })
}

async fn messages_of(port: u16, thread: &str) -> Value {
    reqwest::get(format!("http://127.0.0.1:{port}/v1/threads/{thread}/messages"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Waits until the thread's answer has been checkpointed with `needle` in its text.
pub(crate) async fn wait_for_checkpoint(port: u16, thread: &str, needle: &str) -> Value {
    for _ in 0..400 {
        let messages = messages_of(port, thread).await;
        if messages.as_array().is_some_and(|all| {
            all.iter().any(|m| {
                m["role"] == "assistant" && m["status"] == "streaming" && text_of(m).contains(needle)
            })
        }) {
            return messages;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the answer of {thread} was never checkpointed with {needle:?}");
}

#[tokio::test]
async fn a_killed_process_leaves_an_interrupted_partial_answer() {
    let (upstream, dir, port) = binary_setup("[turn]\ncheckpoint_interval_ms = 50\n").await;
    let server = start_binary(&dir, port, "first").await;
    upstream.push(
        Script::new()
            .chunk(role_chunk())
            .chunk(promptgate_llm::scripted::content_chunk("Partial one. "))
            .delay(Duration::from_millis(100))
            .chunk(promptgate_llm::scripted::content_chunk("Partial two. "))
            .hang(),
    );
    let stream = send_in_background(port, "killed");
    wait_for_checkpoint(port, "killed", "Partial two").await;
    drop(server); // SIGKILL: no chance to save anything more
    let _ = stream.await;

    let server = start_binary(&dir, port, "second").await;
    let messages = messages_of(port, "killed").await;
    let (answer, stored) = answer_of(&messages);
    assert_eq!(answer["status"], "interrupted", "{messages}");
    // What the user saw: trailing space is held back until more text shows it is not a citation.
    assert_eq!(stored, "Partial one. Partial two.");
    assert!(server.log().contains("marked interrupted"), "{}", server.log());

    // The thread takes new messages again.
    upstream.push(text(["Back again."]));
    let res = chat_request(port, "killed", "Again").send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.text().await.unwrap().contains("Back again."));
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn sigterm_lets_turns_finish_within_the_grace_and_stores_the_rest_as_stopped() {
    let (upstream, dir, port) =
        binary_setup("[server]\nshutdown_grace_secs = 2\n[turn]\ncheckpoint_interval_ms = 50\n").await;
    let mut server = start_binary(&dir, port, "first").await;
    // One turn that ends within the grace, one that never would.
    upstream.push(text(["Finishing ", "in ", "time."]).with_delay_between(Duration::from_millis(150)));
    let finishing = send_in_background(port, "finishing");
    while upstream.calls() < 1 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    upstream.push(
        Script::new()
            .chunk(role_chunk())
            .chunk(promptgate_llm::scripted::content_chunk("Never done. "))
            .hang(),
    );
    let hung = send_in_background(port, "hung");
    wait_for_checkpoint(port, "hung", "Never done").await;

    common::sigterm(&server.child);
    let finishing = finishing.await.unwrap().expect("the finishing stream");
    let hung = hung.await.unwrap().expect("the hung stream");
    let exit = server.child.wait().unwrap();
    assert!(exit.success(), "exit status {exit}: {}", server.log());

    assert!(finishing.done && finishing.of_type("finish").len() == 1);
    assert_eq!(finishing.text(), "Finishing in time.");
    assert!(
        hung.done && hung.of_type("abort").len() == 1,
        "{:?}",
        hung.types()
    );
    let log = server.log();
    assert!(log.contains("shutdown signal received"), "{log}");
    assert!(log.contains("every answer is stored"), "{log}");

    let server = start_binary(&dir, port, "second").await;
    let messages = messages_of(port, "finishing").await;
    let (answer, stored) = answer_of(&messages);
    assert_eq!(
        (answer["status"].as_str(), stored.as_str()),
        (Some("complete"), "Finishing in time.")
    );
    let messages = messages_of(port, "hung").await;
    let (answer, stored) = answer_of(&messages);
    assert_eq!(answer["status"], "stopped", "{messages}");
    assert_eq!(stored, hung.text());
    assert!(stored.starts_with("Never done."));
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Makes every insert of an answer's opening row (an empty assistant message, `streaming`) wait
/// `secs` in the database, so whatever the server does before that row exists happens first.
async fn slow_opening_rows(database_url: &str, secs: u32) {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(database_url).await.unwrap();
    for statement in [
        format!(
            "CREATE FUNCTION slow_opening_row() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
             IF NEW.role = 'assistant' AND NEW.status = 'streaming' AND NEW.parts = '[]' THEN \
             PERFORM pg_sleep({secs}); END IF; RETURN NEW; END $$"
        ),
        "CREATE TRIGGER slow_opening_row BEFORE INSERT ON messages FOR EACH ROW \
         EXECUTE FUNCTION slow_opening_row()"
            .to_owned(),
    ] {
        sqlx::query(sqlx::AssertSqlSafe(statement))
            .execute(&pool)
            .await
            .unwrap();
    }
    pool.close().await;
}

#[tokio::test]
async fn an_instance_killed_right_after_start_leaves_the_answer_the_client_was_told_of() {
    common::init();
    let db = promptgate_store::testing::TestDb::postgres().await;
    slow_opening_rows(db.url(), 3).await;
    let upstream = ScriptedUpstream::start().await.unwrap();
    upstream.push(Script::new().hang());
    let dir = binary_dir_on(&upstream, Some(db.url()), "");
    let port = common::free_port();
    let server = start_binary(&dir, port, "first").await;

    let res = chat_request(port, "killed-early", "Tell me")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    // Read up to the `start` chunk, then kill the process at once.
    let mut res = res;
    let mut seen = String::new();
    let start = loop {
        let chunk = tokio::time::timeout(Duration::from_secs(60), res.chunk())
            .await
            .expect("no start chunk")
            .unwrap()
            .expect("the stream ended before its start chunk");
        seen.push_str(&String::from_utf8_lossy(&chunk));
        if let Some(start) = seen
            .split("\n\n")
            .filter_map(|frame| frame.strip_prefix("data: "))
            .filter_map(|data| serde_json::from_str::<Value>(data).ok())
            .find(|event| event["type"] == "start")
        {
            break start;
        }
    };
    drop(server);
    let message_id = start["messageId"].as_str().unwrap().to_owned();

    let _server = start_binary(&dir, port, "second").await;
    let messages = messages_of(port, "killed-early").await;
    let answer = messages
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == message_id.as_str())
        .unwrap_or_else(|| {
            panic!("the answer {message_id} the client was told of does not exist: {messages}")
        });
    assert_eq!(answer["role"], "assistant");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A gateway in tokens mode over `cluster` whose pool waits `wait` for a connection, with a turn
/// running in thread `running` that only a Stop ends; the upstream answering it, the token, and the
/// turn's whole stream once it ended.
async fn a_turn_running_in_tokens_mode(
    cluster: &OwnCluster,
    wait: Duration,
) -> (Gateway, ScriptedUpstream, String, tokio::task::JoinHandle<String>) {
    let store = promptgate_store::Store::connect_with_acquire_timeout(&cluster.url(), wait)
        .await
        .unwrap();
    store.migrate().await.unwrap();
    let user = store.create_user("ada").await.unwrap();
    let token = store.issue_token(&user.id).await.unwrap();
    common::init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    // An answer that keeps coming for a minute, so only the Stop ends it.
    let pieces: Vec<String> = (0..120).map(|i| format!("piece {i}. ")).collect();
    upstream.push(text(&pieces).with_delay_between(Duration::from_millis(500)));
    let config = scripted_config_with(AuthMode::Tokens, &upstream.base_url(), "");
    let gw = Gateway::over_store(store, &cluster.url(), config).await;
    let running = {
        let request = reqwest::Client::new()
            .post(gw.url("/v1/chat"))
            .bearer_auth(&token)
            .json(&use_chat_body("running", "Tell me", "scripted"));
        tokio::spawn(async move { request.send().await.unwrap().text().await.unwrap() })
    };
    while upstream.calls() == 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (gw, upstream, token, running)
}

/// Stops the turn in thread `running`, failing when that takes `bound` or longer.
async fn stop_within(gw: &Gateway, token: &str, bound: Duration) {
    let res = reqwest::Client::new()
        .post(gw.url("/v1/chat/running/stop"))
        .bearer_auth(token)
        .timeout(bound)
        .send()
        .await
        .expect("the stop waited for the database");
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.json::<Value>().await.unwrap()["stopped"], true);
}

#[tokio::test]
async fn in_tokens_mode_an_outage_costs_a_request_one_wait_for_the_database_and_a_stop_none() {
    // The pool's wait, long enough that one wait and two are told apart by a bound, not a clock.
    const WAIT: Duration = Duration::from_secs(10);
    let cluster = OwnCluster::start();
    let (gw, _upstream, token, running) = a_turn_running_in_tokens_mode(&cluster, WAIT).await;
    cluster.stop();

    // A send during the outage: its token is honoured from memory and the send is refused after
    // one wait for the database, not one for the token and another for the send.
    let res = reqwest::Client::new()
        .post(gw.url("/v1/chat"))
        .bearer_auth(&token)
        .json(&use_chat_body("refused", "Hello", "scripted"))
        .timeout(WAIT + WAIT / 2)
        .send()
        .await
        .expect("the refusal came after more than one wait for the database");
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(error_code(&res.json().await.unwrap()), "store_unavailable");

    // Right after, a Stop of the turn this instance runs needs no wait at all.
    stop_within(&gw, &token, WAIT / 2).await;
    cluster.start_again();
    let stream = running.await.unwrap();
    assert!(stream.contains(r#""type":"abort""#), "{stream}");
}

#[tokio::test]
async fn in_tokens_mode_a_stop_as_the_first_request_of_an_outage_waits_for_nothing() {
    const WAIT: Duration = Duration::from_secs(6);
    let cluster = OwnCluster::start();
    let (gw, _upstream, token, running) = a_turn_running_in_tokens_mode(&cluster, WAIT).await;
    cluster.stop();
    // No request meets the outage first: the instance finds it alone, renewing the running turn's
    // lease.
    let renewal = r#"promptgate_store_errors_total{op="turn_claims.renew_turn_claims",kind="unavailable"}"#;
    while gw.metric(renewal).await < 1.0 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop_within(&gw, &token, WAIT / 2).await;
    cluster.start_again();
    let stream = running.await.unwrap();
    assert!(stream.contains(r#""type":"abort""#), "{stream}");
}
