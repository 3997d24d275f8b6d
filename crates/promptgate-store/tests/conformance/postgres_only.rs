//! Behaviour only the Postgres backend has: setup changes made anywhere arrive by notification.

use crate::common::*;
use crate::context::{listening, loader, soon};
use promptgate_store::testing::TestDb;
use sqlx::Connection;

/// A Postgres store whose change listener is connected, a second instance on the same database, and a
/// user.
/// Names the user `name` through the other instance, then waits until a send here sees it.
async fn rename_elsewhere<F, Fut>(other: &Store, user: &str, load: &F, name: &str, what: &str)
where
    F: Fn(Option<&'static str>) -> Fut,
    Fut: Future<Output = SendContext>,
{
    let settings = UserSettings {
        preferred_name: name.to_owned(),
        ..UserSettings::default()
    };
    other.put_settings(user, &settings).await.unwrap();
    soon(load, None, what, |c| c.settings.preferred_name == name).await;
}

async fn listening_with_another_instance() -> (TestDb, Store, String) {
    let db = TestDb::postgres().await;
    let other = db.another_instance().await;
    let alice = user(&db, "Alice").await;
    listening(&db).await;
    (db, other, alice)
}

#[tokio::test]
async fn a_cached_setup_is_served_from_memory_until_a_change_is_announced() {
    let (db, other, alice) = listening_with_another_instance().await;
    let store: &Store = &db;
    let load = loader(store, &alice);
    let mut settings = UserSettings::default();
    settings.preferred_name = "Ali".to_owned();
    store.put_settings(&alice, &settings).await.unwrap();
    assert_eq!(load(None).await.settings.preferred_name, "Ali");

    // An edit by hand with the triggers switched off announces nothing, so the send keeps the copy it
    // has: proof that it did not read the database. (Operators: leave the triggers on.)
    let mut by_hand = sqlx::PgConnection::connect(db.url()).await.unwrap();
    sqlx::query("SET session_replication_role = replica")
        .execute(&mut by_hand)
        .await
        .unwrap();
    sqlx::query("UPDATE user_settings SET data = '{\"preferred_name\":\"Unannounced\"}' WHERE user_id = $1")
        .bind(&alice)
        .execute(&mut by_hand)
        .await
        .unwrap();
    assert_eq!(load(None).await.settings.preferred_name, "Ali");

    // A regular write through another instance is announced and reaches a send within moments.
    rename_elsewhere(&other, &alice, &load, "Announced", "an announced change").await;

    by_hand.close().await.unwrap();
    other.close().await;
    db.close().await;
}

#[tokio::test]
async fn a_lost_listener_connection_never_leaves_a_send_with_a_stale_setup() {
    let (db, other, alice) = listening_with_another_instance().await;
    let store: &Store = &db;
    let load = loader(store, &alice);
    assert_eq!(load(None).await.settings.preferred_name, "");

    // Cut every listener connection to this database, as a Postgres restart or a proxy would.
    let mut admin = sqlx::PgConnection::connect(db.url()).await.unwrap();
    let cut: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE application_name = $1 AND datname = current_database()",
    )
    .bind(LISTENER_APPLICATION_NAME)
    .fetch_all(&mut admin)
    .await
    .unwrap();
    assert!(!cut.is_empty(), "the listener has a connection of its own");

    // Whether or not the listener is back when this lands, the change must reach a send.
    rename_elsewhere(
        &other,
        &alice,
        &load,
        "During the cut",
        "a change made while the listener was cut",
    )
    .await;

    // The listener comes back by itself and notifications flow again.
    listening(store).await;
    rename_elsewhere(
        &other,
        &alice,
        &load,
        "After",
        "a change after the listener came back",
    )
    .await;

    admin.close().await.unwrap();
    other.close().await;
    db.close().await;
}
