//! Tool approvals: kept per user and thread, answered once (a second answer, another user's or a
//! cancelled one finds nothing), expired ones marked.

use std::time::Duration;

use crate::common::*;

const HOUR: Duration = Duration::from_secs(3600);

fn waiting(id: &str, call: &str) -> NewApproval {
    NewApproval {
        approval_id: id.to_owned(),
        tool_call_id: call.to_owned(),
        tool_name: "fs_delete".to_owned(),
        input: r#"{"path":"a.txt"}"#.to_owned(),
        model_id: "gpt".to_owned(),
    }
}

fn ids(approvals: &[StoredApproval]) -> Vec<&str> {
    approvals.iter().map(|a| a.approval_id.as_str()).collect()
}

conformance! {
    async fn an_approval_is_answered_once_and_only_by_its_user(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        thread(store, &alice, "t1", None, None).await;
        store.keep_approvals(&alice, "t1", "m1", &[waiting("a1", "c1"), waiting("a2", "c2")], HOUR).await.unwrap();
        // A save retried after a lost reply keeps nothing twice.
        store.keep_approvals(&alice, "t1", "m1", &[waiting("a1", "c1")], HOUR).await.unwrap();
        let pending = store.pending_approvals(&alice, "t1").await.unwrap();
        assert_eq!(ids(&pending), ["a1", "a2"]);
        assert_eq!(pending[0].tool_call_id, "c1");
        assert_eq!(pending[0].message_id, "m1");
        assert_eq!(pending[0].input, r#"{"path":"a.txt"}"#);
        assert_eq!(pending[0].model_id, "gpt");
        assert!(!pending[0].expired);
        assert!(store.pending_approvals(&bob, "t1").await.unwrap().is_empty());
        let both = vec!["a1".to_owned(), "a2".to_owned()];
        assert!(!store.use_approvals(&bob, "t1", &both).await.unwrap(), "another user's approval");
        assert!(store.use_approvals(&alice, "t1", &both).await.unwrap());
        assert!(!store.use_approvals(&alice, "t1", &both).await.unwrap(), "a replayed answer");
        assert!(store.pending_approvals(&alice, "t1").await.unwrap().is_empty());
    }

    async fn a_partly_unknown_answer_takes_nothing(store: &Store) {
        let alice = user(store, "Alice").await;
        thread(store, &alice, "t1", None, None).await;
        store.keep_approvals(&alice, "t1", "m1", &[waiting("a1", "c1")], HOUR).await.unwrap();
        let forged = vec!["a1".to_owned(), "made-up".to_owned()];
        assert!(!store.use_approvals(&alice, "t1", &forged).await.unwrap());
        assert_eq!(ids(&store.pending_approvals(&alice, "t1").await.unwrap()), ["a1"]);
    }

    async fn stop_cancels_what_waits_and_an_expired_approval_is_marked(store: &Store) {
        let alice = user(store, "Alice").await;
        thread(store, &alice, "t1", None, None).await;
        store.keep_approvals(&alice, "t1", "m1", &[waiting("a1", "c1")], Duration::ZERO).await.unwrap();
        let pending = store.pending_approvals(&alice, "t1").await.unwrap();
        assert!(pending[0].expired);
        let cancelled = store.cancel_approvals(&alice, "t1").await.unwrap();
        assert_eq!(ids(&cancelled), ["a1"]);
        assert!(store.cancel_approvals(&alice, "t1").await.unwrap().is_empty());
        assert!(!store.use_approvals(&alice, "t1", &["a1".to_owned()]).await.unwrap());
        // The periodic expiry keeps a freshly expired row (a late answer is still told so).
        store.expire_turn_claims().await.unwrap();
    }
}

conformance! {
    async fn a_send_reads_the_wait_and_the_users_usage_with_its_thread(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        store.seed_system_models(&[model("demo")]).await.unwrap();
        thread(store, &alice, "t1", None, None).await;
        thread(store, &alice, "t2", None, None).await;
        say(store, &alice, "t1", Role::User, "Delete a.txt").await;
        let checks = |user: String, thread: &'static str| {
            let store = store.clone();
            async move {
                let ctx = store.load_send_context(&user, Some(thread), None, "demo", None).await.unwrap();
                ctx.checks.unwrap()
            }
        };
        let before = checks(alice.clone(), "t1").await;
        assert!(!before.approval_waiting);
        assert_eq!(before.storage, store.storage_usage(&alice).await.unwrap());
        assert_eq!(before.storage.threads, 2);

        store.keep_approvals(&alice, "t1", "m1", &[waiting("a1", "c1")], HOUR).await.unwrap();
        assert!(checks(alice.clone(), "t1").await.approval_waiting, "the call waits");
        assert!(!checks(alice.clone(), "t2").await.approval_waiting, "another thread of hers does not");
        assert!(!checks(bob.clone(), "t1").await.approval_waiting, "nor Bob's thread of the same id");

        // A thread not created yet still brings the usage its quota is checked against.
        let fresh = checks(alice.clone(), "new").await;
        assert!(!fresh.approval_waiting);
        assert_eq!(fresh.storage, store.storage_usage(&alice).await.unwrap());
        assert_eq!(checks(bob.clone(), "new").await.storage, StorageUsage::default());

        // Answered, or past its time, a call no longer holds the thread.
        assert!(store.use_approvals(&alice, "t1", &["a1".to_owned()]).await.unwrap());
        assert!(!checks(alice.clone(), "t1").await.approval_waiting);
        store.keep_approvals(&alice, "t2", "m2", &[waiting("a2", "c2")], Duration::ZERO).await.unwrap();
        assert!(!checks(alice.clone(), "t2").await.approval_waiting, "an expired call");
    }
}
