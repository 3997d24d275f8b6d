//! The built-in tool executors against real parts: the SQLite and Postgres stores, a SearXNG-speaking
//! search server and a small web site, both on loopback.
// Helpers outside #[test] functions unwrap too: a failed setup step is a failed test.
#![allow(clippy::unwrap_used, clippy::panic)]

/// Expands `async fn name(store: &Store) { … }` into a module with a `sqlite` and a `postgres` test.
macro_rules! on_both_stores {
    ($(async fn $name:ident($store:ident: &Store) $body:block)+) => {$(
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            async fn check($store: &promptgate_store::Store) $body

            #[tokio::test]
            async fn sqlite() {
                let db = promptgate_store::testing::TestDb::sqlite().await;
                check(&db).await;
                db.close().await;
            }

            #[tokio::test]
            async fn postgres() {
                let db = promptgate_store::testing::TestDb::postgres().await;
                check(&db).await;
                db.close().await;
            }
        }
    )+};
}

#[path = "../web_support.rs"]
mod web_support;

mod artifacts;
mod common;
mod project_chats;
mod skill;
mod tasks;
mod web_tools;
