//! The `promptgate` binary as a user runs it: `users create`, `serve`, then curl-like calls.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

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

#[tokio::test]
async fn embedded_default_serves_settings_and_the_prompt_on_loopback() {
    common::init();
    let dir = std::env::temp_dir().join(format!("promptgate-cli-{}", std::process::id()));
    let db = format!("sqlite://{}/gw.db?mode=rwc", dir.display());
    let port = free_port();
    let _server = Server(
        promptgate()
            .arg("serve")
            .env("DATABASE_URL", &db)
            .env("PROMPTGATE_LISTEN", format!("127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let http = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    wait_ready(&http, &base).await;

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
    let preview: Value = http
        .get(format!("{base}/v1/threads/c1/prompt?model=demo"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
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
    let dir = std::env::temp_dir().join(format!("promptgate-users-{}", std::process::id()));
    let db = format!("sqlite://{}/gw.db?mode=rwc", dir.display());
    let out = promptgate()
        .args(["users", "create", "ada"])
        .env("DATABASE_URL", &db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let token = stdout
        .lines()
        .find_map(|l| l.strip_prefix("token: "))
        .unwrap_or_else(|| panic!("no token line in {stdout:?}"))
        .to_owned();

    let port = free_port();
    let _server = Server(
        promptgate()
            .arg("serve")
            .env("DATABASE_URL", &db)
            .env("PROMPTGATE_LISTEN", format!("127.0.0.1:{port}"))
            .env("PROMPTGATE_AUTH_MODE", "tokens")
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let http = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    wait_ready(&http, &base).await;
    assert_eq!(
        http.get(format!("{base}/v1/settings"))
            .send()
            .await
            .unwrap()
            .status(),
        401
    );
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

/// Runs `promptgate users ARGS...` in tokens mode on `db` and returns its output.
fn users_cmd(db: &str, args: &[&str]) -> String {
    let out = promptgate()
        .arg("users")
        .args(args)
        .env("DATABASE_URL", db)
        .env("PROMPTGATE_AUTH_MODE", "tokens")
        .output()
        .unwrap();
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
    let dir = std::env::temp_dir().join(format!("promptgate-rotate-{}", std::process::id()));
    let db = format!("sqlite://{}/gw.db?mode=rwc", dir.display());
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

    let port = free_port();
    let _server = Server(
        promptgate()
            .arg("serve")
            .env("DATABASE_URL", &db)
            .env("PROMPTGATE_LISTEN", format!("127.0.0.1:{port}"))
            .env("PROMPTGATE_AUTH_MODE", "tokens")
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let http = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    wait_ready(&http, &base).await;
    let status = |token: String| {
        let http = http.clone();
        let url = format!("{base}/v1/settings");
        async move {
            http.get(url)
                .bearer_auth(token)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
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
    let dir = std::env::temp_dir().join(format!("promptgate-single-{}", std::process::id()));
    let db = format!("sqlite://{}/gw.db?mode=rwc", dir.display());
    let out = promptgate()
        .args(["users", "create", "ada"])
        .env("DATABASE_URL", &db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("single_user mode"), "{stdout}");
    assert!(stdout.contains("auth.mode = \"tokens\""), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}
