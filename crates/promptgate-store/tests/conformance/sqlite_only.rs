//! Behaviour only the embedded backend has: files that persist, and the in-memory database.

use crate::common::*;
use promptgate_store::testing::TestDb;

#[tokio::test]
async fn sqlite_file_keeps_data_across_reopen() {
    let db = TestDb::sqlite().await;
    assert_eq!(db.backend(), Backend::Sqlite);
    let alice = user(&db, "Alice").await;
    let token = db.issue_token(&alice).await.unwrap();
    thread(&db, &alice, "kept", None, Some("Kept")).await;
    say(&db, &alice, "kept", Role::User, "persist the searchable words").await;
    let url = db.sqlite_url().unwrap();
    db.store().close().await;

    let reopened = Store::connect(&url).await.unwrap();
    reopened.migrate().await.unwrap();
    assert_eq!(reopened.user_by_token(&token).await.unwrap().unwrap().id, alice);
    assert_eq!(reopened.list_messages(&alice, "kept").await.unwrap().len(), 1);
    let hits = reopened
        .search_messages(&alice, &["kept".to_owned()], "searchable", 8)
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    reopened.close().await;
    db.close().await;
}

#[tokio::test]
async fn sqlite_creates_missing_directories_and_uses_wal() {
    let dir = std::env::temp_dir().join(format!("promptgate-dirs-{}", uuid::Uuid::new_v4()));
    // Both spellings of a file URL work, and neither needs an explicit `mode=rwc`.
    for (url, file) in [
        (
            format!("sqlite://{}", dir.join("a/b/one.db").display()),
            dir.join("a/b/one.db"),
        ),
        (
            format!("sqlite:{}", dir.join("c/two.db").display()),
            dir.join("c/two.db"),
        ),
    ] {
        let store = Store::connect(&url).await.unwrap();
        store.migrate().await.unwrap();
        user(&store, "Alice").await;
        assert!(file.exists(), "{url}");
        // Write-ahead logging lets readers proceed while a turn writes.
        let wal = file.with_extension("db-wal");
        assert!(wal.exists(), "no {} after a write", wal.display());
        store.close().await;
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// The file holds every user's conversations and token hashes: nobody but its owner may read it,
/// nor the write-ahead log and shared-memory files beside it.
#[cfg(unix)]
#[tokio::test]
async fn a_new_sqlite_file_and_its_companions_are_readable_by_the_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("promptgate-mode-{}", uuid::Uuid::new_v4()));
    let file = dir.join("private.db");
    let store = Store::connect(&format!("sqlite://{}", file.display()))
        .await
        .unwrap();
    store.migrate().await.unwrap();
    user(&store, "Alice").await;
    for companion in ["db", "db-wal", "db-shm"] {
        let path = file.with_extension(companion);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{} is {mode:o}", path.display());
    }
    store.close().await;
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn sqlite_memory_keeps_one_database() {
    let store = Store::connect("sqlite::memory:").await.unwrap();
    store.migrate().await.unwrap();
    // Many calls, some concurrent: they all see the one migrated database.
    let alice = user(&store, "Alice").await;
    let reads = (0..8).map(|_| store.get_settings(&alice));
    for settings in futures::future::join_all(reads).await {
        assert_eq!(settings.unwrap(), UserSettings::default());
    }
    thread(&store, &alice, "t", None, None).await;
    say(&store, &alice, "t", Role::User, "hi").await;
    assert_eq!(store.list_messages(&alice, "t").await.unwrap().len(), 1);
}

#[tokio::test]
async fn unknown_database_urls_are_rejected() {
    let err = Store::connect("mysql://localhost/db").await.unwrap_err();
    assert!(matches!(err, StoreError::Invalid(_)), "{err}");
}

#[tokio::test]
async fn postgres_backend_is_reported() {
    let db = TestDb::postgres().await;
    assert_eq!(db.backend(), Backend::Postgres);
    db.close().await;
}

#[tokio::test]
async fn sqlite_file_takes_many_concurrent_writers_without_lock_errors() {
    let db = promptgate_store::testing::TestDb::sqlite().await;
    let alice = user(&db, "Alice").await;
    // What 100 first sends arriving together do: open a thread, store the message, store the answer.
    let sends = (0..100).map(|i| {
        let (store, alice) = (db.store().clone(), alice.clone());
        async move {
            let id = format!("t{i}");
            store
                .create_thread(
                    &alice,
                    &NewThread {
                        id: Some(id.clone()),
                        project_id: None,
                        title: None,
                    },
                )
                .await?;
            for role in [Role::User, Role::Assistant] {
                store
                    .append_message(
                        &alice,
                        &NewMessage {
                            id: None,
                            thread_id: id.clone(),
                            role,
                            parts: json!([{"type": "text", "text": format!("n{i}")}]),
                            metadata: json!({}),
                            status: None,
                        },
                    )
                    .await?;
            }
            Ok::<_, StoreError>(())
        }
    });
    for outcome in futures::future::join_all(sends).await {
        outcome.unwrap();
    }
    assert_eq!(
        db.list_threads_page(&alice, None, None, 1000)
            .await
            .unwrap()
            .items
            .len(),
        100
    );
    assert_eq!(db.list_messages(&alice, "t42").await.unwrap().len(), 2);
    db.close().await;
}

/// Holds SQLite's write lock on another connection and changes a row under it, as a send of another
/// instance would; the change is committed when the returned connection gets `COMMIT`.
async fn another_writer(url: &str) -> sqlx::AnyConnection {
    use sqlx::Connection;
    let mut conn = sqlx::AnyConnection::connect(url).await.unwrap();
    sqlx::query("BEGIN IMMEDIATE").execute(&mut conn).await.unwrap();
    sqlx::query("UPDATE users SET name = name")
        .execute(&mut conn)
        .await
        .unwrap();
    conn
}

#[tokio::test]
async fn writes_that_read_first_wait_for_another_writer_instead_of_failing() {
    let db = TestDb::sqlite().await;
    let alice = user(&db, "Alice").await;
    let url = db.sqlite_url().unwrap();
    // A transaction that read before it wrote could not take the lock once the other writer had
    // committed under it ("database is locked", a 500 to the user); one that asks for the lock at
    // its start waits for it.
    let mut holder = another_writer(&url).await;
    let (store, owner) = (db.store().clone(), alice.clone());
    let creating = tokio::spawn(async move { store.create_key(&owner, "laptop", None).await });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    sqlx::query("COMMIT").execute(&mut holder).await.unwrap();
    creating.await.unwrap().unwrap();

    let mut holder = another_writer(&url).await;
    let (store, owner) = (db.store().clone(), alice.clone());
    let revoking = tokio::spawn(async move { store.revoke_tokens(&owner).await });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    sqlx::query("COMMIT").execute(&mut holder).await.unwrap();
    assert_eq!(
        revoking.await.unwrap().unwrap(),
        1,
        "the key made above is revoked"
    );
    db.close().await;
}
