//! The store as the tool executors see it: through core's storage traits, with errors in the degree
//! of detail a tool may pass on.

use promptgate_core::storage::{
    ArtifactStore, ChatSearch, MessageSearch, NewArtifact, StorageError, TaskStore, TokenVault, VaultKey,
};

use crate::common::*;

conformance! {
    async fn the_storage_traits_keep_a_refusal_and_a_missing_row_apart(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        let tasks: &dyn TaskStore = store;
        let added = tasks.add_tasks(&alice, &["Buy milk".to_owned()]).await.unwrap();
        assert_eq!(tasks.list_tasks(&alice).await.unwrap(), added);
        assert_eq!(
            tasks.add_tasks(&alice, &["  ".to_owned()]).await,
            Err(StorageError::Invalid("task must not be empty".to_owned())),
            "the reason of a refusal reaches the tool"
        );
        assert_eq!(tasks.add_tasks("no-such-user", &["x".to_owned()]).await, Err(StorageError::NotFound));
        assert_eq!(tasks.delete_tasks(&bob, &[added[0].id.clone()]).await, Ok(0));

        thread(store, &bob, "bobs", None, None).await;
        let artifacts: &dyn ArtifactStore = store;
        assert_eq!(
            artifacts
                .create_artifact(
                    &alice,
                    NewArtifact {
                        thread_id: Some("bobs"),
                        title: "Chart",
                        html: "<svg/>"
                    }
                )
                .await,
            Err(StorageError::NotFound),
            "another user's chat is not there"
        );
        say(store, &bob, "bobs", Role::User, "my compost recipe").await;
        let chats: &dyn ChatSearch = store;
        let bobs = ["bobs".to_owned()];
        let compost = MessageSearch {
            thread_ids: &bobs,
            query: "compost",
            limit: 8,
        };
        let found = chats.search_messages(&bob, compost).await.unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].thread_id, "bobs");
        assert_eq!(
            chats.search_messages(&alice, compost).await,
            Ok(Vec::new()),
            "naming another user's chat finds nothing"
        );
    }

    async fn the_store_is_the_token_vault(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        let vault: &dyn TokenVault = store;
        let key = |user_id, provider| VaultKey { user_id, provider };
        let alices_google = key(&alice, IntegrationProvider::Google);
        vault.store(alices_google, "sealed-blob").await.unwrap();
        assert_eq!(vault.load(alices_google).await.unwrap().as_deref(), Some("sealed-blob"));
        assert_eq!(vault.load(key(&bob, IntegrationProvider::Google)).await, Ok(None));
        assert_eq!(vault.load(key(&alice, IntegrationProvider::Microsoft)).await, Ok(None));
        vault.delete(alices_google).await.unwrap();
        assert_eq!(vault.load(alices_google).await, Ok(None));
        assert_eq!(
            vault.store(key("no-such-user", IntegrationProvider::Google), "x").await,
            Err(StorageError::NotFound)
        );
    }
}
