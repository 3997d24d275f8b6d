//! Users, their tokens and settings.

use crate::common::*;

conformance! {
    async fn tokens_authenticate_their_user_only(store: &Store) {
        store.ping().await.unwrap();
        store.migrate().await.unwrap(); // migrating an up-to-date database changes nothing
        let alice = store.create_user("Alice").await.unwrap();
        let bob = store.create_user("Bob").await.unwrap();
        let token = store.issue_token(&alice.id).await.unwrap();
        assert!(token.starts_with("pg_") && token.len() == 3 + 64, "{token}");
        let second = store.issue_token(&alice.id).await.unwrap();
        assert_ne!(token, second);

        assert_eq!(store.user_by_token(&token).await.unwrap(), Some(alice.clone()));
        assert_eq!(store.user_by_token(&second).await.unwrap(), Some(alice.clone()));
        let bob_token = store.issue_token(&bob.id).await.unwrap();
        assert_eq!(store.user_by_token(&bob_token).await.unwrap().unwrap().id, bob.id);

        // One flipped character, a foreign format, and an absurdly long value are all just "no user".
        let mut wrong = token.clone();
        wrong.replace_range(10..11, if &token[10..11] == "a" { "b" } else { "a" });
        assert_eq!(store.user_by_token(&wrong).await.unwrap(), None);
        assert_eq!(store.user_by_token("Bearer nonsense").await.unwrap(), None);
        assert_eq!(store.user_by_token(&format!("pg_{}", "0".repeat(10_000))).await.unwrap(), None);
        assert_eq!(store.user_by_token("").await.unwrap(), None);

        assert!(matches!(store.issue_token("no-such-user").await, Err(StoreError::NotFound)));
    }

    async fn ensure_user_is_idempotent(store: &Store) {
        let first = store.ensure_user("local", "Local user").await.unwrap();
        assert_eq!(first.id, "local");
        let again = store.ensure_user("local", "Another name").await.unwrap();
        assert_eq!(again, first, "an existing user keeps its name and creation time");
        assert!(matches!(store.ensure_user("bad id!", "x").await, Err(StoreError::Invalid(_))));
        assert!(matches!(store.create_user("  ").await, Err(StoreError::Invalid(_))));
    }

    async fn settings_default_then_round_trip(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        assert_eq!(store.get_settings(&alice).await.unwrap(), UserSettings::default());

        let mut s = UserSettings::default();
        s.preferred_name = "Ali \"the\" Cat".to_owned();
        s.location = Location { name: Some("Zürich".to_owned()), lat: Some(47.37), lng: Some(8.54) };
        s.localization.distance_unit = DistanceUnit::Metric;
        s.localization.time_format = TimeFormat::H24;
        s.localization.currency = "CHF".to_owned();
        s.time_zone = "Europe/Zurich".to_owned();
        s.app_language = AppLanguage::PtBr;
        s.experimental_tasks = true;
        s.web_tools_enabled = false;
        s.integrations_do_not_ask = true;
        s.default_model = Some("demo".to_owned());
        store.put_settings(&alice, &s).await.unwrap();
        assert_eq!(store.get_settings(&alice).await.unwrap(), s);

        s.preferred_name = "Alice".to_owned();
        store.put_settings(&alice, &s).await.unwrap();
        assert_eq!(store.get_settings(&alice).await.unwrap().preferred_name, "Alice");

        assert_eq!(store.get_settings(&bob).await.unwrap(), UserSettings::default());
        assert!(matches!(
            store.put_settings("no-such-user", &s).await,
            Err(StoreError::NotFound)
        ));
    }
}

conformance! {
    async fn tokens_can_be_listed_revoked_and_rotated(store: &Store) {
        let alice = store.create_user("Alice").await.unwrap();
        let bob = store.create_user("Bob").await.unwrap();
        let first = store.issue_token(&alice.id).await.unwrap();
        let second = store.issue_token(&alice.id).await.unwrap();
        let bobs = store.issue_token(&bob.id).await.unwrap();

        let listed = store.list_users().await.unwrap();
        let count = |id: &str| listed.iter().find(|u| u.user.id == id).map(|u| u.tokens);
        assert_eq!(count(&alice.id), Some(2));
        assert_eq!(count(&bob.id), Some(1));

        let fresh = store.rotate_token(&alice.id).await.unwrap();
        assert_eq!(store.user_by_token(&first).await.unwrap(), None);
        assert_eq!(store.user_by_token(&second).await.unwrap(), None);
        assert_eq!(store.user_by_token(&fresh).await.unwrap().unwrap().id, alice.id);
        assert_eq!(store.user_by_token(&bobs).await.unwrap().unwrap().id, bob.id, "other users keep theirs");

        assert_eq!(store.revoke_tokens(&alice.id).await.unwrap(), 1);
        assert_eq!(store.user_by_token(&fresh).await.unwrap(), None);
        assert_eq!(store.revoke_tokens(&alice.id).await.unwrap(), 0);
        assert!(matches!(store.revoke_tokens("no-such-user").await, Err(StoreError::NotFound)));
        assert!(matches!(store.rotate_token("no-such-user").await, Err(StoreError::NotFound)));
        assert_eq!(store.user_by_token(&bobs).await.unwrap().unwrap().id, bob.id);
    }
}
