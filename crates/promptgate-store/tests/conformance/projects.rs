//! Projects and threads: create, read, update, delete, and each user's own.

use crate::common::*;

conformance! {
    async fn projects_crud_and_isolation(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        let first = project(store, &alice, "Garden").await;
        let second = store
            .create_project(&alice, &NewProject { name: "Taxes".to_owned(), instructions: Some("Be exact.".to_owned()) })
            .await
            .unwrap();
        assert_eq!(store.list_projects(&alice).await.unwrap(), vec![first.clone(), second.clone()]);
        assert_eq!(store.get_project(&alice, &second.id).await.unwrap(), Some(second.clone()));

        let change = NewProject { name: "Taxes 2026".to_owned(), instructions: None };
        let updated = store.update_project(&alice, &second.id, &change).await.unwrap();
        assert_eq!(store.get_project(&alice, &second.id).await.unwrap(), Some(updated));

        assert!(store.list_projects(&bob).await.unwrap().is_empty());
        assert_eq!(store.get_project(&bob, &first.id).await.unwrap(), None);
        assert!(matches!(store.update_project(&bob, &first.id, &change).await, Err(StoreError::NotFound)));
        assert!(matches!(store.delete_project(&bob, &first.id).await, Err(StoreError::NotFound)));
        let empty = NewProject { name: " ".to_owned(), instructions: None };
        assert!(matches!(store.create_project(&alice, &empty).await, Err(StoreError::Invalid(_))));

        // Deleting a project keeps its threads, now without a project.
        thread(store, &alice, "t1", Some(&first.id), Some("Roses")).await;
        store.delete_project(&alice, &first.id).await.unwrap();
        assert_eq!(store.get_project(&alice, &first.id).await.unwrap(), None);
        assert_eq!(store.get_thread(&alice, "t1").await.unwrap().unwrap().project_id, None);
    }

    async fn threads_crud_and_isolation(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        let garden = project(store, &alice, "Garden").await;
        let generated = store.create_thread(&alice, &NewThread::default()).await.unwrap();
        assert_eq!(generated.id.len(), 36, "a UUID is generated: {}", generated.id);
        thread(store, &alice, "t-1", Some(&garden.id), Some("Roses")).await;
        thread(store, &alice, "t-2", Some(&garden.id), None).await;

        let dup = NewThread { id: Some("t-1".to_owned()), ..NewThread::default() };
        assert!(matches!(store.create_thread(&alice, &dup).await, Err(StoreError::Conflict(_))));
        // Ids are per user: Bob may use the same id, and learns nothing about Alice's.
        store.create_thread(&bob, &dup).await.unwrap();
        let bad = NewThread { id: Some("../etc".to_owned()), ..NewThread::default() };
        assert!(matches!(store.create_thread(&alice, &bad).await, Err(StoreError::Invalid(_))));
        let foreign = NewThread { project_id: Some(garden.id.clone()), ..NewThread::default() };
        assert!(matches!(store.create_thread(&bob, &foreign).await, Err(StoreError::NotFound)));
        let unknown = NewThread { project_id: Some("nope".to_owned()), ..NewThread::default() };
        assert!(matches!(store.create_thread(&alice, &unknown).await, Err(StoreError::NotFound)));

        let ids = |ts: Vec<Thread>| ts.into_iter().map(|t| t.id).collect::<Vec<_>>();
        assert_eq!(ids(store.list_threads_page(&alice, None, None, 1000).await.unwrap().items), ["t-2", "t-1", generated.id.as_str()]);
        assert_eq!(ids(store.list_threads_page(&alice, Some(&garden.id), None, 1000).await.unwrap().items), ["t-2", "t-1"]);
        assert_eq!(ids(store.list_threads_page(&bob, None, None, 1000).await.unwrap().items), ["t-1"]);

        // A new message moves a thread to the top.
        say(store, &alice, "t-1", Role::User, "hello").await;
        assert_eq!(ids(store.list_threads_page(&alice, None, None, 1000).await.unwrap().items)[0], "t-1");

        // Partial updates: absent fields stay, null clears.
        let renamed = store
            .update_thread(&alice, "t-1", &ThreadUpdate { title: Some(Some("Tulips".to_owned())), project_id: None })
            .await
            .unwrap();
        assert_eq!((renamed.title.as_deref(), renamed.project_id.as_deref()), (Some("Tulips"), Some(garden.id.as_str())));
        let update = ThreadUpdate { title: None, project_id: Some(None) };
        let moved = store.update_thread(&alice, "t-1", &update).await.unwrap();
        assert_eq!((moved.title.as_deref(), moved.project_id.as_deref()), (Some("Tulips"), None));
        assert_eq!(store.get_thread(&alice, "t-1").await.unwrap(), Some(moved.clone()));
        let back = ThreadUpdate { title: Some(None), project_id: Some(Some(garden.id.clone())) };
        let back = store.update_thread(&alice, "t-1", &back).await.unwrap();
        assert_eq!((back.title, back.project_id), (None, Some(garden.id.clone())));

        assert_eq!(store.get_thread(&bob, "t-2").await.unwrap(), None);
        let retitle = ThreadUpdate { title: Some(Some("mine".to_owned())), project_id: None };
        assert!(matches!(store.update_thread(&bob, "t-2", &retitle).await, Err(StoreError::NotFound)));
        let steal = ThreadUpdate { title: None, project_id: Some(Some(garden.id.clone())) };
        assert!(matches!(store.update_thread(&bob, "t-1", &steal).await, Err(StoreError::NotFound)));
        assert!(matches!(store.delete_thread(&bob, "t-2").await, Err(StoreError::NotFound)));

        let mut siblings = store.sibling_threads(&alice, &garden.id, "t-1").await.unwrap();
        assert_eq!(siblings, vec![("t-2".to_owned(), None)]);
        siblings = store.sibling_threads(&bob, &garden.id, "x").await.unwrap();
        assert!(siblings.is_empty());
    }

    async fn deleting_a_thread_removes_its_messages(store: &Store) {
        let alice = user(store, "Alice").await;
        thread(store, &alice, "doomed", None, Some("Doomed")).await;
        say(store, &alice, "doomed", Role::User, "remember the lighthouse").await;
        let art = store.create_artifact(&alice, Some("doomed"), "Chart", "<p>x</p>").await.unwrap();
        store.delete_thread(&alice, "doomed").await.unwrap();
        assert_eq!(store.get_thread(&alice, "doomed").await.unwrap(), None);
        assert!(matches!(store.list_messages(&alice, "doomed").await, Err(StoreError::NotFound)));
        assert_eq!(store.get_artifact(&alice, &art.id).await.unwrap(), None);
        assert!(matches!(store.delete_thread(&alice, "doomed").await, Err(StoreError::NotFound)));

        // The id is free again and starts empty; the old text is not searchable.
        thread(store, &alice, "doomed", None, None).await;
        assert!(store.list_messages(&alice, "doomed").await.unwrap().is_empty());
        let hits = store.search_messages(&alice, &["doomed".to_owned()], "lighthouse", 8).await.unwrap();
        assert!(hits.is_empty(), "{hits:?}");
    }
}
