//! Each user's storage counters follow every write that changes what they keep, deletes cascaded
//! from a thread included, and never another user's writes.

use promptgate_core::storage::{ArtifactStore, NewArtifact, WorkspaceChanges, WorkspaceEntry};
use promptgate_store::StorageUsage;

use crate::common::*;

fn file(path: &str, bytes: usize) -> WorkspaceEntry {
    WorkspaceEntry {
        path: path.to_owned(),
        is_dir: false,
        content: vec![b'x'; bytes],
    }
}

conformance! {
    async fn usage_counts_what_a_user_keeps_and_deleting_gives_it_back(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        assert_eq!(store.storage_usage(&alice).await.unwrap(), StorageUsage::default());

        thread(store, &alice, "t1", None, None).await;
        say(store, &alice, "t1", Role::User, "héllo wörld").await;
        let after_message = store.storage_usage(&alice).await.unwrap();
        assert_eq!(after_message.threads, 1);
        assert!(after_message.bytes > 20, "parts and search text are counted: {after_message:?}");

        let changes = WorkspaceChanges { written: vec![file("/big.bin", 100_000)], removed: Vec::new() };
        store.save_workspace(&alice, "t1", &changes).await.unwrap();
        let artifacts: &dyn ArtifactStore = store;
        let html = "<p>".repeat(1_000);
        let chart = NewArtifact { thread_id: Some("t1"), title: "Chart", html: &html };
        artifacts.create_artifact(&alice, chart).await.unwrap();
        let full = store.storage_usage(&alice).await.unwrap();
        assert_eq!(full.bytes, after_message.bytes + 100_000 + "/big.bin".len() as u64 + 5 + 3_000);

        // A file written again is counted once, at its new size.
        let changes = WorkspaceChanges { written: vec![file("/big.bin", 10)], removed: Vec::new() };
        store.save_workspace(&alice, "t1", &changes).await.unwrap();
        assert_eq!(store.storage_usage(&alice).await.unwrap().bytes, full.bytes - 99_990);

        thread(store, &bob, "t1", None, None).await;
        say(store, &bob, "t1", Role::User, "mine").await;
        let bobs = store.storage_usage(&bob).await.unwrap();

        store.delete_thread(&alice, "t1").await.unwrap();
        assert_eq!(
            store.storage_usage(&alice).await.unwrap(),
            StorageUsage::default(),
            "the thread's messages, files and artifacts went with it"
        );
        assert_eq!(store.storage_usage(&bob).await.unwrap(), bobs, "Bob's usage is his own");
    }
}
