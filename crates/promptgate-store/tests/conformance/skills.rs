//! Skills: create, update, delete, unique slugs, each user's own.

use crate::common::*;

conformance! {
    async fn skills_crud_slugs_and_isolation(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        let research = store.create_skill(&alice, &skill("research", true)).await.unwrap();
        let mut widget = skill("weather", false);
        widget.renders_widgets = true;
        let weather = store.create_skill(&alice, &widget).await.unwrap();
        assert!(weather.renders_widgets && !weather.enabled);

        assert_eq!(store.list_skills(&alice).await.unwrap(), vec![research.clone(), weather.clone()]);
        assert_eq!(store.enabled_skills(&alice).await.unwrap(), vec![research.clone()]);
        assert_eq!(store.get_skill(&alice, &weather.id).await.unwrap(), Some(weather.clone()));

        assert!(matches!(store.create_skill(&alice, &skill("research", false)).await, Err(StoreError::Conflict(_))));
        assert!(matches!(store.update_skill(&alice, &weather.id, &skill("research", true)).await, Err(StoreError::Conflict(_))));
        assert!(matches!(store.create_skill(&alice, &skill("two words", true)).await, Err(StoreError::Invalid(_))));
        assert!(matches!(store.create_skill(&alice, &skill("/research", true)).await, Err(StoreError::Invalid(_))));

        let updated = store.update_skill(&alice, &weather.id, &skill("forecast", true)).await.unwrap();
        assert_eq!(updated.id, weather.id);
        assert_eq!(store.get_skill(&alice, &weather.id).await.unwrap(), Some(updated.clone()));
        assert_eq!(store.enabled_skills(&alice).await.unwrap().len(), 2);

        // Slugs are per user; Bob sees and changes nothing of Alice's.
        store.create_skill(&bob, &skill("research", true)).await.unwrap();
        assert_eq!(store.get_skill(&bob, &research.id).await.unwrap(), None);
        assert_eq!(store.list_skills(&bob).await.unwrap().len(), 1);
        assert!(matches!(store.update_skill(&bob, &research.id, &skill("x", true)).await, Err(StoreError::NotFound)));
        assert!(matches!(store.delete_skill(&bob, &research.id).await, Err(StoreError::NotFound)));

        store.delete_skill(&alice, &research.id).await.unwrap();
        assert_eq!(store.list_skills(&alice).await.unwrap(), vec![updated]);
        assert!(matches!(store.delete_skill(&alice, &research.id).await, Err(StoreError::NotFound)));
    }
}
