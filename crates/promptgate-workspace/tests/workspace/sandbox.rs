//! What the workspace must refuse: reaching outside it (host files, processes, environment), the
//! network, and its limits on time, memory, output and file sizes. Each escape is tried the way a
//! model would try it, through the tools.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::{call, error, sh, text, ws};
use promptgate_workspace::{Workspace, WorkspaceLimits};
use serde_json::json;

/// A file on the host, outside any workspace, that no call may read, list or change.
struct HostFile {
    dir: std::path::PathBuf,
    path: std::path::PathBuf,
}

impl HostFile {
    fn new() -> HostFile {
        let dir = std::env::temp_dir().join(format!("pg-ws-host-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("host-secret.txt");
        std::fs::write(&path, "host secret\n").unwrap();
        HostFile { dir, path }
    }
}

impl Drop for HostFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test]
async fn tool_paths_cannot_climb_out_of_the_workspace() {
    let mut ws = ws();
    for path in [
        "../../../etc/passwd",
        "/../etc/passwd",
        "a/../../../../x",
        "/home/user/../../..",
    ] {
        let read = call(&mut ws, "read", json!({ "path": path })).await;
        assert!(error(&read).contains("leaves the workspace"), "{path}: {read:?}");
        let write = call(&mut ws, "write", json!({ "path": path, "content": "x" })).await;
        assert!(
            error(&write).contains("leaves the workspace"),
            "{path}: {write:?}"
        );
        let edit = call(
            &mut ws,
            "edit",
            json!({ "path": path, "edits": [{"oldText": "a", "newText": "b"}] }),
        )
        .await;
        assert!(error(&edit).contains("leaves the workspace"), "{path}: {edit:?}");
    }
    // Absolute paths name the workspace's own tree, never the host's.
    let host = HostFile::new();
    let host_path = host.path.to_str().unwrap();
    let read = call(&mut ws, "read", json!({ "path": host_path })).await;
    assert!(error(&read).contains("no such file"), "{read:?}");
    let read = call(&mut ws, "read", json!({ "path": "/etc/passwd" })).await;
    assert!(error(&read).contains("no such file"), "{read:?}");
    let wrote = call(
        &mut ws,
        "write",
        json!({ "path": host_path, "content": "overwritten" }),
    )
    .await;
    assert!(!wrote.is_error, "{wrote:?}");
    assert_eq!(
        std::fs::read_to_string(&host.path).unwrap(),
        "host secret\n",
        "the host file is untouched"
    );
    // Device paths belong to the shell, not the workspace.
    let dev = call(&mut ws, "write", json!({ "path": "/dev/null", "content": "x" })).await;
    assert!(error(&dev).contains("device path"), "{dev:?}");
}

#[tokio::test]
async fn the_shell_sees_no_host_files() {
    let host = HostFile::new();
    let host_path = host.path.to_str().unwrap();
    let mut ws = ws();
    let (out, _, code) = sh(&mut ws, &format!("cat {host_path}")).await;
    assert_ne!(code, 0);
    assert!(!out.contains("host secret"));
    for command in [
        "cat /etc/passwd",
        "cat /proc/self/environ",
        "cat /proc/1/cmdline",
        "cat ../../../../../etc/hostname",
        "ls /root",
    ] {
        let (out, _, code) = sh(&mut ws, command).await;
        assert_ne!(code, 0, "{command}: {out}");
        assert_eq!(out, "", "{command}");
    }
    // Climbing with cd stops at the workspace root, which holds only the workspace.
    let (out, _, code) = sh(&mut ws, "cd ../../../../..; pwd; ls /").await;
    assert_eq!(code, 0);
    assert_eq!(out, "/\ndev\nhome\ntmp\n");
    let (out, _, _) = sh(
        &mut ws,
        "find / -name 'host-secret*' | wc -l; grep -rl 'host secret' / | wc -l",
    )
    .await;
    assert_eq!(out, "0\n0\n");
    // A write to the host file's path lands in the workspace; the host file stays as it was.
    let (_, err, code) = sh(
        &mut ws,
        &format!("mkdir -p $(dirname {host_path}) && echo changed > {host_path}"),
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(&host.path).unwrap(), "host secret\n");
    assert_eq!(
        text(&call(&mut ws, "read", json!({ "path": host_path })).await),
        "changed\n"
    );
}

#[tokio::test]
async fn the_shell_runs_no_host_programs_and_sees_no_host_environment() {
    let mut ws = ws();
    for command in [
        "/bin/ls /",
        "/usr/bin/env",
        "ps",
        "kill -9 1",
        "python3 -c 'print(1)'",
        "perl -e 1",
        "ln -s /etc/passwd link",
        "chmod +x x",
        "sleep 1",
        "env",
    ] {
        let (out, _, code) = sh(&mut ws, command).await;
        assert_eq!(code, 127, "{command} ran: {out}");
    }
    // The test process's own environment (cargo sets these for it) does not reach the shell.
    assert!(std::env::var("CARGO_MANIFEST_DIR").is_ok());
    let (out, _, _) = sh(
        &mut ws,
        "echo \"[$CARGO_MANIFEST_DIR][$CARGO_PKG_NAME][$HOME][$USER]\"",
    )
    .await;
    assert_eq!(out, "[][][/home/user][user]\n");
    // `bash -c` and `exec` stay inside the same interpreter and its limits.
    let (out, _, code) = sh(&mut ws, "bash -c 'cat /etc/passwd' || echo refused").await;
    assert_eq!((out.as_str(), code), ("refused\n", 0));
}

#[tokio::test]
async fn the_shell_reaches_no_network() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut ws = ws();
    for command in [
        format!("curl http://127.0.0.1:{port}/"),
        format!("wget -O- http://127.0.0.1:{port}/"),
        format!("nc 127.0.0.1 {port}"),
        format!("ssh -p {port} 127.0.0.1"),
        format!("git clone http://127.0.0.1:{port}/x"),
    ] {
        let (_, _, code) = sh(&mut ws, &command).await;
        assert_eq!(code, 127, "{command}");
    }
    // bash's /dev/tcp redirection is only a (missing) file here.
    let (_, _, code) = sh(&mut ws, &format!("echo hello > /dev/tcp/127.0.0.1/{port}")).await;
    assert_ne!(code, 0);
    let (_, _, code) = sh(&mut ws, &format!("cat < /dev/tcp/127.0.0.1/{port}")).await;
    assert_ne!(code, 0);
    let accepted = tokio::time::timeout(Duration::from_millis(300), listener.accept()).await;
    assert!(accepted.is_err(), "something connected to the loopback listener");
}

fn small(limits: WorkspaceLimits) -> Workspace {
    Workspace::new(limits)
}

#[tokio::test]
async fn endless_loops_and_slow_scripts_are_stopped_and_change_nothing() {
    let mut ws = small(WorkspaceLimits {
        bash_timeout: Duration::from_secs(2),
        ..WorkspaceLimits::default()
    });
    call(&mut ws, "write", json!({"path": "keep.txt", "content": "kept\n"})).await;

    // Stopped by the loop budget.
    let (_, err, code) = sh(&mut ws, "echo gone > keep.txt; while true; do :; done").await;
    assert_eq!(code, 124, "{err}");
    assert!(err.contains("nothing was changed"), "{err}");

    // Stopped by the clock: many short loops stay under the iteration caps but not under the time.
    let mut ws_slow = small(WorkspaceLimits {
        bash_timeout: Duration::from_secs(1),
        max_loop_iterations: usize::MAX,
        max_total_loop_iterations: usize::MAX,
        max_commands: usize::MAX,
        ..WorkspaceLimits::default()
    });
    let started = Instant::now();
    let (_, err, code) = sh(&mut ws_slow, "while true; do echo x > /dev/null; done").await;
    assert_eq!(code, 124, "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );

    // Unbounded recursion is stopped too.
    let (_, err, code) = sh(&mut ws, "f() { f; }; f").await;
    assert_ne!(code, 0, "{err}");

    let read = call(&mut ws, "read", json!({"path": "keep.txt"})).await;
    assert_eq!(
        text(&read),
        "kept\n",
        "an aborted call leaves the files as they were"
    );
}

#[tokio::test]
async fn shell_memory_is_bounded() {
    let mut ws = small(WorkspaceLimits {
        max_shell_memory_bytes: 1024 * 1024,
        ..WorkspaceLimits::default()
    });
    let (out, err, code) = sh(
        &mut ws,
        "echo gone > keep.txt; s=aaaaaaaaaaaaaaaa; for i in $(seq 1 40); do s=\"$s$s\"; done; echo ${#s}",
    )
    .await;
    assert_ne!(code, 0, "grew to {out}");
    assert!(err.contains("nothing was changed"), "{err}");
    let (out, _, _) = sh(&mut ws, "ls").await;
    assert_eq!(out, "", "the stopped call left no file");
}

#[tokio::test]
async fn output_is_cut_to_the_limit() {
    let mut ws = small(WorkspaceLimits {
        max_output_bytes: 1000,
        ..WorkspaceLimits::default()
    });
    let (out, _, _) = sh(&mut ws, "seq 1 100000").await;
    assert!(out.len() < 1100, "{} bytes came back", out.len());
    assert!(out.starts_with("1\n2\n3\n"));
    assert!(out.contains("[output cut"), "{out}");

    // `read` pages long files instead of returning them whole.
    call(&mut ws, "bash", json!({"command": "seq 1 5000 > long.txt"})).await;
    let read = call(&mut ws, "read", json!({"path": "long.txt"})).await;
    let shown = text(&read);
    assert!(shown.len() < 1200, "{} bytes came back", shown.len());
    assert!(shown.contains("continue with offset"), "{shown}");
}

#[tokio::test]
async fn file_sizes_and_counts_are_bounded() {
    let mut ws = small(WorkspaceLimits {
        max_file_bytes: 10_000,
        max_total_bytes: 25_000,
        max_entries: 20,
        ..WorkspaceLimits::default()
    });
    let big = "x".repeat(10_001);
    let wrote = call(&mut ws, "write", json!({"path": "big.txt", "content": big})).await;
    assert!(error(&wrote).contains("at most 10000 bytes"), "{wrote:?}");

    let (_, err, code) = sh(&mut ws, "seq 1 100000 > big.txt").await;
    assert_ne!(code, 0, "{err}");
    let (out, _, _) = sh(&mut ws, "ls").await;
    assert!(!out.contains("big.txt"), "{out}");

    // Three files under the per-file cap that together break the total.
    for name in ["a", "b"] {
        let ok = call(
            &mut ws,
            "write",
            json!({"path": name, "content": "y".repeat(9_000)}),
        )
        .await;
        assert!(!ok.is_error, "{ok:?}");
    }
    let third = call(
        &mut ws,
        "write",
        json!({"path": "c", "content": "y".repeat(9_000)}),
    )
    .await;
    assert!(error(&third).contains("in all"), "{third:?}");
    let (_, err, code) = sh(&mut ws, "head -c 9000 a > c").await;
    assert_ne!(code, 0, "{err}");

    // Too many files: the call fails and none of its files stay.
    let (_, err, code) = sh(
        &mut ws,
        "mkdir many && for i in $(seq 1 30); do touch many/f$i; done",
    )
    .await;
    assert_ne!(code, 0, "{err}");
    let (out, _, _) = sh(&mut ws, "ls; ls many 2>/dev/null | wc -l").await;
    assert_eq!(out, "a\nb\n0\n");
}
