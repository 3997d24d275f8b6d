//! Budgets: limits on a user or a key, spending settled per window, windows that reset.

use crate::common::*;

const DAY_MS: i64 = 86_400_000;

fn period(tokens: i64, secs: i64) -> Budget {
    Budget {
        period_tokens: Some(tokens),
        period_secs: Some(secs),
        ..Budget::default()
    }
}

fn tokens(tokens: i64) -> BudgetSpend {
    BudgetSpend {
        tokens,
        cost_micros: 0,
    }
}

conformance! {
    async fn spending_counts_against_the_period_and_resets_with_it(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        // Mid-day, so the day's window is the same for the two moments below.
        let noon = 20_000 * DAY_MS + DAY_MS / 2;
        assert!(store.limit_states(&alice, None, noon).await.unwrap().is_empty());
        store.settle_budget(&alice, None, tokens(500), noon).await.unwrap(); // no limit: nothing counted

        store.set_budget(BudgetScope::User, &alice, &alice, &period(1_000, 86_400)).await.unwrap();
        store.settle_budget(&alice, None, tokens(600), noon).await.unwrap();
        store.settle_budget(&alice, Some("key_x"), tokens(300), noon + 1_000).await.unwrap();
        store.settle_budget(&bob, None, tokens(999), noon).await.unwrap();
        let states = store.limit_states(&alice, None, noon + 2_000).await.unwrap();
        assert_eq!(states.len(), 1);
        let day = &states[0];
        assert_eq!((day.kind, day.scope, day.limit, day.used), (LimitKind::PeriodTokens, BudgetScope::User, 1_000, 900));
        assert_eq!(day.resets_at, 20_001 * DAY_MS, "a day's window ends at midnight UTC");

        // The next day starts from nothing, and the ended window is dropped at the next settle.
        let tomorrow = noon + DAY_MS;
        assert_eq!(store.limit_states(&alice, None, tomorrow).await.unwrap()[0].used, 0);
        store.settle_budget(&alice, None, tokens(10), tomorrow).await.unwrap();
        assert_eq!(store.limit_states(&alice, None, tomorrow).await.unwrap()[0].used, 10);
        assert_eq!(store.limit_states(&alice, None, noon).await.unwrap()[0].used, 0);
        assert_eq!(store.budget(BudgetScope::User, &alice).await.unwrap(), period(1_000, 86_400));
    }

    async fn a_key_has_its_own_limits_beside_its_users(store: &Store) {
        let alice = user(store, "Alice").await;
        let one = store.create_key(&alice, "one", None).await.unwrap().key.id;
        let two = store.create_key(&alice, "two", None).await.unwrap().key.id;
        let tpm = Budget { tokens_per_minute: Some(100), ..Budget::default() };
        store.set_budget(BudgetScope::Key, &alice, &one, &tpm).await.unwrap();
        let now = 1_000 * 60_000 + 30_000;
        store.settle_budget(&alice, Some(&one), tokens(40), now).await.unwrap();
        store.settle_budget(&alice, Some(&two), tokens(70), now).await.unwrap();
        let states = store.limit_states(&alice, Some(&one), now).await.unwrap();
        assert_eq!(states.len(), 1);
        assert_eq!((states[0].kind, states[0].scope, states[0].used), (LimitKind::TokensPerMinute, BudgetScope::Key, 40));
        assert_eq!(states[0].resets_at, 1_001 * 60_000);
        assert!(store.limit_states(&alice, Some(&two), now).await.unwrap().is_empty());
        assert_eq!(store.limit_states(&alice, Some(&one), now + 30_000).await.unwrap()[0].used, 0, "a new minute");

        // Another user's key, bad numbers, and a cleared budget.
        let bob = user(store, "Bob").await;
        assert!(matches!(store.set_budget(BudgetScope::Key, &bob, &one, &tpm).await, Err(StoreError::NotFound)));
        let bad = Budget { period_tokens: Some(10), ..Budget::default() };
        assert!(matches!(store.set_budget(BudgetScope::Key, &alice, &one, &bad).await, Err(StoreError::Invalid(_))));
        let zero = Budget { tokens_per_minute: Some(0), ..Budget::default() };
        assert!(matches!(store.set_budget(BudgetScope::Key, &alice, &one, &zero).await, Err(StoreError::Invalid(_))));
        store.set_budget(BudgetScope::Key, &alice, &one, &Budget::default()).await.unwrap();
        assert!(store.limit_states(&alice, Some(&one), now).await.unwrap().is_empty());

        // Deleting the key takes its limits with it.
        store.set_budget(BudgetScope::Key, &alice, &one, &tpm).await.unwrap();
        store.delete_key(&alice, &one).await.unwrap();
        assert_eq!(store.budget(BudgetScope::Key, &one).await.unwrap(), Budget::default());
        // So does revoking every key of the user from the command line.
        store.set_budget(BudgetScope::Key, &alice, &two, &tpm).await.unwrap();
        store.revoke_tokens(&alice).await.unwrap();
        assert_eq!(store.budget(BudgetScope::Key, &two).await.unwrap(), Budget::default());
    }

    async fn money_counts_against_its_own_limit_beside_the_tokens(store: &Store) {
        let alice = user(store, "Alice").await;
        let key = store.create_key(&alice, "script", None).await.unwrap().key.id;
        let noon = 20_000 * DAY_MS + DAY_MS / 2;
        // Alice: 2.50 a day and 1,000 tokens a day; her key: 1.00 a day.
        let both = Budget { period_cost_micros: Some(2_500_000), ..period(1_000, 86_400) };
        store.set_budget(BudgetScope::User, &alice, &alice, &both).await.unwrap();
        assert_eq!(store.budget(BudgetScope::User, &alice).await.unwrap(), both);
        let money = Budget { period_cost_micros: Some(1_000_000), period_secs: Some(86_400), ..Budget::default() };
        store.set_budget(BudgetScope::Key, &alice, &key, &money).await.unwrap();

        let turn = BudgetSpend { tokens: 100, cost_micros: 750_000 };
        store.settle_budget(&alice, Some(&key), turn, noon).await.unwrap();
        store.settle_budget(&alice, None, turn, noon + 1).await.unwrap();
        let states = store.limit_states(&alice, Some(&key), noon + 2).await.unwrap();
        let used = |scope, kind| states.iter().find(|s| s.scope == scope && s.kind == kind).map(|s| (s.used, s.limit));
        assert_eq!(used(BudgetScope::User, LimitKind::PeriodTokens), Some((200, 1_000)));
        assert_eq!(used(BudgetScope::User, LimitKind::PeriodCost), Some((1_500_000, 2_500_000)));
        assert_eq!(used(BudgetScope::Key, LimitKind::PeriodCost), Some((750_000, 1_000_000)), "only the turn with the key");
        assert_eq!(states.len(), 3);
        assert_eq!(states.iter().find(|s| s.kind == LimitKind::PeriodCost).unwrap().resets_at, 20_001 * DAY_MS);

        // A new day spends from nothing.
        let tomorrow = noon + DAY_MS;
        assert!(store.limit_states(&alice, Some(&key), tomorrow).await.unwrap().iter().all(|s| s.used == 0));

        // A money limit needs a period, and must be positive.
        let no_period = Budget { period_cost_micros: Some(5), ..Budget::default() };
        assert!(matches!(store.set_budget(BudgetScope::User, &alice, &alice, &no_period).await, Err(StoreError::Invalid(_))));
        let negative = Budget { period_cost_micros: Some(-1), period_secs: Some(60), ..Budget::default() };
        assert!(matches!(store.set_budget(BudgetScope::User, &alice, &alice, &negative).await, Err(StoreError::Invalid(_))));
    }
}
