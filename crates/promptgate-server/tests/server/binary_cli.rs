//! The `promptgate` binary as a user runs it: `users create`, `serve`, then curl-like calls.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{self, Killed, free_port};

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

fn promptgate() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_promptgate"));
    cmd.env_remove("PROMPTGATE_CONFIG")
        .env_remove("DATABASE_URL")
        .env("PROMPTGATE_LOG", "warn");
    cmd
}

async fn wait_ready(http: &reqwest::Client, base: &str) {
    for _ in 0..200 {
        if let Ok(res) = http.get(format!("{base}/readyz")).send().await
            && res.status().is_success()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("promptgate did not become ready at {base}");
}

/// `promptgate serve` on `db` at a free loopback port, once it answers `/readyz`: the process
/// (killed when dropped) and the base URL. `configure` adds what the test varies.
/// [`serve_ready`] in tokens mode: every request needs a user's token.
async fn serve_ready_with_tokens(db: &str) -> (Killed, String) {
    serve_ready(db, |cmd| {
        cmd.env("PROMPTGATE_AUTH_MODE", "tokens");
    })
    .await
}

async fn serve_ready(db: &str, configure: impl FnOnce(&mut Command)) -> (Killed, String) {
    let listen = format!("127.0.0.1:{}", free_port());
    let mut cmd = promptgate();
    cmd.arg("serve")
        .env("DATABASE_URL", db)
        .env("PROMPTGATE_LISTEN", &listen)
        .stdout(Stdio::null());
    configure(&mut cmd);
    let server = Killed(cmd.spawn().unwrap());
    let base = format!("http://{listen}");
    wait_ready(&reqwest::Client::new(), &base).await;
    (server, base)
}

/// A scratch folder of this process for the test `name` and the URL of a SQLite database in it.
fn scratch_db(name: &str) -> (std::path::PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("promptgate-{name}-{}", std::process::id()));
    let db = format!("sqlite://{}/gw.db?mode=rwc", dir.display());
    (dir, db)
}

#[tokio::test]
async fn embedded_default_serves_settings_and_the_prompt_on_loopback() {
    common::init();
    let (dir, db) = scratch_db("cli");
    let (_server, base) = serve_ready(&db, |_| {}).await;
    let http = reqwest::Client::new();

    let res = http
        .put(format!("{base}/v1/settings"))
        .json(&json!({"preferred_name": "Grace", "time_zone": "Asia/Kolkata"}))
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success());
    http.post(format!("{base}/v1/threads"))
        .json(&json!({"id": "c1"}))
        .send()
        .await
        .unwrap();
    let preview = common::json_of(http.get(format!("{base}/v1/threads/c1/prompt?model=demo"))).await;
    assert!(preview["stable"].as_str().unwrap().contains("User name: Grace"));
    assert!(
        preview["volatile"].as_str().unwrap().contains("GMT+5:30"),
        "{}",
        preview["volatile"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn users_create_prints_a_token_that_authenticates() {
    common::init();
    let (dir, db) = scratch_db("users");
    let token = token_in(&users_cmd_in(&db, None, &["create", "ada"]));

    let (_server, base) = serve_ready_with_tokens(&db).await;
    let http = reqwest::Client::new();
    // Without a token and with a wrong one: 401 with the challenge a generic HTTP client follows.
    for token in [None, Some("not-a-token")] {
        let mut req = http.get(format!("{base}/v1/settings"));
        if let Some(token) = token {
            req = req.bearer_auth(token);
        }
        let res = req.send().await.unwrap();
        assert_eq!(res.status(), 401);
        assert_eq!(
            res.headers()["www-authenticate"],
            "Bearer realm=\"promptgate\"",
            "{token:?}"
        );
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["error"]["code"], "unauthorized", "{body}");
    }
    let ok = http
        .get(format!("{base}/v1/settings"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_config_fails_fast_with_a_readable_message() {
    let out = promptgate()
        .arg("serve")
        .env("PROMPTGATE_LISTEN", "0.0.0.0:0")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("loopback"), "{stderr}");
}

/// The JSON log lines a server wrote, parsed.
fn json_lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON log line ({e}): {line}"))
        })
        .collect()
}

/// The value of `key` in the line's own fields or in the span it was logged in.
fn field<'a>(line: &'a Value, key: &str) -> &'a Value {
    if !line["fields"][key].is_null() {
        return &line["fields"][key];
    }
    &line["span"][key]
}

#[tokio::test]
async fn an_operator_gets_metrics_request_ids_and_one_json_line_per_request_and_turn() {
    common::init();
    let (dir, db) = scratch_db("observe");
    std::fs::create_dir_all(&dir).unwrap();
    let log_path = dir.join("stderr.log");
    let (mut server, base) = serve_ready(&db, |cmd| {
        cmd.env("PROMPTGATE_LOG", "info")
            .env("PROMPTGATE_LOG_FORMAT", "json")
            .stderr(Stdio::from(std::fs::File::create(&log_path).unwrap()));
    })
    .await;
    let http = reqwest::Client::new();

    // A turn in which the demo model calls render_html, under the client's request id.
    let res = http
        .post(format!("{base}/v1/chat"))
        .header("x-request-id", "req-turn-1")
        .json(&common::use_chat_body("observed", "Make me a tiny page", "demo"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["x-request-id"], "req-turn-1", "the id is echoed");
    let stream = res.text().await.unwrap();
    assert!(stream.contains("tool-output-available"), "{stream}");

    // An error body names the request, whether the client chose the id or the server made one up.
    let res = http
        .get(format!("{base}/v1/threads/nowhere"))
        .header("x-request-id", "req-missing-1")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["request_id"], "req-missing-1", "{body}");
    let res = http
        .get(format!("{base}/v1/threads/nowhere"))
        .send()
        .await
        .unwrap();
    let made_up = res.headers()["x-request-id"].to_str().unwrap().to_owned();
    assert!(!made_up.is_empty());
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["request_id"], made_up.as_str(), "{body}");

    let metrics = common::text_of(http.get(format!("{base}/metrics"))).await;
    let value = |series: &str| -> f64 {
        metrics
            .lines()
            .find(|line| line.starts_with(series))
            .and_then(|line| line.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {series} in\n{metrics}"))
    };
    assert_eq!(
        value(r#"promptgate_http_requests_total{route="/v1/chat",method="POST",status="200"}"#),
        1.0
    );
    assert_eq!(
        value(r#"promptgate_http_requests_total{route="/v1/threads/{id}",method="GET",status="404"}"#),
        2.0
    );
    assert_eq!(
        value(r#"promptgate_turns_total{kind="chat",outcome="completed"}"#),
        1.0
    );
    assert_eq!(
        value(r#"promptgate_tool_calls_total{tool="render_html",outcome="ok"}"#),
        1.0
    );
    assert_eq!(value("promptgate_turns_in_flight"), 0.0);
    assert!(value("promptgate_prompt_tokens_total") > 0.0, "{metrics}");
    assert!(
        metrics.contains("promptgate_http_request_duration_seconds_bucket{"),
        "{metrics}"
    );

    // SIGTERM: the server says so and stops.
    common::sigterm(&server.0);
    for _ in 0..200 {
        if server.0.try_wait().unwrap().is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let lines = json_lines(&log_path);
    let access: Vec<&Value> = lines
        .iter()
        .filter(|l| l["target"] == "promptgate::access")
        .collect();
    let chat = access
        .iter()
        .find(|l| field(l, "request_id") == "req-turn-1")
        .unwrap_or_else(|| panic!("no access line for the turn: {access:?}"));
    assert_eq!(field(chat, "status"), 200);
    assert_eq!(field(chat, "route"), "/v1/chat");
    assert_eq!(chat["level"], "INFO");
    assert!(
        access.iter().any(|l| field(l, "request_id") == "req-missing-1"),
        "{access:?}"
    );
    let turn = lines
        .iter()
        .find(|l| l["target"] == "promptgate::turn")
        .unwrap_or_else(|| panic!("no turn summary: {lines:?}"));
    assert_eq!(field(turn, "request_id"), "req-turn-1");
    assert_eq!(field(turn, "model"), "demo");
    assert_eq!(field(turn, "tool_calls"), 1);
    assert_eq!(field(turn, "status"), "completed");
    assert!(field(turn, "steps").as_u64().unwrap() >= 2, "{turn}");
    assert!(
        lines.iter().any(|l| field(l, "message")
            .as_str()
            .is_some_and(|m| m.contains("shutdown signal"))
            && field(l, "signal") == "SIGTERM"),
        "no line about the signal: {lines:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn healthcheck_passes_for_a_ready_server_and_fails_without_one() {
    common::init();
    let (dir, db) = scratch_db("health");
    let (_server, base) = serve_ready(&db, |_| {}).await;
    let listen = base.trim_start_matches("http://");
    // The configured listen address, as the image's HEALTHCHECK runs it.
    let ok = promptgate()
        .arg("healthcheck")
        .env("PROMPTGATE_LISTEN", listen)
        .output()
        .unwrap();
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));

    let nobody = format!("127.0.0.1:{}", free_port());
    let down = promptgate()
        .args(["healthcheck", "--address", &nobody, "--timeout", "2"])
        .output()
        .unwrap();
    assert!(!down.status.success());
    assert!(
        String::from_utf8_lossy(&down.stderr).contains("nothing answers"),
        "{}",
        String::from_utf8_lossy(&down.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn metrics_listen_moves_the_scrape_off_the_public_port() {
    common::init();
    let (dir, db) = scratch_db("metrics");
    let metrics_listen = format!("127.0.0.1:{}", free_port());
    let (_server, base) = serve_ready(&db, |cmd| {
        cmd.env("PROMPTGATE_METRICS_LISTEN", &metrics_listen);
    })
    .await;
    let http = reqwest::Client::new();
    // A request on the public port, so the scrape has something to show.
    let res = http.get(format!("{base}/v1/settings")).send().await.unwrap();
    assert_eq!(res.status(), 200);

    let public = http.get(format!("{base}/metrics")).send().await.unwrap();
    assert_eq!(public.status(), 404, "the public port must not show metrics");
    let scrape = http
        .get(format!("http://{metrics_listen}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(scrape.status(), 200);
    let text = scrape.text().await.unwrap();
    assert!(
        text.contains(r#"promptgate_http_requests_total{route="/v1/settings",method="GET",status="200"}"#),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn repo_root() -> std::path::PathBuf {
    std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The compose file against the compose specification's JSON schema (vendored in docker/schema),
/// with check-jsonschema from tests/py/.venv (`tests/py/install.sh`). No Docker daemon is needed.
#[test]
fn the_compose_file_follows_the_compose_specification() {
    let bin = repo_root().join("tests/py/.venv/bin/check-jsonschema");
    if !bin.is_file() {
        common::skip_without::<()>(
            "tests/py/.venv is missing: run tests/py/install.sh",
            "skipping the compose schema check; run tests/py/install.sh to include it",
        );
        return;
    }
    let out = Command::new(bin)
        .arg("--schemafile")
        .arg(repo_root().join("docker/schema/compose-spec.json"))
        .arg(repo_root().join("docker/docker-compose.yml"))
        .output()
        .unwrap();
    common::assert_succeeded(&out, "check-jsonschema");
}

#[test]
fn the_docker_files_name_files_that_exist_and_pinned_images() {
    let root = repo_root();
    let dockerfile = std::fs::read_to_string(root.join("docker/Dockerfile")).unwrap();
    let ignored: Vec<String> = std::fs::read_to_string(root.join(".dockerignore"))
        .unwrap()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect();
    let mut copies = 0;
    for line in dockerfile.lines().map(str::trim) {
        let Some(args) = line.strip_prefix("COPY ") else {
            continue;
        };
        if args.contains("--from=") {
            continue;
        }
        let words: Vec<&str> = args.split_whitespace().filter(|w| !w.starts_with("--")).collect();
        let (_, sources) = words.split_last().unwrap();
        for source in sources {
            copies += 1;
            assert!(
                root.join(source).exists(),
                "the Dockerfile copies {source}, which does not exist"
            );
            let top = source.split('/').next().unwrap();
            assert!(
                !ignored.iter().any(|i| i == source || i == top),
                "the Dockerfile copies {source}, which .dockerignore leaves out of the context"
            );
        }
    }
    assert!(copies >= 4, "no COPY lines found");
    let mut stages = Vec::new();
    for line in dockerfile.lines().filter(|l| l.starts_with("FROM ")) {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let [_, _, as_, stage] = words[..]
            && as_.eq_ignore_ascii_case("as")
        {
            stages.push(stage);
        }
        let image = words[1];
        if stages.contains(&image) {
            continue;
        }
        assert!(
            image.contains(':') && !image.ends_with(":latest"),
            "unpinned base image: {line}"
        );
    }

    let compose: Value =
        yaml_serde::from_str(&std::fs::read_to_string(root.join("docker/docker-compose.yml")).unwrap())
            .unwrap();
    let services = compose["services"].as_object().unwrap();
    for (name, service) in services {
        assert_eq!(service["restart"], "unless-stopped", "{name}");
        if let Some(image) = service["image"].as_str()
            && service.get("build").is_none()
        {
            let tag = image.rsplit_once(':').map(|(_, t)| t).unwrap_or("latest");
            assert!(
                tag != "latest" && tag.chars().any(|c| c.is_ascii_digit()),
                "{name}: image {image} is not pinned to a version"
            );
        }
        for volume in service["volumes"].as_array().into_iter().flatten() {
            let source = volume.as_str().unwrap().split(':').next().unwrap();
            if source.starts_with('.') {
                assert!(
                    root.join("docker").join(source).exists(),
                    "{name} mounts {source}, which does not exist"
                );
            }
        }
    }
    let gateway = &services["gateway"];
    let context = root
        .join("docker")
        .join(gateway["build"]["context"].as_str().unwrap());
    assert!(
        context
            .join(gateway["build"]["dockerfile"].as_str().unwrap())
            .is_file()
    );
    let grace = gateway["stop_grace_period"].as_str().unwrap();
    let secs: u64 = grace.trim_end_matches('s').parse().unwrap();
    // Docker must wait out the server's shutdown (the turns' grace, then the flush of pending saves)
    // before it sends SIGKILL.
    let server = promptgate_server::config::ServerConfig::default();
    let shutdown = server.shutdown_grace_secs + server.shutdown_flush_secs;
    assert!(
        secs > shutdown,
        "stop_grace_period {grace} is not longer than the server's shutdown ({shutdown} s)"
    );
    let probe = &services["postgres"]["healthcheck"]["test"];
    assert!(
        probe.to_string().contains("127.0.0.1"),
        "pg_isready must ask over TCP: {probe}"
    );
    assert_eq!(
        gateway["healthcheck"]["test"],
        json!(["CMD", "promptgate", "healthcheck"])
    );
}

#[test]
fn config_mistakes_are_refused_at_start_with_a_reason() {
    let dir = std::env::temp_dir().join(format!("promptgate-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let listen = format!("127.0.0.1:{}", free_port());
    let stderr_of = |cmd: &mut Command| -> String {
        let out = cmd.output().unwrap();
        assert!(!out.status.success(), "started although it should not");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };

    // A default model nobody configured: every send would 404.
    let err = stderr_of(
        promptgate()
            .arg("serve")
            .env("PROMPTGATE_LISTEN", &listen)
            .env("DATABASE_URL", "sqlite::memory:")
            .env("PROMPTGATE_DEFAULT_MODEL", "gtp-4"),
    );
    assert!(
        err.contains("default_model") && err.contains("gtp-4") && err.contains("demo"),
        "{err}"
    );

    // A SQLite file that is not there, without mode=rwc: no silent new database.
    let missing = dir.join("nowhere/gw.db");
    let err = stderr_of(
        promptgate()
            .arg("serve")
            .env("PROMPTGATE_LISTEN", &listen)
            .env("DATABASE_URL", format!("sqlite://{}", missing.display())),
    );
    assert!(
        err.contains(&missing.display().to_string()) && err.contains("mode=rwc"),
        "{err}"
    );

    // A provider whose key variable is unset, unless it is marked keyless.
    let config = |keyless: bool| {
        let path = dir.join(format!("keyless-{keyless}.toml"));
        std::fs::write(
            &path,
            format!(
                "{}\n[[providers]]\nname = \"local\"\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\
                 api_key_env = \"PROMPTGATE_TEST_UNSET_KEY\"\nkeyless = {keyless}\n",
                promptgate_server::config::EMBEDDED_DEFAULT
            ),
        )
        .unwrap();
        path
    };
    let err = stderr_of(
        promptgate()
            .args(["--config"])
            .arg(config(false))
            .arg("serve")
            .env("PROMPTGATE_LISTEN", &listen)
            .env("DATABASE_URL", "sqlite::memory:")
            .env_remove("PROMPTGATE_TEST_UNSET_KEY"),
    );
    assert!(
        err.contains("PROMPTGATE_TEST_UNSET_KEY") && err.contains("keyless"),
        "{err}"
    );
    let ok = promptgate()
        .args(["--config"])
        .arg(config(true))
        .arg("migrate")
        .env("DATABASE_URL", "sqlite::memory:")
        .output()
        .unwrap();
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `promptgate users ARGS...` in tokens mode on `db` and returns its output.
fn users_cmd(db: &str, args: &[&str]) -> String {
    users_cmd_in(db, Some("tokens"), args)
}

/// Runs `promptgate users ARGS...` on `db` in auth `mode` (`None`: the default) and returns its
/// output; a failure fails the test with what the command wrote.
fn users_cmd_in(db: &str, mode: Option<&str>, args: &[&str]) -> String {
    let mut cmd = promptgate();
    cmd.arg("users").args(args).env("DATABASE_URL", db);
    if let Some(mode) = mode {
        cmd.env("PROMPTGATE_AUTH_MODE", mode);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn token_in(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("token: "))
        .unwrap_or_else(|| panic!("no token line in {stdout:?}"))
        .to_owned()
}

#[tokio::test]
async fn users_list_rotate_and_revoke_change_which_tokens_a_running_server_accepts() {
    common::init();
    let (dir, db) = scratch_db("rotate");
    let ada_first = token_in(&users_cmd(&db, &["create", "ada"]));
    let bob = token_in(&users_cmd(&db, &["create", "bob"]));

    let listed = users_cmd(&db, &["list"]);
    for name in ["ada", "bob"] {
        let line = listed
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("{name} is not listed: {listed}"));
        assert!(line.trim_end().ends_with(" 1"), "one token each: {line}");
    }
    assert!(!listed.contains("pg_"), "a listing never shows tokens: {listed}");

    let (_server, base) = serve_ready_with_tokens(&db).await;
    let http = reqwest::Client::new();
    let status = |token: String| get_status(&http, format!("{base}/v1/settings"), token);
    assert_eq!(status(ada_first.clone()).await, 200);

    let rotated = users_cmd(&db, &["rotate", "ada"]);
    let ada_second = token_in(&rotated);
    assert_ne!(ada_second, ada_first);
    assert_eq!(
        status(ada_first.clone()).await,
        401,
        "the old token stops working"
    );
    assert_eq!(status(ada_second.clone()).await, 200);

    let revoked = users_cmd(&db, &["revoke", "ada"]);
    assert!(revoked.contains("revoked 1 token"), "{revoked}");
    assert_eq!(status(ada_second).await, 401);
    assert_eq!(status(bob).await, 200, "other users keep their tokens");

    let out = promptgate()
        .args(["users", "revoke", "nobody"])
        .env("DATABASE_URL", &db)
        .env("PROMPTGATE_AUTH_MODE", "tokens")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nobody"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn users_create_in_single_user_mode_says_the_token_is_not_used() {
    let (dir, db) = scratch_db("single");
    let stdout = users_cmd_in(&db, None, &["create", "ada"]);
    assert!(stdout.contains("single_user mode"), "{stdout}");
    assert!(stdout.contains("auth.mode = \"tokens\""), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The start-up log up to the first line containing `needle`. A thread keeps draining the pipe
/// afterwards, so the server never writes into a closed one.
async fn read_log_until(stderr: std::process::ChildStderr, needle: &str) -> String {
    use std::io::BufRead;
    let (found, seen) = tokio::sync::oneshot::channel();
    let needle = needle.to_owned();
    std::thread::spawn(move || {
        let mut log = String::new();
        let mut found = Some(found);
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            log.push_str(&line);
            log.push('\n');
            if line.contains(&needle)
                && let Some(found) = found.take()
            {
                let _ = found.send(Ok(log.clone()));
            }
        }
        if let Some(found) = found {
            let _ = found.send(Err(log));
        }
    });
    match seen.await.unwrap() {
        Ok(log) => log,
        Err(log) => panic!("the log ended without the line:\n{log}"),
    }
}

/// `serve --listen` wins over PROMPTGATE_LISTEN, and the log names the URL to open: the app's when
/// it is built, the API's with how to build the app otherwise.
#[tokio::test]
async fn serve_listen_picks_the_port_and_the_log_says_where_to_open_the_app() {
    common::init();
    let dir = std::env::temp_dir().join(format!("promptgate-listen-{}", std::process::id()));
    let app = dir.join("app");
    std::fs::create_dir_all(&app).unwrap();
    std::fs::write(app.join("index.html"), "<!doctype html><h1>the app</h1>").unwrap();
    let config = dir.join("with-app.toml");
    let embedded = std::fs::read_to_string(repo_root().join("config/promptgate.toml")).unwrap();
    std::fs::write(
        &config,
        format!("{embedded}\n[ui]\ndir = {:?}\n", app.display().to_string()),
    )
    .unwrap();
    let http = reqwest::Client::new();

    for (with_app, expected) in [(true, "for the app"), (false, "the web app is not built")] {
        let port = free_port();
        let mut cmd = promptgate();
        cmd.arg("serve")
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .env(
                "DATABASE_URL",
                format!("sqlite://{}/gw.db?mode=rwc", dir.display()),
            )
            // A different port in the environment: the flag is what counts.
            .env("PROMPTGATE_LISTEN", format!("127.0.0.1:{}", free_port()))
            .env("PROMPTGATE_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if with_app {
            cmd.arg("--config").arg(&config);
        }
        let mut server = Killed(cmd.spawn().unwrap());
        let stderr = server.0.stderr.take().unwrap();
        let log = read_log_until(stderr, expected).await;
        let url = format!("http://127.0.0.1:{port}/");
        assert!(
            log.contains(&format!("open {url} for the app")) == with_app,
            "{log}"
        );
        assert!(log.contains(&url), "{log}");
        let res = http.get(&url).send().await.unwrap();
        if with_app {
            assert!(res.text().await.unwrap().contains("the app"));
        } else {
            assert_eq!(res.status(), 404);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// An HTTP server on loopback that looks like an MCP server of the `initialize` era (it refuses
/// `server/discover`) and refuses the handshake with 422 and `body`, as a broken server behind an
/// internal proxy might.
async fn failing_server(body: &'static str) -> std::net::SocketAddr {
    let app = axum::Router::new().fallback(move |request: String| async move {
        if request.contains("server/discover") {
            (axum::http::StatusCode::BAD_REQUEST, "")
        } else {
            (axum::http::StatusCode::UNPROCESSABLE_ENTITY, body)
        }
    });
    common::serve_router(app).await
}

#[tokio::test]
async fn what_a_failing_mcp_server_answers_stays_out_of_the_log_and_one_line_says_what_failed() {
    common::init();
    const SECRET: &str = "internal-trace: db=10.0.0.9 password=hunter2";
    let mcp = failing_server(SECRET).await;
    let (dir, db) = scratch_db("mcp-log");
    std::fs::create_dir_all(&dir).unwrap();
    let log_path = dir.join("stderr.log");
    let (server, base) = serve_ready(&db, |cmd| {
        cmd.env("PROMPTGATE_LOG", "info")
            .stderr(Stdio::from(std::fs::File::create(&log_path).unwrap()));
    })
    .await;
    let http = reqwest::Client::new();
    let res = http
        .post(format!("{base}/v1/mcp-servers"))
        .json(&json!({"name": "broken", "url": format!("http://{mcp}/mcp")}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let probe: Value = http
        .post(format!(
            "{base}/v1/mcp-servers/{}/probe",
            res.json::<Value>().await.unwrap()["id"].as_str().unwrap()
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(!probe.to_string().contains("hunter2"), "{probe}");
    // A send discovers the server's tools, which fails, and the turn goes on without them.
    let res = http
        .post(format!("{base}/v1/chat"))
        .json(&common::use_chat_body("mcp-log", "Hello", "demo"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.text().await.unwrap().contains("[DONE]"));
    drop(server);

    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        !log.contains("hunter2"),
        "the MCP server's answer reached the log:\n{log}"
    );
    assert!(
        log.lines()
            .any(|l| l.contains("MCP server is down") && l.contains("422")),
        "no line says what failed:\n{log}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn the_command_line_makes_the_first_admin_who_manages_users_over_the_api() {
    common::init();
    let (dir, db) = scratch_db("admin");
    let root = token_in(&users_cmd(&db, &["create", "root", "--admin"]));
    let ada = token_in(&users_cmd(&db, &["create", "ada"]));
    let (_server, base) = serve_ready_with_tokens(&db).await;
    let http = reqwest::Client::new();
    let users = |token: String| get_status(&http, format!("{base}/v1/admin/users"), token);
    assert_eq!(users(root.clone()).await, 200);
    assert_eq!(users(ada.clone()).await, 403);

    let made = users_cmd(&db, &["admin", "ada"]);
    assert!(made.contains("is an admin"), "{made}");
    assert_eq!(
        users(ada.clone()).await,
        200,
        "the running server sees the new role at once"
    );
    users_cmd(&db, &["admin", "ada", "--revoke"]);
    assert_eq!(users(ada).await, 403);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The status of a `GET` of `url` with `token` as the bearer.
async fn get_status(http: &reqwest::Client, url: String, token: String) -> u16 {
    http.get(url)
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}
