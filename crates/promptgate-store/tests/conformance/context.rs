//! What a send loads, and a setup change reaching the next send on this and other instances.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

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
        store.put_integration(&alice, IntegrationProvider::Google, IntegrationState { connected: true, enabled: true }).await.unwrap();
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
            oauth_client_id: None,
            oauth_client_secret: None,
        };
        let server = store.create_mcp_server(&alice, &enabled).await.unwrap();
        store.create_mcp_server(&alice, &NewMcpServer { enabled: false, ..enabled.clone() }).await.unwrap();

        // Spawned, as a server handler would run it: the future must be Send.
        let spawned = tokio::spawn({
            let (store, alice) = (store.clone(), alice.clone());
            async move { store.load_send_context(&alice, Some("main"), Some("demo"), "demo", None).await }
        });
        let ctx = spawned.await.unwrap().unwrap();
        assert_eq!(ctx.settings, settings);
        assert!(ctx.integrations.google.usable() && ctx.integrations.do_not_ask);
        assert_eq!(ctx.model.unwrap().id, "demo");
        assert_eq!(ctx.thread.unwrap().title.as_deref(), Some("Roses"));
        assert_eq!(ctx.project, Some(garden.clone()));
        assert_eq!(ctx.sibling_count, 1, "the project has other threads; how many is not counted");
        assert_eq!(ctx.skills, vec![on]);
        assert_eq!(ctx.mcp_servers.len(), 1);
        assert_eq!(ctx.mcp_servers[0].0, server);
        assert_eq!(ctx.mcp_servers[0].1.bearer_token.as_deref(), Some("t"));
        assert_eq!(ctx.tail.messages, vec![Arc::new(first), Arc::new(second)]);
        assert!(ctx.tail.from_start && ctx.tail.context.is_none());

        let loose = store.load_send_context(&alice, Some("loose"), Some("missing-model"), "demo", None).await.unwrap();
        assert!(loose.model.is_none() && loose.project.is_none() && loose.tail.messages.is_empty());
        assert_eq!(loose.model_id, "missing-model");
        assert_eq!(loose.sibling_count, 0);
        assert!(loose.thread.is_some());

        // A thread that does not exist yet (or is someone else's) loads as absent, with the user's defaults.
        let fresh = store.load_send_context(&bob, Some("main"), None, "demo", None).await.unwrap();
        assert!(fresh.thread.is_none() && fresh.project.is_none() && fresh.tail.messages.is_empty());
        assert_eq!(fresh.settings, UserSettings::default());
        assert!(fresh.skills.is_empty() && fresh.mcp_servers.is_empty());
        assert!(fresh.model.is_some(), "system models are everyone's");
    }
}

/// The setup a send reads is cached per user. A change made through this store reaches the very next
/// send; one made through another connection (a second gateway instance, the CLI) reaches a later
/// send soon after: by notification on Postgres, once the cached copy is rechecked on SQLite.
async fn setup_changes_reach_the_next_send(db: promptgate_store::testing::TestDb) {
    let store: &Store = &db;
    match store.backend() {
        // SQLite hears of another process's writes only when it rechecks; shorten that here.
        Backend::Sqlite => store.set_setup_recheck(Duration::from_millis(100)),
        // Postgres: wait for the change listener, so the changes below must arrive by notification.
        Backend::Postgres => listening(store).await,
    }
    let other = db.another_instance().await;
    let alice = user(store, "Alice").await;
    store
        .seed_system_models(&[model("demo"), model("big")])
        .await
        .unwrap();
    let load = loader(store, &alice);

    let first = load(None).await;
    assert_eq!(first.model_id, "demo", "no user default: the server's");
    assert_eq!(first.model.unwrap().name, "Model demo");
    assert!(
        first.thread.is_none() && first.tail.messages.is_empty(),
        "no thread id reads no thread"
    );

    let mut settings = UserSettings::default();
    settings.default_model = Some("big".to_owned());
    store.put_settings(&alice, &settings).await.unwrap();
    assert_eq!(
        load(None).await.model_id,
        "big",
        "the user's new default model, at once"
    );

    // Changes through the other connection: this store made none of these writes itself.
    settings.preferred_name = "Ali".to_owned();
    other.put_settings(&alice, &settings).await.unwrap();
    soon(&load, None, "a new name", |c| c.settings.preferred_name == "Ali").await;

    let mine = Model {
        name: "Mine".to_owned(),
        ..model("mine")
    };
    other.create_model(&alice, &mine).await.unwrap();
    soon(&load, Some("mine"), "a model created elsewhere", |c| {
        c.model.as_ref().is_some_and(|m| m.name == "Mine")
    })
    .await;
    other.delete_model(&alice, "mine").await.unwrap();
    soon(&load, Some("mine"), "a deleted model is gone", |c| {
        c.model.is_none()
    })
    .await;

    let renamed = Model {
        name: "Big, renamed".to_owned(),
        ..model("big")
    };
    other.seed_system_models(&[renamed]).await.unwrap();
    soon(&load, None, "a system model change reaches every user", |c| {
        c.model.as_ref().is_some_and(|m| m.name == "Big, renamed")
    })
    .await;

    let skill_row = other.create_skill(&alice, &skill("notes", true)).await.unwrap();
    soon(&load, None, "a new skill", |c| c.skills.len() == 1).await;
    other
        .update_skill(&alice, &skill_row.id, &skill("notes", false))
        .await
        .unwrap();
    soon(&load, None, "a disabled skill leaves the send", |c| {
        c.skills.is_empty()
    })
    .await;

    let server = NewMcpServer {
        name: "Docs".to_owned(),
        url: "http://127.0.0.1:9/mcp".to_owned(),
        enabled: true,
        headers: BTreeMap::new(),
        bearer_token: None,
        oauth_client_id: None,
        oauth_client_secret: None,
    };
    let created = other.create_mcp_server(&alice, &server).await.unwrap();
    soon(&load, None, "a new MCP server", |c| c.mcp_servers.len() == 1).await;
    other.delete_mcp_server(&alice, &created.id).await.unwrap();
    soon(&load, None, "a deleted MCP server", |c| c.mcp_servers.is_empty()).await;

    other
        .put_integration(
            &alice,
            IntegrationProvider::Google,
            IntegrationState {
                connected: true,
                enabled: true,
            },
        )
        .await
        .unwrap();
    soon(&load, None, "a connected integration", |c| {
        c.integrations.google.usable()
    })
    .await;

    // Writes through this store again: each reaches the very next send.
    let local = store.create_skill(&alice, &skill("local", true)).await.unwrap();
    assert_eq!(load(None).await.skills, vec![local.clone()]);
    store.delete_skill(&alice, &local.id).await.unwrap();
    assert!(load(None).await.skills.is_empty());
    store.create_mcp_server(&alice, &server).await.unwrap();
    assert_eq!(load(None).await.mcp_servers.len(), 1);
    store.create_model(&alice, &mine).await.unwrap();
    assert!(load(Some("mine")).await.model.is_some());

    // Another user's change leaves Alice's setup as it was.
    let bob = user(&other, "Bob").await;
    other.put_settings(&bob, &UserSettings::default()).await.unwrap();
    let again = load(None).await;
    assert_eq!(
        (again.settings.preferred_name.as_str(), again.model_id.as_str()),
        ("Ali", "big")
    );
    other.close().await;
    db.close().await;
}

/// Loads the user's context for a send without a thread (as the facade does), naming a model or not.
pub fn loader(
    store: &Store,
    user: &str,
) -> impl Fn(Option<&'static str>) -> BoxFuture<'static, SendContext> + use<> {
    let (store, user) = (store.clone(), user.to_owned());
    move |requested| {
        let (store, user) = (store.clone(), user.clone());
        Box::pin(async move {
            store
                .load_send_context(&user, None, requested, "demo", None)
                .await
                .unwrap()
        })
    }
}

/// Waits (up to five seconds) until the store's change listener is connected.
pub async fn listening(store: &Store) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !store.setup_changes_signalled() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the change listener did not connect"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Loads until `check` holds; fails after five seconds, well before a cached setup would be
/// rechecked on Postgres, so there only a notification can make it in time.
pub async fn soon<F, Fut>(
    load: &F,
    requested: Option<&'static str>,
    what: &str,
    check: impl Fn(&SendContext) -> bool,
) where
    F: Fn(Option<&'static str>) -> Fut,
    Fut: std::future::Future<Output = SendContext>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        if check(&load(requested).await) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what} did not reach a send within 5 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

promptgate_store::on_both_backends!(setup_changes_reach_the_next_send);
