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
            async move { store.load_send_context(&alice, "main", Some("demo"), "demo").await }
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

        let loose = store.load_send_context(&alice, "loose", Some("missing-model"), "demo").await.unwrap();
        assert!(loose.model.is_none() && loose.project.is_none() && loose.history.is_empty());
        assert_eq!(loose.model_id, "missing-model");
        assert_eq!(loose.sibling_count, 0);
        assert!(loose.thread.is_some());

        // A thread that does not exist yet (or is someone else's) loads as absent, with the user's defaults.
        let fresh = store.load_send_context(&bob, "main", None, "demo").await.unwrap();
        assert!(fresh.thread.is_none() && fresh.project.is_none() && fresh.history.is_empty());
        assert_eq!(fresh.settings, UserSettings::default());
        assert!(fresh.skills.is_empty() && fresh.mcp_servers.is_empty());
        assert!(fresh.model.is_some(), "system models are everyone's");
    }
}

/// The setup a send reads is cached per user; every kind of change to it must reach the next send,
/// including one made through another connection (a second gateway instance, the CLI).
async fn setup_changes_reach_the_next_send(db: &promptgate_store::testing::TestDb) {
    let store: &Store = db;
    let other = db.another_instance().await;
    let alice = user(store, "Alice").await;
    store
        .seed_system_models(&[model("demo"), model("big")])
        .await
        .unwrap();
    let load = || store.load_send_context(&alice, "", None, "demo");

    let first = load().await.unwrap();
    assert_eq!(first.model_id, "demo", "no user default: the server's");
    assert_eq!(first.model.unwrap().name, "Model demo");
    assert!(
        first.thread.is_none() && first.history.is_empty(),
        "no thread id reads no thread"
    );

    let mut settings = UserSettings::default();
    settings.default_model = Some("big".to_owned());
    store.put_settings(&alice, &settings).await.unwrap();
    assert_eq!(
        load().await.unwrap().model_id,
        "big",
        "the user's new default model"
    );

    // Changes through the other connection: this store made none of these writes itself.
    settings.preferred_name = "Ali".to_owned();
    other.put_settings(&alice, &settings).await.unwrap();
    assert_eq!(load().await.unwrap().settings.preferred_name, "Ali");

    let mine = Model {
        name: "Mine".to_owned(),
        ..model("mine")
    };
    other.create_model(&alice, &mine).await.unwrap();
    let picked = store
        .load_send_context(&alice, "", Some("mine"), "demo")
        .await
        .unwrap();
    assert_eq!(
        picked.model.unwrap().name,
        "Mine",
        "a model created elsewhere is there"
    );
    other.delete_model(&alice, "mine").await.unwrap();
    let gone = store
        .load_send_context(&alice, "", Some("mine"), "demo")
        .await
        .unwrap();
    assert!(gone.model.is_none(), "a deleted model is gone");

    let renamed = Model {
        name: "Big, renamed".to_owned(),
        ..model("big")
    };
    other.seed_system_models(&[renamed]).await.unwrap();
    assert_eq!(
        load().await.unwrap().model.unwrap().name,
        "Big, renamed",
        "a system model change reaches every user"
    );

    let skill_row = other.create_skill(&alice, &skill("notes", true)).await.unwrap();
    assert_eq!(load().await.unwrap().skills.len(), 1);
    other
        .update_skill(&alice, &skill_row.id, &skill("notes", false))
        .await
        .unwrap();
    assert!(
        load().await.unwrap().skills.is_empty(),
        "a disabled skill leaves the send"
    );

    let server = NewMcpServer {
        name: "Docs".to_owned(),
        url: "http://127.0.0.1:9/mcp".to_owned(),
        enabled: true,
        headers: BTreeMap::new(),
        bearer_token: None,
    };
    let created = other.create_mcp_server(&alice, &server).await.unwrap();
    assert_eq!(load().await.unwrap().mcp_servers.len(), 1);
    other.delete_mcp_server(&alice, &created.id).await.unwrap();
    assert!(load().await.unwrap().mcp_servers.is_empty());

    other
        .put_integration(
            &alice,
            Provider::Google,
            IntegrationState {
                connected: true,
                enabled: true,
            },
        )
        .await
        .unwrap();
    assert!(load().await.unwrap().integrations.google.usable());

    // Another user's change leaves Alice's setup as it was.
    let bob = user(&other, "Bob").await;
    other.put_settings(&bob, &UserSettings::default()).await.unwrap();
    let again = load().await.unwrap();
    assert_eq!(
        (again.settings.preferred_name.as_str(), again.model_id.as_str()),
        ("Ali", "big")
    );
    other.close().await;
}

mod setup_changes_reach_the_next_send {
    #[tokio::test]
    async fn sqlite() {
        let db = promptgate_store::testing::TestDb::sqlite().await;
        super::setup_changes_reach_the_next_send(&db).await;
        db.close().await;
    }

    #[tokio::test]
    async fn postgres() {
        let db = promptgate_store::testing::TestDb::postgres().await;
        super::setup_changes_reach_the_next_send(&db).await;
        db.close().await;
    }
}
