//! Integrations (with their sealed OAuth blobs) and MCP servers (with write-only headers and token).

use std::collections::BTreeMap;

use crate::common::*;

fn server(name: &str, enabled: bool) -> NewMcpServer {
    NewMcpServer {
        enabled,
        headers: BTreeMap::from([
            ("X-Api-Key".to_owned(), "header-secret-1".to_owned()),
            ("X-Team".to_owned(), "header-secret-2".to_owned()),
        ]),
        bearer_token: Some("bearer-secret".to_owned()),
        ..mcp_server(name)
    }
}

conformance! {
    async fn integrations_and_their_secrets(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        assert_eq!(store.get_integration(&alice, IntegrationProvider::Google).await.unwrap(), IntegrationState::default());
        assert_eq!(store.integration_status(&alice).await.unwrap().render(), "READY");

        store.put_integration_secret(&alice, IntegrationProvider::Google, "sealed-blob").await.unwrap();
        let connected = IntegrationState { connected: true, enabled: false };
        store.put_integration(&alice, IntegrationProvider::Google, connected).await.unwrap();
        store
            .put_integration(&alice, IntegrationProvider::Microsoft, IntegrationState { connected: true, enabled: true })
            .await
            .unwrap();
        assert_eq!(store.get_integration(&alice, IntegrationProvider::Google).await.unwrap(), connected);
        assert_eq!(
            store.get_integration_secret(&alice, IntegrationProvider::Google).await.unwrap().as_deref(),
            Some("sealed-blob"),
            "changing the state keeps the secret"
        );

        let mut settings = UserSettings::default();
        settings.integrations_do_not_ask = true;
        store.put_settings(&alice, &settings).await.unwrap();
        let status = store.integration_status(&alice).await.unwrap();
        assert_eq!(status.google, connected);
        assert!(status.microsoft.usable());
        assert!(status.do_not_ask);
        assert_eq!(status.render(), "GOOGLE_DISABLED, PROMPTS_DISABLED");

        // Bob sees none of it.
        assert_eq!(store.get_integration(&bob, IntegrationProvider::Google).await.unwrap(), IntegrationState::default());
        assert_eq!(store.get_integration_secret(&bob, IntegrationProvider::Google).await.unwrap(), None);
        assert_eq!(store.integration_status(&bob).await.unwrap().render(), "READY");

        store.put_integration_secret(&alice, IntegrationProvider::Google, "rotated").await.unwrap();
        assert_eq!(store.get_integration_secret(&alice, IntegrationProvider::Google).await.unwrap().as_deref(), Some("rotated"));
        store.delete_integration_secret(&alice, IntegrationProvider::Google).await.unwrap();
        assert_eq!(store.get_integration_secret(&alice, IntegrationProvider::Google).await.unwrap(), None);
        assert_eq!(store.get_integration(&alice, IntegrationProvider::Google).await.unwrap(), connected);
        store.delete_integration_secret(&bob, IntegrationProvider::Microsoft).await.unwrap();

        let nobody = "no-such-user";
        assert!(matches!(store.put_integration(nobody, IntegrationProvider::Google, connected).await, Err(StoreError::NotFound)));
        assert!(matches!(store.put_integration_secret(nobody, IntegrationProvider::Google, "x").await, Err(StoreError::NotFound)));
        let oversized = "x".repeat(65 * 1024);
        assert!(matches!(
            store.put_integration_secret(&alice, IntegrationProvider::Google, &oversized).await,
            Err(StoreError::Invalid(_))
        ));
    }

    async fn mcp_secrets_are_write_only(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        let created = store.create_mcp_server(&alice, &server("Docs", true)).await.unwrap();
        assert_eq!(created.header_names, ["X-Api-Key", "X-Team"]);
        assert!(created.has_bearer_token);

        let listed = store.list_mcp_servers(&alice).await.unwrap();
        assert_eq!(listed, vec![created.clone()]);
        let fetched = store.get_mcp_server(&alice, &created.id).await.unwrap().unwrap();
        assert_eq!(fetched, created);
        // The rows the API is built from hold no secret in any form.
        let shown = format!("{:?}", (listed, fetched));
        for secret in ["header-secret-1", "header-secret-2", "bearer-secret"] {
            assert!(!shown.contains(secret), "{secret} leaked: {shown}");
        }
        let secrets = store.mcp_server_secrets(&alice, &created.id).await.unwrap();
        assert_eq!(secrets.headers["X-Api-Key"], "header-secret-1");
        assert_eq!(secrets.bearer_token.as_deref(), Some("bearer-secret"));
        assert!(!format!("{secrets:?}").contains("secret-1"), "Debug must not print secrets");

        // An update replaces the secrets as well.
        let mut changed = server("Docs v2", false);
        changed.headers.remove("X-Team");
        changed.bearer_token = None;
        let updated = store.update_mcp_server(&alice, &created.id, &changed).await.unwrap();
        assert_eq!((updated.name.as_str(), updated.enabled), ("Docs v2", false));
        assert_eq!(updated.header_names, ["X-Api-Key"]);
        assert!(!updated.has_bearer_token);
        assert_eq!(updated.created_at, created.created_at);
        assert_eq!(store.mcp_server_secrets(&alice, &created.id).await.unwrap().bearer_token, None);

        // Bob can neither see nor touch Alice's server.
        assert!(store.list_mcp_servers(&bob).await.unwrap().is_empty());
        assert_eq!(store.get_mcp_server(&bob, &created.id).await.unwrap(), None);
        assert!(matches!(store.mcp_server_secrets(&bob, &created.id).await, Err(StoreError::NotFound)));
        assert!(matches!(store.update_mcp_server(&bob, &created.id, &changed).await, Err(StoreError::NotFound)));
        assert!(matches!(store.delete_mcp_server(&bob, &created.id).await, Err(StoreError::NotFound)));

        let mut bad = server("Bad", true);
        bad.url = "file:///etc/passwd".to_owned();
        assert!(matches!(store.create_mcp_server(&alice, &bad).await, Err(StoreError::Invalid(_))));
        let mut bad = server("Bad", true);
        bad.headers.insert("X-Evil".to_owned(), "a\r\nInjected: yes".to_owned());
        assert!(matches!(store.create_mcp_server(&alice, &bad).await, Err(StoreError::Invalid(_))));

        store.delete_mcp_server(&alice, &created.id).await.unwrap();
        assert!(store.list_mcp_servers(&alice).await.unwrap().is_empty());
        assert!(matches!(store.delete_mcp_server(&alice, &created.id).await, Err(StoreError::NotFound)));
    }

    async fn a_user_registers_at_most_the_servers_the_limit_allows(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        for name in ["One", "Two"] {
            assert!(store.create_mcp_server_within(&alice, &server(name, true), 2).await.unwrap().is_some());
        }
        // Disabled servers count too: enabling one needs no place.
        assert_eq!(store.create_mcp_server_within(&alice, &server("Three", false), 2).await.unwrap(), None);
        assert_eq!(store.list_mcp_servers(&alice).await.unwrap().len(), 2);
        assert!(store.create_mcp_server_within(&bob, &server("Bob's", true), 2).await.unwrap().is_some());

        let first = store.list_mcp_servers(&alice).await.unwrap().remove(0);
        store.delete_mcp_server(&alice, &first.id).await.unwrap();
        assert!(store.create_mcp_server_within(&alice, &server("Three", true), 2).await.unwrap().is_some());

        // Registrations racing for the last places take no more than there are.
        let carol = user(store, "Carol").await;
        let racing = (0..8).map(|i| {
            let (store, carol) = (store.clone(), carol.clone());
            async move { store.create_mcp_server_within(&carol, &server(&format!("S{i}"), true), 3).await }
        });
        let created = futures::future::join_all(racing).await;
        assert_eq!(created.iter().filter(|r| matches!(r, Ok(Some(_)))).count(), 3, "{created:?}");
        assert_eq!(store.list_mcp_servers(&carol).await.unwrap().len(), 3);

        assert!(matches!(
            store.create_mcp_server_within("no-such-user", &server("X", true), 2).await,
            Err(StoreError::NotFound)
        ));
    }

    async fn mcp_secrets_are_sealed_and_need_the_box(store: &Store) {
        let alice = user(store, "Alice").await;
        let created = store.create_mcp_server(&alice, &server("Docs", true)).await.unwrap();
        assert_eq!(store.count_sealed_mcp_servers().await.unwrap(), 1);
        assert_eq!(store.count_plain_mcp_secrets().await.unwrap(), 0);

        // Without the box a sealed row cannot be opened, and no secret is written in clear.
        let bare = promptgate_store::testing::without_box(store);
        assert!(matches!(bare.mcp_server_secrets(&alice, &created.id).await, Err(StoreError::Database(_))));
        assert!(matches!(bare.create_mcp_server(&alice, &server("More", true)).await, Err(StoreError::Invalid(_))));
        let mut open = server("Open", true);
        open.headers.clear();
        open.bearer_token = None;
        let open = bare.create_mcp_server(&alice, &open).await.unwrap();
        assert_eq!(bare.mcp_server_secrets(&alice, &open.id).await.unwrap().bearer_token, None);
        assert!(matches!(bare.seal_plain_mcp_secrets().await, Err(StoreError::Invalid(_))));

        // Listing needs no key: header names stay readable.
        assert_eq!(bare.get_mcp_server(&alice, &created.id).await.unwrap().unwrap().header_names, ["X-Api-Key", "X-Team"]);
        let report = store.seal_plain_mcp_secrets().await.unwrap();
        assert_eq!(report.already_sealed, 1);
    }
}
