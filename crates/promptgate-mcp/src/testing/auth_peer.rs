//! The outside peers built on the official SDKs: `tests/peers/py_auth_peer.py` (Python) and
//! `tests/peers/ts_auth_peer.mjs` (TypeScript), each an authorization server and MCP resource server
//! in one, and `tests/peers/py_elicit_peer.py`, whose tools ask the user mid-call.

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
    python_auth_peer_with(python, access_seconds, &[]).await
}

/// [`python_auth_peer`] with more of its options (`--no-registration`: the authorization server
/// knows only the clients registered through its `/test/clients` hook).
pub async fn python_auth_peer_with(
    python: &str,
    access_seconds: u64,
    options: &[&str],
) -> (PeerProcess, String) {
    let seconds = access_seconds.to_string();
    let mut args = vec![seconds.as_str()];
    args.extend_from_slice(options);
    start_peer(python, "py_auth_peer.py", &args, |status| {
        status == StatusCode::UNAUTHORIZED
    })
    .await
}

/// Starts `tests/peers/py_elicit_peer.py` (tools that ask the user mid-call) and waits until it
/// answers. Returns it with its MCP url.
pub async fn python_elicit_peer(python: &str) -> (PeerProcess, String) {
    start_peer(python, "py_elicit_peer.py", &[], |_| true).await
}

/// How to run the TypeScript auth peer.
#[derive(Debug, Clone, Copy)]
pub struct TsAuthPeer {
    /// How long its access tokens are good for.
    pub access_seconds: u64,
    /// Its metadata offers Client ID Metadata Documents, and it reads them.
    pub cimd: bool,
    /// Its `/authorize` shows a page with an "Allow" button rather than consenting at once.
    pub consent_page: bool,
}

impl Default for TsAuthPeer {
    fn default() -> Self {
        TsAuthPeer {
            access_seconds: 3600,
            cimd: false,
            consent_page: false,
        }
    }
}

/// Starts `tests/peers/ts_auth_peer.mjs` (the TypeScript SDK's auth router in front of an MCP
/// server) with `node` on a free port, and waits until it challenges a tokenless request. Returns
/// it with its MCP url.
pub async fn typescript_auth_peer(node: &str, options: TsAuthPeer) -> (PeerProcess, String) {
    let seconds = options.access_seconds.to_string();
    let mut args = vec![seconds.as_str()];
    if options.cimd {
        args.push("--cimd");
    }
    if options.consent_page {
        args.push("--consent-page");
    }
    start_peer(node, "ts_auth_peer.mjs", &args, |status| {
        status == StatusCode::UNAUTHORIZED
    })
    .await
}

/// Runs `script` of `tests/peers` with `program`, a free port and `args`, until an HTTP answer to
/// an empty POST on `/mcp` passes `ready`.
async fn start_peer(
    program: &str,
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
        Command::new(program)
            .arg(&script)
            .arg(port.to_string())
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start a peer"),
    );
    let url = format!("http://127.0.0.1:{port}/mcp");
    let client = reqwest::Client::new();
    // A minute: a Python peer imports its SDK first, which took over 15 s on a loaded 2-core CI box.
    for _ in 0..600 {
        let answer = client.post(&url).json(&serde_json::json!({})).send().await;
        if answer.is_ok_and(|a| ready(a.status())) {
            return (peer, url);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the peer {} at {url} never answered", script.display());
}
