//! A thread's workspace kept in the store: what one turn leaves, the next finds, also after the
//! gateway restarts; other threads and users never see it, and deleting the thread deletes it.
//! Runs on SQLite (a temp file) and Postgres (scripts/with-postgres.sh).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use crate::common;

use common::now;
use promptgate_core::storage::StorageError;
use promptgate_store::testing::TestDb;
use promptgate_store::{NewThread, Store};
use promptgate_workspace::{ShellPool, ThreadWorkspace, WorkspaceError, WorkspaceLimits, WorkspaceSession};
use serde_json::json;

async fn new_thread(store: &Store, user: &str, id: &str) {
    store
        .create_thread(
            user,
            &NewThread {
                id: Some(id.to_owned()),
                project_id: None,
                title: None,
            },
        )
        .await
        .unwrap();
}

async fn open(store: &Store, user: &str, thread: &str) -> ThreadWorkspace {
    ThreadWorkspace::load(store, user, thread, WorkspaceLimits::default())
        .await
        .unwrap()
}

/// A send's session on `user`'s `thread` (none: a session whose files are not kept), with the
/// default limits.
fn send_session(store: &Store, user: &str, thread: Option<&str>) -> WorkspaceSession {
    WorkspaceSession::new(
        Arc::new(store.clone()),
        user,
        thread,
        WorkspaceLimits::default(),
        ShellPool::default(),
    )
}

async fn bash(ws: &mut ThreadWorkspace, command: &str) -> String {
    let out = ws
        .run_tool(
            &ShellPool::default(),
            "bash",
            &json!({ "command": command }),
            now(),
        )
        .await
        .unwrap();
    assert!(!out.is_error, "{command}: {:?}", out.output);
    out.output["stdout"].as_str().unwrap().to_owned()
}

async fn kept_across_turns_and_restarts(db: TestDb) {
    let alice = db.create_user("Alice").await.unwrap().id;
    let bob = db.create_user("Bob").await.unwrap().id;
    new_thread(&db, &alice, "chat").await;
    new_thread(&db, &alice, "other").await;

    // First turn: files written by a tool and by the shell, then saved.
    let mut ws = open(&db, &alice, "chat").await;
    let wrote = ws
        .run_tool(
            &ShellPool::default(),
            "write",
            &json!({"path": "data/n.txt", "content": "3\n1\n2\n"}),
            now(),
        )
        .await
        .unwrap();
    assert!(!wrote.is_error, "{wrote:?}");
    bash(
        &mut ws,
        "sort -n data/n.txt > data/sorted.txt && mkdir -p empty && echo tmp > /tmp/t",
    )
    .await;
    ws.save(db.store()).await.unwrap();

    // The gateway restarts: a new connection to the same database.
    let reopened = db.another_instance().await;
    let mut ws = open(&reopened, &alice, "chat").await;
    assert_eq!(
        bash(&mut ws, "cat data/sorted.txt; ls -d empty; cat /tmp/t").await,
        "1\n2\n3\nempty\ntmp\n"
    );

    // Second turn: an edit and a removal are saved as such.
    let edited = ws
        .run_tool(
            &ShellPool::default(),
            "edit",
            &json!({"path": "data/n.txt", "edits": [{"oldText": "3\n", "newText": "30\n"}]}),
            now(),
        )
        .await
        .unwrap();
    assert!(!edited.is_error, "{edited:?}");
    bash(&mut ws, "rm -r empty data/sorted.txt").await;
    ws.save(&reopened).await.unwrap();
    let mut ws = open(&db, &alice, "chat").await;
    assert_eq!(
        bash(&mut ws, "find /home/user | sort; cat data/n.txt").await,
        "/home/user\n/home/user/data\n/home/user/data/n.txt\n30\n1\n2\n"
    );

    // Another thread starts empty; another user cannot open this one.
    let mut other = open(&db, &alice, "other").await;
    assert_eq!(bash(&mut other, "ls -A").await, "");
    let denied = ThreadWorkspace::load(db.store(), &bob, "chat", WorkspaceLimits::default()).await;
    assert!(
        matches!(denied, Err(WorkspaceError::Store(StorageError::NotFound))),
        "{denied:?}"
    );

    // Deleting the thread deletes its files; a save for it afterwards is refused.
    db.delete_thread(&alice, "chat").await.unwrap();
    assert!(
        matches!(ws.save(db.store()).await, Ok(())),
        "nothing pending, nothing to refuse"
    );
    bash(&mut ws, "echo late > late.txt").await;
    assert!(matches!(
        ws.save(db.store()).await,
        Err(WorkspaceError::Store(StorageError::NotFound))
    ));
    new_thread(&db, &alice, "chat").await;
    let mut fresh = open(&db, &alice, "chat").await;
    assert_eq!(bash(&mut fresh, "ls -A").await, "");

    reopened.close().await;
    db.close().await;
}

async fn a_session_saves_after_every_call(db: TestDb) {
    let alice = db.create_user("Alice").await.unwrap().id;
    new_thread(&db, &alice, "chat").await;
    let session = send_session(&db, &alice, Some("chat"));
    let wrote = session
        .call("write", &json!({"path": "a.txt", "content": "b\na\nb\n"}), now())
        .await
        .unwrap();
    assert_eq!(wrote.model_text(), "wrote 6 bytes to /home/user/a.txt");

    // Another send (another session) sees the file at once: the call saved it.
    let other = send_session(&db, &alice, Some("chat"));
    let counted = other
        .call(
            "bash",
            &json!({"command": "sort a.txt | uniq -c | sort -rn"}),
            now(),
        )
        .await
        .unwrap();
    assert_eq!(counted.model_text(), "      2 b\n      1 a\n");
    let failed = other
        .call("bash", &json!({"command": "cat missing.txt"}), now())
        .await
        .unwrap();
    assert!(
        failed.error_message().is_none(),
        "a failed command is still an answer"
    );
    assert!(
        failed.model_text().contains("[stderr]") && failed.model_text().ends_with("[exit code 1]"),
        "{}",
        failed.model_text()
    );
    let refused = other
        .call("read", &json!({"path": "../../../x"}), now())
        .await
        .unwrap();
    assert!(refused.error_message().unwrap().contains("leaves the workspace"));
    assert!(matches!(
        other.call("skill", &json!({}), now()).await,
        Err(WorkspaceError::UnknownTool(_))
    ));

    // Without a thread, the files last for the session only and nothing is stored.
    let facade = send_session(&db, &alice, None);
    facade
        .call("write", &json!({"path": "a.txt", "content": "facade"}), now())
        .await
        .unwrap();
    let read = facade
        .call("read", &json!({"path": "a.txt"}), now())
        .await
        .unwrap();
    assert_eq!(read.model_text(), "facade");
    facade.flush().await.unwrap();
    let stored = db.load_workspace(&alice, "chat").await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].content, b"b\na\nb\n");

    // A session on someone else's thread fails to load, and does nothing.
    let bob = db.create_user("Bob").await.unwrap().id;
    let intruder = send_session(&db, &bob, Some("chat"));
    let denied = intruder
        .call("write", &json!({"path": "a.txt", "content": "bob"}), now())
        .await;
    assert!(
        matches!(denied, Err(WorkspaceError::Store(StorageError::NotFound))),
        "{denied:?}"
    );
    assert_eq!(
        db.load_workspace(&alice, "chat").await.unwrap()[0].content,
        b"b\na\nb\n"
    );
    db.close().await;
}

promptgate_store::on_both_backends!(kept_across_turns_and_restarts, a_session_saves_after_every_call);
