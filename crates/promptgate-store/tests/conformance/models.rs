//! System models shared and read-only, users' models their own.

use crate::common::*;

conformance! {
    async fn system_models_are_shared_and_read_only(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        let mut demo = model("demo");
        demo.engine = Engine::Harness;
        demo.profile.tools_override = Some("Prefer the calculator.".to_owned());
        demo.profile.max_steps = Some(7);
        store.seed_system_models(&[demo.clone(), model("big")]).await.unwrap();

        for who in [&alice, &bob] {
            let listed = store.list_models(who).await.unwrap();
            assert_eq!(listed.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(), ["demo", "big"]);
            assert!(listed.iter().all(|m| m.system));
            let got = store.get_model(who, "demo").await.unwrap().unwrap();
            assert_eq!(got, Model { system: true, ..demo.clone() });
        }

        assert!(matches!(store.update_model(&alice, &demo).await, Err(StoreError::ReadOnly(_))));
        assert!(matches!(store.delete_model(&alice, "demo").await, Err(StoreError::ReadOnly(_))));
        assert!(matches!(store.create_model(&alice, &model("demo")).await, Err(StoreError::Conflict(_))));

        // Seeding again upserts by id.
        demo.name = "Demo, renamed".to_owned();
        store.seed_system_models(&[demo.clone()]).await.unwrap();
        assert_eq!(store.get_model(&bob, "demo").await.unwrap().unwrap().name, "Demo, renamed");
        assert_eq!(store.list_models(&bob).await.unwrap().len(), 2);
    }

    async fn users_own_their_models(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        let mut mine = model("my-model.v1");
        mine.tool_usage = 0;
        mine.reasoning = Some("high".to_owned());
        mine.profile.citation_reinforcement_enabled = true;
        mine.profile.provider_options =
            Some(serde_json::from_value(json!({ "top_p": 0.9, "seed": 7 })).unwrap());
        let created = store.create_model(&alice, &mine).await.unwrap();
        assert!(!created.system);
        assert_eq!(store.get_model(&alice, "my-model.v1").await.unwrap(), Some(created.clone()));
        assert_eq!(store.list_models(&alice).await.unwrap(), vec![created.clone()]);
        assert!(matches!(store.create_model(&alice, &mine).await, Err(StoreError::Conflict(_))));

        mine.name = "Renamed".to_owned();
        mine.engine = Engine::Harness;
        assert_eq!(store.update_model(&alice, &mine).await.unwrap().name, "Renamed");
        assert_eq!(store.get_model(&alice, &mine.id).await.unwrap().unwrap().engine, Engine::Harness);

        // Bob sees nothing, cannot change it, and has his own namespace.
        assert_eq!(store.get_model(&bob, &mine.id).await.unwrap(), None);
        assert!(store.list_models(&bob).await.unwrap().is_empty());
        assert!(matches!(store.update_model(&bob, &mine).await, Err(StoreError::NotFound)));
        assert!(matches!(store.delete_model(&bob, &mine.id).await, Err(StoreError::NotFound)));
        store.create_model(&bob, &model("my-model.v1")).await.unwrap();

        store.delete_model(&alice, &mine.id).await.unwrap();
        assert_eq!(store.get_model(&alice, &mine.id).await.unwrap(), None);
        assert!(matches!(store.delete_model(&alice, &mine.id).await, Err(StoreError::NotFound)));
        assert!(matches!(store.update_model(&alice, &mine).await, Err(StoreError::NotFound)));
        assert!(matches!(store.create_model(&alice, &model("has space")).await, Err(StoreError::Invalid(_))));
        assert!(matches!(store.create_model("no-such-user", &model("x")).await, Err(StoreError::NotFound)));
    }
}
