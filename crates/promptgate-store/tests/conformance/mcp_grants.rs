//! MCP OAuth: the sealed grant per user and server, gone with its server, and a pending
//! authorization carrying the details its callback needs.

use std::time::Duration;

use promptgate_store::{OAuthPending, PendingLimits};

use crate::common::*;

conformance! {
    async fn an_mcp_grant_is_kept_per_user_and_server_and_goes_with_its_server(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        let notes = store.create_mcp_server(&alice, &mcp_server("Notes")).await.unwrap();
        let files = store.create_mcp_server(&alice, &mcp_server("Files")).await.unwrap();
        assert_eq!(store.get_mcp_grant(&alice, &notes.id).await.unwrap(), None);

        store.put_mcp_grant(&alice, &notes.id, "sealed-1").await.unwrap();
        store.put_mcp_grant(&alice, &notes.id, "sealed-2").await.unwrap();
        store.put_mcp_grant(&alice, &files.id, "sealed-files").await.unwrap();
        assert_eq!(store.get_mcp_grant(&alice, &notes.id).await.unwrap().as_deref(), Some("sealed-2"));
        assert_eq!(store.get_mcp_grant(&bob, &notes.id).await.unwrap(), None, "another user's grant is not theirs");
        let mut ids = vec![notes.id.clone(), files.id.clone()];
        ids.sort();
        assert_eq!(store.mcp_grant_server_ids(&alice).await.unwrap(), ids);
        assert!(store.mcp_grant_server_ids(&bob).await.unwrap().is_empty());

        store.delete_mcp_grant(&alice, &files.id).await.unwrap();
        store.delete_mcp_grant(&alice, &files.id).await.unwrap();
        assert_eq!(store.get_mcp_grant(&alice, &files.id).await.unwrap(), None);

        store.delete_mcp_server(&alice, &notes.id).await.unwrap();
        assert_eq!(store.get_mcp_grant(&alice, &notes.id).await.unwrap(), None, "the grant goes with its server");
        assert!(store.put_mcp_grant(&alice, &files.id, &"x".repeat(70_000)).await.is_err(), "bounded");
    }

    async fn the_tools_a_server_listed_are_kept_with_its_grant_and_go_with_it(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        let notes = store.create_mcp_server(&alice, &mcp_server("Notes")).await.unwrap();
        store.put_mcp_known_tools(&alice, &notes.id, "[1]").await.unwrap();
        assert_eq!(store.mcp_known_tools(&alice, &notes.id).await.unwrap(), None, "nothing is kept without a grant");

        store.put_mcp_grant(&alice, &notes.id, "sealed-1").await.unwrap();
        assert_eq!(store.mcp_known_tools(&alice, &notes.id).await.unwrap(), None);
        store.put_mcp_known_tools(&alice, &notes.id, r#"[{"name":"whoami"}]"#).await.unwrap();
        store.put_mcp_grant(&alice, &notes.id, "sealed-renewed").await.unwrap();
        assert_eq!(
            store.mcp_known_tools(&alice, &notes.id).await.unwrap().as_deref(),
            Some(r#"[{"name":"whoami"}]"#),
            "a renewed grant keeps the list"
        );
        assert_eq!(store.get_mcp_grant(&alice, &notes.id).await.unwrap().as_deref(), Some("sealed-renewed"));
        assert_eq!(store.mcp_known_tools(&bob, &notes.id).await.unwrap(), None, "another user's list is not theirs");
        assert!(store.put_mcp_known_tools(&alice, &notes.id, &"x".repeat(600_000)).await.is_err(), "bounded");

        store.delete_mcp_grant(&alice, &notes.id).await.unwrap();
        store.put_mcp_grant(&alice, &notes.id, "sealed-new").await.unwrap();
        assert_eq!(store.mcp_known_tools(&alice, &notes.id).await.unwrap(), None, "the list goes with its grant");
    }

    async fn the_oauth_client_given_with_a_server_keeps_its_secret_sealed_and_unshown(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        let given = NewMcpServer {
            oauth_client_id: Some("notes-client".to_owned()),
            oauth_client_secret: Some("s3cret".to_owned()),
            ..mcp_server("Notes")
        };
        let notes = store.create_mcp_server(&alice, &given).await.unwrap();
        assert_eq!(notes.oauth_client_id.as_deref(), Some("notes-client"));
        assert!(notes.oauth_client_secret_set);
        let listed = store.list_mcp_servers(&alice).await.unwrap();
        assert_eq!((listed[0].oauth_client_id.as_deref(), listed[0].oauth_client_secret_set), (Some("notes-client"), true));
        let client = store.mcp_server_oauth_client(&alice, &notes.id).await.unwrap().unwrap();
        assert_eq!((client.client_id.as_str(), client.client_secret.as_deref()), ("notes-client", Some("s3cret")));
        assert!(!format!("{client:?}").contains("s3cret"));
        assert!(store.mcp_server_oauth_client(&bob, &notes.id).await.is_err(), "another user's server is not theirs");

        // An update replaces it, as it replaces every secret: a public client, then none.
        let public = NewMcpServer { oauth_client_id: Some("public".to_owned()), ..mcp_server("Notes") };
        let updated = store.update_mcp_server(&alice, &notes.id, &public).await.unwrap();
        assert!(!updated.oauth_client_secret_set);
        let client = store.mcp_server_oauth_client(&alice, &notes.id).await.unwrap().unwrap();
        assert_eq!((client.client_id.as_str(), client.client_secret), ("public", None));
        store.update_mcp_server(&alice, &notes.id, &mcp_server("Notes")).await.unwrap();
        assert_eq!(store.mcp_server_oauth_client(&alice, &notes.id).await.unwrap(), None);

        let orphan = NewMcpServer { oauth_client_secret: Some("s".to_owned()), ..mcp_server("X") };
        assert!(store.create_mcp_server(&alice, &orphan).await.is_err(), "a secret needs its client id");
        let long = NewMcpServer { oauth_client_id: Some("x".repeat(3_000)), ..mcp_server("X") };
        assert!(store.create_mcp_server(&alice, &long).await.is_err(), "bounded");
        let broken = NewMcpServer { oauth_client_id: Some("a\nb".to_owned()), ..mcp_server("X") };
        assert!(store.create_mcp_server(&alice, &broken).await.is_err(), "printable");
    }

    async fn a_pending_authorization_keeps_its_details_once_and_not_past_its_life(store: &Store) {
        let alice = user(store, "Alice").await;
        let pending = OAuthPending {
            user_id: alice.clone(),
            provider: "mcp:srv_1".to_owned(),
            code_verifier: "verifier".to_owned(),
            details: Some("sealed-details".to_owned()),
        };
        let limits = PendingLimits { ttl: Duration::from_secs(600), per_user: 4, total: 100 };
        store.put_oauth_pending("st-1", &pending, limits).await.unwrap().unwrap();
        assert_eq!(store.take_oauth_pending("st-1").await.unwrap(), Some(pending.clone()));
        assert_eq!(store.take_oauth_pending("st-1").await.unwrap(), None, "taken once");
        let expired = PendingLimits { ttl: Duration::ZERO, ..limits };
        store.put_oauth_pending("st-2", &pending, expired).await.unwrap().unwrap();
        assert_eq!(store.take_oauth_pending("st-2").await.unwrap(), None, "expired");
    }
}
