//! One suite, two backends: every test here runs against SQLite (a temp file) and Postgres (a fresh
//! database on the cluster from scripts/with-postgres.sh), as `<area>::<test>::sqlite` and
//! `<area>::<test>::postgres`.
// Helpers outside #[test] functions unwrap too: a failed setup step is a failed test.
#![allow(clippy::unwrap_used, clippy::field_reassign_with_default)]

/// Expands `async fn name(store: &Store) { … }` into a module with a `sqlite` and a `postgres` test.
macro_rules! conformance {
    ($(async fn $name:ident($store:ident: &Store) $body:block)+) => {$(
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            async fn check($store: &promptgate_store::Store) $body

            #[tokio::test]
            async fn sqlite() {
                let db = promptgate_store::testing::TestDb::sqlite().await;
                check(&promptgate_store::testing::with_test_box(&db)).await;
                db.close().await;
            }

            #[tokio::test]
            async fn postgres() {
                let db = promptgate_store::testing::TestDb::postgres().await;
                check(&promptgate_store::testing::with_test_box(&db)).await;
                db.close().await;
            }
        }
    )+};
}

mod common;
mod context;
mod messages;
mod models;
mod postgres_only;
mod projects;
mod search;
mod secrets;
mod skills;
mod sqlite_only;
mod tasks;
mod turn_claims;
mod users;
mod workspace;
