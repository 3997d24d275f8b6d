use std::collections::BTreeMap;

use crate::common::*;

conformance! {
    async fn send_context_has_everything_a_send_needs(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        store.seed_system_models(&[model("demo")]).await.unwrap();
        let mut settings = UserSettings::default();
        settings.preferred_name = "Ali".to_owned();
        settings.integrations_do_not_ask = true;
        store.put_settings(&alice, &settings).await.unwrap();
        store.put_integration(&alice, Provider::Google, IntegrationState { connected: true, enabled: true }).await.unwrap();
        let garden = store
            .create_project(&alice, &NewProject { name: "Garden".to_owned(), instructions: Some("Metric units.".to_owned()) })
            .await
            .unwrap();
        thread(store, &alice, "main", Some(&garden.id), Some("Roses")).await;
        thread(store, &alice, "sib-1", Some(&garden.id), None).await;
        thread(store, &alice, "sib-2", Some(&garden.id), None).await;
        thread(store, &alice, "loose", None, None).await;
        let first = say(store, &alice, "main", Role::User, "Hi").await;
        let second = say(store, &alice, "main", Role::Assistant, "Hello").await;
        let on = store.create_skill(&alice, &skill("on", true)).await.unwrap();
        store.create_skill(&alice, &skill("off", false)).await.unwrap();
        let headers = BTreeMap::from([("X-Key".to_owned(), "k".to_owned())]);
        let enabled = NewMcpServer {
            name: "Docs".to_owned(),
            url: "http://127.0.0.1:9/mcp".to_owned(),
            enabled: true,
            headers,
            bearer_token: Some("t".to_owned()),
        };
        let server = store.create_mcp_server(&alice, &enabled).await.unwrap();
        store.create_mcp_server(&alice, &NewMcpServer { enabled: false, ..enabled.clone() }).await.unwrap();

        // Spawned, as a server handler would run it: the future must be Send.
        let spawned = tokio::spawn({
            let (store, alice) = (store.clone(), alice.clone());
            async move { store.load_send_context(&alice, "main", "demo").await }
        });
        let ctx = spawned.await.unwrap().unwrap();
        assert_eq!(ctx.settings, settings);
        assert!(ctx.integrations.google.usable() && ctx.integrations.do_not_ask);
        assert_eq!(ctx.model.unwrap().id, "demo");
        assert_eq!(ctx.thread.unwrap().title.as_deref(), Some("Roses"));
        assert_eq!(ctx.project, Some(garden.clone()));
        assert_eq!(ctx.sibling_count, 2);
        assert_eq!(ctx.skills, vec![on]);
        assert_eq!(ctx.mcp_servers.len(), 1);
        assert_eq!(ctx.mcp_servers[0].0, server);
        assert_eq!(ctx.mcp_servers[0].1.bearer_token.as_deref(), Some("t"));
        assert_eq!(ctx.history, vec![first, second]);

        let loose = store.load_send_context(&alice, "loose", "missing-model").await.unwrap();
        assert!(loose.model.is_none() && loose.project.is_none() && loose.history.is_empty());
        assert_eq!(loose.sibling_count, 0);
        assert!(loose.thread.is_some());

        // A thread that does not exist yet (or is someone else's) loads as absent, with the user's defaults.
        let fresh = store.load_send_context(&bob, "main", "demo").await.unwrap();
        assert!(fresh.thread.is_none() && fresh.project.is_none() && fresh.history.is_empty());
        assert_eq!(fresh.settings, UserSettings::default());
        assert!(fresh.skills.is_empty() && fresh.mcp_servers.is_empty());
        assert!(fresh.model.is_some(), "system models are everyone's");
    }
}
