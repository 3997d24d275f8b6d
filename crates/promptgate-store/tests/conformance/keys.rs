//! Keys a user manages and users an admin manages: names, expiry, last use, roles, disabling and
//! deleting.

use crate::common::*;

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

conformance! {
    async fn a_key_has_a_name_an_expiry_and_a_last_use_and_is_gone_once_deleted(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        let later = now_ms() + 3_600_000;
        let issued = store.create_key(&alice, "laptop", Some(later)).await.unwrap();
        assert!(issued.secret.starts_with("pg_"), "{}", issued.secret);
        assert_eq!(issued.key.name, "laptop");
        assert_eq!(issued.key.expires_at, Some(later));
        assert_eq!(issued.key.last_used_at, None);

        let caller = store.caller_by_token(&issued.secret).await.unwrap().unwrap();
        assert_eq!((caller.user.id.as_str(), caller.key_id.as_str(), caller.admin), (alice.as_str(), issued.key.id.as_str(), false));
        let listed = store.list_keys(&alice).await.unwrap();
        assert_eq!(listed.len(), 1);
        assert!(listed[0].last_used_at.is_some(), "the first use is recorded");
        let used = listed[0].last_used_at.unwrap();
        // A second use within the minute writes nothing.
        store.caller_by_token(&issued.secret).await.unwrap().unwrap();
        assert_eq!(store.list_keys(&alice).await.unwrap()[0].last_used_at, Some(used));

        assert!(store.list_keys(&bob).await.unwrap().is_empty(), "a user sees only their keys");
        assert!(matches!(store.delete_key(&bob, &issued.key.id).await, Err(StoreError::NotFound)));
        store.delete_key(&alice, &issued.key.id).await.unwrap();
        assert_eq!(store.caller_by_token(&issued.secret).await.unwrap(), None);
        assert!(matches!(store.delete_key(&alice, &issued.key.id).await, Err(StoreError::NotFound)));

        assert!(matches!(store.create_key(&alice, "past", Some(now_ms() - 1)).await, Err(StoreError::Invalid(_))));
        assert!(matches!(store.create_key(&alice, "", None).await, Err(StoreError::Invalid(_))));
        assert!(matches!(store.create_key("nobody", "x", None).await, Err(StoreError::NotFound)));
    }

    async fn an_expired_key_is_refused(store: &Store) {
        let alice = user(store, "Alice").await;
        let issued = store.create_key(&alice, "short", Some(now_ms() + 30)).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(60)).await;
        assert_eq!(store.caller_by_token(&issued.secret).await.unwrap(), None);
        let forever = store.create_key(&alice, "forever", None).await.unwrap();
        assert!(store.caller_by_token(&forever.secret).await.unwrap().is_some());
    }

    async fn a_disabled_user_is_refused_until_enabled_and_an_admin_is_known_as_one(store: &Store) {
        let alice = user(store, "Alice").await;
        let cli_token = store.issue_token(&alice).await.unwrap();
        let key = store.create_key(&alice, "k", None).await.unwrap();
        store.set_disabled(&alice, true).await.unwrap();
        assert_eq!(store.caller_by_token(&cli_token).await.unwrap(), None);
        assert_eq!(store.caller_by_token(&key.secret).await.unwrap(), None);
        let account = store.account(&alice).await.unwrap();
        assert!(account.disabled_at.is_some());
        assert_eq!(account.keys, 2, "a key issued by the command line is a key too");
        store.set_disabled(&alice, false).await.unwrap();
        assert!(store.caller_by_token(&key.secret).await.unwrap().is_some());

        store.set_admin(&alice, true).await.unwrap();
        assert!(store.caller_by_token(&cli_token).await.unwrap().unwrap().admin);
        let accounts = store.list_accounts().await.unwrap();
        assert_eq!(accounts.len(), 1);
        assert!(accounts[0].admin && accounts[0].disabled_at.is_none());
        assert!(matches!(store.set_disabled("nobody", true).await, Err(StoreError::NotFound)));
    }

    async fn deleting_a_user_removes_their_data_and_no_one_elses(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        for who in [&alice, &bob] {
            thread(store, who, "t1", None, Some("Plans")).await;
            say(store, who, "t1", Role::User, "hello").await;
        }
        let key = store.create_key(&alice, "k", None).await.unwrap();
        store.delete_user(&alice).await.unwrap();
        assert_eq!(store.caller_by_token(&key.secret).await.unwrap(), None);
        assert!(store.get_thread(&alice, "t1").await.unwrap().is_none());
        assert!(store.list_messages(&alice, "t1").await.map(|m| m.is_empty()).unwrap_or(true));
        assert!(matches!(store.account(&alice).await, Err(StoreError::NotFound)));
        assert_eq!(store.list_messages(&bob, "t1").await.unwrap().len(), 1, "Bob keeps his");
        assert!(matches!(store.delete_user(&alice).await, Err(StoreError::NotFound)));
    }
}
