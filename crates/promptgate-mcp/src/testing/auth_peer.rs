//! The outside Python peers, built on the official Python SDK: `tests/peers/py_auth_peer.py`, an
//! authorization server and MCP resource server in one, and `tests/peers/py_elicit_peer.py`, whose
//! tools ask the user mid-call.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use axum::http::StatusCode;

/// A peer process, stopped when dropped.
pub struct PeerProcess(Child);

impl Drop for PeerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the auth peer with `python` on a free port, its access tokens good for
/// `access_seconds`, and waits until it challenges a tokenless request. Returns it with its MCP
/// url.
pub async fn python_auth_peer(python: &str, access_seconds: u64) -> (PeerProcess, String) {
    start_python_peer(
        python,
        "py_auth_peer.py",
        &[&access_seconds.to_string()],
        |status| status == StatusCode::UNAUTHORIZED,
    )
    .await
}

/// Starts `tests/peers/py_elicit_peer.py` (tools that ask the user mid-call) and waits until it
/// answers. Returns it with its MCP url.
pub async fn python_elicit_peer(python: &str) -> (PeerProcess, String) {
    start_python_peer(python, "py_elicit_peer.py", &[], |_| true).await
}

/// Runs `script` of `tests/peers` with a free port and `args`, until an HTTP answer to an empty
/// POST on `/mcp` passes `ready`.
async fn start_python_peer(
    python: &str,
    script: &str,
    args: &[&str],
    ready: fn(StatusCode) -> bool,
) -> (PeerProcess, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/peers")
        .join(script);
    let port = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let peer = PeerProcess(
        Command::new(python)
            .arg(&script)
            .arg(port.to_string())
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start a Python peer"),
    );
    let url = format!("http://127.0.0.1:{port}/mcp");
    let client = reqwest::Client::new();
    for _ in 0..150 {
        let answer = client.post(&url).json(&serde_json::json!({})).send().await;
        if answer.is_ok_and(|a| ready(a.status())) {
            return (peer, url);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the Python peer at {url} never answered");
}
