//! The task list and artifacts, each user's own.

use crate::common::*;

conformance! {
    async fn tasks_add_list_delete(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        let items: Vec<String> = ["Buy milk", "Call Mum", "File taxes"].map(String::from).to_vec();
        let added = store.add_tasks(&alice, &items).await.unwrap();
        assert_eq!(added.iter().map(|t| t.item.as_str()).collect::<Vec<_>>(), ["Buy milk", "Call Mum", "File taxes"]);
        assert!(added.iter().all(|t| !t.completed));
        assert_eq!(store.list_tasks(&alice).await.unwrap(), added);
        assert!(store.list_tasks(&bob).await.unwrap().is_empty());

        let ids: Vec<String> = added.iter().map(|t| t.id.clone()).collect();
        assert_eq!(store.delete_tasks(&bob, &ids).await.unwrap(), 0, "Bob cannot delete Alice's tasks");
        assert_eq!(store.delete_tasks(&alice, &[ids[1].clone(), "unknown".to_owned()]).await.unwrap(), 1);
        assert_eq!(store.list_tasks(&alice).await.unwrap(), vec![added[0].clone(), added[2].clone()]);
        assert_eq!(store.delete_tasks(&alice, &[]).await.unwrap(), 0);

        // Bad batches change nothing.
        let with_blank = vec!["ok".to_owned(), "  ".to_owned()];
        assert!(matches!(store.add_tasks(&alice, &with_blank).await, Err(StoreError::Invalid(_))));
        let too_many = vec!["x".to_owned(); 101];
        assert!(matches!(store.add_tasks(&alice, &too_many).await, Err(StoreError::Invalid(_))));
        assert!(matches!(store.add_tasks("no-such-user", &items).await, Err(StoreError::NotFound)));
        assert_eq!(store.list_tasks(&alice).await.unwrap().len(), 2);
    }

    async fn artifacts_belong_to_their_user(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        thread(store, &alice, "chat", None, None).await;
        let loose = store.create_artifact(&alice, None, "Table", "<table></table>").await.unwrap();
        let attached = store.create_artifact(&alice, Some("chat"), "Chart", "<svg/>").await.unwrap();
        assert_eq!(store.get_artifact(&alice, &loose.id).await.unwrap(), Some(loose.clone()));
        assert_eq!(store.get_artifact(&alice, &attached.id).await.unwrap().unwrap().thread_id.as_deref(), Some("chat"));
        assert_eq!(store.get_artifact(&bob, &loose.id).await.unwrap(), None);
        assert!(matches!(store.create_artifact(&bob, Some("chat"), "x", "<p/>").await, Err(StoreError::NotFound)));
        let big = "x".repeat(3 * 1024 * 1024);
        assert!(matches!(store.create_artifact(&alice, None, "Big", &big).await, Err(StoreError::Invalid(_))));
    }
}
