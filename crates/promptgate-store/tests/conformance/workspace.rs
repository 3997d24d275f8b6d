//! The harness workspace's files: round trips, ownership, and deletion with the thread.

use promptgate_core::storage::{StorageError, WorkspaceChanges, WorkspaceEntry, WorkspaceStore};

use crate::common::*;

fn file(path: &str, content: &[u8]) -> WorkspaceEntry {
    WorkspaceEntry {
        path: path.to_owned(),
        is_dir: false,
        content: content.to_vec(),
    }
}

fn dir(path: &str) -> WorkspaceEntry {
    WorkspaceEntry {
        path: path.to_owned(),
        is_dir: true,
        content: Vec::new(),
    }
}

conformance! {
    async fn workspace_files_round_trip_and_change(store: &Store) {
        let alice = user(store, "Alice").await;
        thread(store, &alice, "chat", None, None).await;
        assert!(store.load_workspace(&alice, "chat").await.unwrap().is_empty());

        let binary: Vec<u8> = (0..=255).collect();
        let first = WorkspaceChanges {
            written: vec![file("/home/user/b.bin", &binary), dir("/home/user/data"), file("/home/user/a.txt", b"one\n")],
            removed: vec![],
        };
        store.save_workspace(&alice, "chat", &first).await.unwrap();
        assert_eq!(
            store.load_workspace(&alice, "chat").await.unwrap(),
            vec![file("/home/user/a.txt", b"one\n"), file("/home/user/b.bin", &binary), dir("/home/user/data")],
            "sorted by path, bytes kept exactly"
        );

        // A replaced file, a removed one, and a path removed and written in the same run.
        let second = WorkspaceChanges {
            written: vec![file("/home/user/a.txt", b"two\n"), file("/home/user/data", b"now a file")],
            removed: vec!["/home/user/b.bin".to_owned(), "/home/user/data".to_owned()],
        };
        store.save_workspace(&alice, "chat", &second).await.unwrap();
        assert_eq!(
            store.load_workspace(&alice, "chat").await.unwrap(),
            vec![file("/home/user/a.txt", b"two\n"), file("/home/user/data", b"now a file")]
        );
    }

    async fn workspace_belongs_to_its_user_and_thread(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        thread(store, &alice, "chat", None, None).await;
        thread(store, &alice, "other", None, None).await;
        let changes = WorkspaceChanges { written: vec![file("/home/user/secret.txt", b"alice only")], removed: vec![] };
        store.save_workspace(&alice, "chat", &changes).await.unwrap();

        assert!(store.load_workspace(&alice, "other").await.unwrap().is_empty(), "threads do not share a workspace");
        assert!(matches!(store.load_workspace(&bob, "chat").await, Err(StoreError::NotFound)));
        assert!(matches!(store.save_workspace(&bob, "chat", &changes).await, Err(StoreError::NotFound)));
        assert!(matches!(store.load_workspace(&alice, "missing").await, Err(StoreError::NotFound)));

        let relative = WorkspaceChanges { written: vec![file("notes.txt", b"x")], removed: vec![] };
        assert!(matches!(store.save_workspace(&alice, "chat", &relative).await, Err(StoreError::Invalid(_))));
        let huge = WorkspaceChanges { written: vec![file("/big", &vec![0; MAX_WORKSPACE_FILE_BYTES + 1])], removed: vec![] };
        assert!(matches!(store.save_workspace(&alice, "chat", &huge).await, Err(StoreError::Invalid(_))));
        assert_eq!(store.load_workspace(&alice, "chat").await.unwrap().len(), 1, "rejected saves change nothing");
    }

    async fn deleting_the_thread_deletes_its_workspace(store: &Store) {
        let alice = user(store, "Alice").await;
        thread(store, &alice, "chat", None, None).await;
        let changes = WorkspaceChanges { written: vec![file("/home/user/a.txt", b"gone soon")], removed: vec![] };
        store.save_workspace(&alice, "chat", &changes).await.unwrap();
        store.delete_thread(&alice, "chat").await.unwrap();

        // A new thread with the same id starts empty: the old rows went with the old thread.
        thread(store, &alice, "chat", None, None).await;
        assert!(store.load_workspace(&alice, "chat").await.unwrap().is_empty());
    }

    async fn the_store_is_the_workspace_store(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        thread(store, &alice, "chat", None, None).await;
        let files: &dyn WorkspaceStore = store;
        let changes = WorkspaceChanges { written: vec![dir("/home/user/src"), file("/home/user/src/a.rs", b"fn main() {}")], removed: vec![] };
        files.save_workspace(&alice, "chat", &changes).await.unwrap();
        assert_eq!(files.load_workspace(&alice, "chat").await.unwrap(), changes.written);
        assert_eq!(files.load_workspace(&bob, "chat").await, Err(StorageError::NotFound));
        assert_eq!(files.save_workspace(&bob, "chat", &changes).await, Err(StorageError::NotFound));
        let relative = WorkspaceChanges { written: vec![file("notes.txt", b"x")], removed: vec![] };
        assert_eq!(
            files.save_workspace(&alice, "chat", &relative).await,
            Err(StorageError::Invalid("workspace path must be absolute and at most 4096 bytes".to_owned())),
            "the reason of a refusal reaches the workspace"
        );
    }
}
