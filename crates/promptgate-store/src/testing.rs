//! Throwaway, migrated databases for tests (cargo feature `testing`).
//!
//! `TestDb::sqlite()` uses a file in a fresh temporary directory; `TestDb::postgres()` creates a fresh
//! database on the cluster named by `PROMPTGATE_TEST_POSTGRES_URL` (set by `scripts/with-postgres.sh`).
//! Both are removed by [`TestDb::close`], or on drop if a test ends early.
//!
//! Setup failures panic: this module only runs inside tests, where a panic is the failure report.
#![allow(clippy::panic, clippy::expect_used)]

use std::ops::Deref;
use std::path::PathBuf;

use crate::connect::Store;

/// Environment variable naming a Postgres superuser URL for tests.
pub const POSTGRES_URL_ENV: &str = "PROMPTGATE_TEST_POSTGRES_URL";

enum Cleanup {
    Dir(PathBuf),
    Database { admin_url: String, name: String },
    Done,
}

/// A migrated [`Store`] on a database that exists only for this test. Derefs to the store.
pub struct TestDb {
    store: Store,
    url: String,
    cleanup: Cleanup,
}

impl Deref for TestDb {
    type Target = Store;
    fn deref(&self) -> &Store {
        &self.store
    }
}

impl TestDb {
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// A SQLite file database in a new temporary directory.
    pub async fn sqlite() -> TestDb {
        let dir = std::env::temp_dir().join(format!("promptgate-test-{}", uuid::Uuid::new_v4()));
        let url = format!("sqlite://{}?mode=rwc", dir.join("store.db").display());
        let store = Store::connect(&url).await.expect("open the test SQLite database");
        store.migrate().await.expect("migrate the test SQLite database");
        TestDb {
            store,
            url,
            cleanup: Cleanup::Dir(dir),
        }
    }

    /// A second store on the same database, as another gateway instance (or the CLI) would open it.
    pub async fn another_instance(&self) -> Store {
        Store::connect(&self.url)
            .await
            .expect("open the test database a second time")
    }

    /// The database's URL, for tests that reach it without the store (by hand, as an operator would).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The URL of the SQLite file, for tests that reopen it. `None` for Postgres.
    pub fn sqlite_url(&self) -> Option<String> {
        match &self.cleanup {
            Cleanup::Dir(dir) => Some(format!("sqlite://{}", dir.join("store.db").display())),
            _ => None,
        }
    }

    /// A fresh database on the test cluster. Panics (failing the test) when the cluster is not
    /// configured: a Postgres test must never pass by not running.
    pub async fn postgres() -> TestDb {
        let admin_url = std::env::var(POSTGRES_URL_ENV).unwrap_or_else(|_| {
            panic!(
                "{POSTGRES_URL_ENV} is not set: run the tests through scripts/with-postgres.sh, \
                 e.g. `scripts/with-postgres.sh cargo nextest run -p promptgate-store`"
            )
        });
        let name = format!("t_{}", uuid::Uuid::new_v4().simple());
        let admin = Store::connect(&admin_url)
            .await
            .expect("connect to the test Postgres cluster");
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&admin.pool)
            .await
            .expect("create the test database");
        admin.close().await;
        let mut url = url::Url::parse(&admin_url).expect("parse the test Postgres URL");
        url.set_path(&name);
        let store = Store::connect(url.as_str())
            .await
            .expect("connect to the test database");
        store.migrate().await.expect("migrate the test database");
        TestDb {
            store,
            url: url.to_string(),
            cleanup: Cleanup::Database { admin_url, name },
        }
    }

    /// Closes the store and removes the database.
    pub async fn close(mut self) {
        self.store.close().await;
        match std::mem::replace(&mut self.cleanup, Cleanup::Done) {
            Cleanup::Dir(dir) => {
                let _ = std::fs::remove_dir_all(dir);
            }
            Cleanup::Database { admin_url, name } => drop_database(&admin_url, &name).await,
            Cleanup::Done => {}
        }
    }
}

async fn drop_database(admin_url: &str, name: &str) {
    if let Ok(admin) = Store::connect(admin_url).await {
        let sql = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
        if let Err(e) = sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&admin.pool).await {
            tracing::warn!("could not drop test database {name}: {e}");
        }
        admin.close().await;
    }
}

impl Drop for TestDb {
    /// A test that panicked never reached `close`: clean up anyway, on a thread with its own runtime
    /// because drop cannot await.
    fn drop(&mut self) {
        match std::mem::replace(&mut self.cleanup, Cleanup::Done) {
            Cleanup::Dir(dir) => {
                let _ = std::fs::remove_dir_all(dir);
            }
            Cleanup::Database { admin_url, name } => {
                let cleaner = std::thread::spawn(move || {
                    if let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() {
                        rt.block_on(drop_database(&admin_url, &name));
                    }
                });
                let _ = cleaner.join();
            }
            Cleanup::Done => {}
        }
    }
}

/// A stand-in for the gateway's cipher, for tests of the store alone (the store cannot depend on the
/// crate that holds the real one): reversible, visibly not the clear value, and refusing anything it
/// did not produce.
pub struct ReversibleBox;

impl promptgate_core::storage::SecretBox for ReversibleBox {
    fn seal(&self, plaintext: &str) -> std::result::Result<String, String> {
        Ok(format!("test.{}", hex::encode(plaintext.as_bytes())))
    }

    fn open(&self, sealed: &str) -> std::result::Result<String, String> {
        let encoded = sealed.strip_prefix("test.").ok_or("not sealed by this box")?;
        let bytes = hex::decode(encoded).map_err(|e| e.to_string())?;
        String::from_utf8(bytes).map_err(|e| e.to_string())
    }
}

/// The store of `db` with [`ReversibleBox`] sealing its MCP secrets.
pub fn with_test_box(store: &Store) -> Store {
    store.clone().with_secret_box(std::sync::Arc::new(ReversibleBox))
}

/// The same database with no sealer, as a gateway started without a key sees it.
pub fn without_box(store: &Store) -> Store {
    let mut bare = store.clone();
    bare.secrets = None;
    bare
}

/// The store as a test gets it from [`on_both_backends!`] when no wrapper is named.
pub fn plain(store: &Store) -> Store {
    store.clone()
}

/// Runs each test on both backends, as `<name>::sqlite` and `<name>::postgres`, on a fresh
/// [`TestDb`] each. Two forms:
///
/// - `on_both_backends! { async fn name(store: &Store) { … } … }` gives the body the store
///   (`wrap = path;` first hands it through `path(&Store) -> Store`, e.g. [`with_test_box`]) and
///   closes the database afterwards;
/// - `on_both_backends!(scenario, …);` calls `async fn scenario(db: TestDb)` in the enclosing
///   module, which owns the database.
///
/// The calling crate needs tokio (with `macros` and `rt`) among its dev-dependencies.
#[macro_export]
macro_rules! on_both_backends {
    ($(async fn $name:ident($store:ident: &Store) $body:block)+) => {
        $crate::on_both_backends! { wrap = $crate::testing::plain; $(async fn $name($store: &Store) $body)+ }
    };
    (wrap = $wrap:path; $(async fn $name:ident($store:ident: &Store) $body:block)+) => {$(
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            async fn check($store: &$crate::Store) $body

            #[tokio::test]
            async fn sqlite() {
                let db = $crate::testing::TestDb::sqlite().await;
                check(&$wrap(&db)).await;
                db.close().await;
            }

            #[tokio::test]
            async fn postgres() {
                let db = $crate::testing::TestDb::postgres().await;
                check(&$wrap(&db)).await;
                db.close().await;
            }
        }
    )+};
    ($($scenario:ident),+ $(,)?) => {$(
        mod $scenario {
            #[tokio::test]
            async fn sqlite() {
                super::$scenario($crate::testing::TestDb::sqlite().await).await;
            }

            #[tokio::test]
            async fn postgres() {
                super::$scenario($crate::testing::TestDb::postgres().await).await;
            }
        }
    )+};
}

/// How SQLite would run the thread search for `user` and `query`: its `EXPLAIN QUERY PLAN`, one line
/// per step. (On Postgres, see [`postgres_thread_search_generic_plan`].)
pub async fn thread_search_plan(store: &Store, user: &str, query: &str) -> Vec<String> {
    use crate::connect::Backend;
    use crate::util::Cols;
    assert_eq!(store.backend(), Backend::Sqlite, "SQLite's query plan");
    let words = crate::search::query_words(query);
    let sql = crate::thread_search::search_threads_sql(store.backend(), false);
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!("EXPLAIN QUERY PLAN {sql}")))
        .bind(user)
        .bind(crate::search::fts5_match(user, &words))
        .bind(21_i64)
        .bind(0_i64)
        .fetch_all(&store.pool)
        .await
        .expect("explain the search");
    rows.iter().map(|r| r.text(3).expect("plan detail")).collect()
}

/// One node of a Postgres plan, flattened out of `EXPLAIN (FORMAT JSON)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanNode {
    /// `Seq Scan`, `Bitmap Index Scan`, `Index Scan` …
    pub node_type: String,
    pub relation: Option<String>,
    /// The alias the statement gives the relation (`m`, `h`, `t`).
    pub alias: Option<String>,
    pub index: Option<String>,
    /// The alias of the nearest node above that has one (a bitmap heap scan's index scan is its
    /// child, so the alias of the heap scan tells whose index the child reads).
    pub parent_alias: Option<String>,
    /// What the node computes for each row it returns (`VERBOSE`'s output list).
    pub output: Vec<String>,
}

/// The generic plan of `sql` on Postgres, prepared with parameters of `types` exactly as the store
/// binds them and explained with `params` (SQL literals), as a flat list of nodes. The generic plan
/// is the one a reused prepared statement may fall back to: made without looking at the values.
pub async fn postgres_generic_plan(
    store: &Store,
    sql: &str,
    types: &str,
    params: &[String],
) -> Vec<PlanNode> {
    let mut conn = store.pool.acquire().await.expect("a connection");
    // The store's pool reads no `json` column, so the plan comes back as text through a function of
    // this session.
    for step in [
        "SET plan_cache_mode = force_generic_plan".to_owned(),
        format!("PREPARE generic_plan({types}) AS {sql}"),
        "CREATE FUNCTION pg_temp.plan_text(statement text) RETURNS text LANGUAGE plpgsql AS $f$ \
         DECLARE plan text; BEGIN EXECUTE statement INTO plan; RETURN plan; END $f$"
            .to_owned(),
    ] {
        sqlx::raw_sql(sqlx::AssertSqlSafe(step))
            .execute(&mut *conn)
            .await
            .expect("prepare the statement");
    }
    let explain = format!(
        "EXPLAIN (VERBOSE, FORMAT JSON) EXECUTE generic_plan({})",
        params.join(", ")
    );
    let text: String = sqlx::query_scalar("SELECT pg_temp.plan_text($1)")
        .bind(explain)
        .fetch_one(&mut *conn)
        .await
        .expect("explain the statement");
    sqlx::raw_sql("DEALLOCATE generic_plan; RESET plan_cache_mode; DROP FUNCTION pg_temp.plan_text(text)")
        .execute(&mut *conn)
        .await
        .expect("clean up");
    let plan: serde_json::Value = serde_json::from_str(&text).expect("a JSON plan");
    let mut nodes = Vec::new();
    flatten_plan(&plan[0]["Plan"], None, &mut nodes);
    nodes
}

/// The thread search as the store runs it for `user` and `query` (no project), its generic plan.
pub async fn postgres_thread_search_generic_plan(store: &Store, user: &str, query: &str) -> Vec<PlanNode> {
    let words = crate::search::query_words(query);
    let sql = crate::thread_search::search_threads_sql(store.backend(), false);
    let literal = |s: &str| format!("'{}'", s.replace('\'', "''"));
    let params = [
        literal(user),
        literal(&crate::search::pg_tsquery(user, &words)),
        "21".to_owned(),
        "0".to_owned(),
        literal(&crate::search::pg_rank_tsquery(&words)),
    ];
    postgres_generic_plan(store, &sql, "text, text, bigint, bigint, text", &params).await
}

/// The statement that appends a user message with id `message_id` to `thread`, as the store runs
/// it, with the literals of its parameters in order.
fn append_statement(store: &Store, user: &str, thread: &str, message_id: &str) -> (String, Vec<String>) {
    let new = crate::types::NewMessage {
        id: Some(message_id.to_owned()),
        thread_id: thread.to_owned(),
        role: crate::types::Role::User,
        parts: serde_json::json!([{"type": "text", "text": "Is it raining?"}]),
        metadata: serde_json::json!({}),
        status: None,
    };
    let messages = [new];
    let rows = crate::messages::MessageRows::of(&messages).expect("a message row");
    let sql = rows.insert(store.backend(), crate::messages::APPEND_SOURCE, "$3", 4, None);
    let literal = |s: &str| format!("'{}'", s.replace('\'', "''"));
    let params = vec![
        literal(user),
        literal(thread),
        "0".to_owned(),
        literal(message_id),
        literal("user"),
        literal("[]"),
        literal("{}"),
        "NULL".to_owned(),
        literal("Is it raining?"),
        literal("is it raining"),
    ];
    (sql, params)
}

/// How SQLite would append a user message with id `message_id` to `thread`: its `EXPLAIN QUERY
/// PLAN`, one line per step. (On Postgres, see [`postgres_append_generic_plan`].)
pub async fn append_plan(store: &Store, user: &str, thread: &str, message_id: &str) -> Vec<String> {
    use crate::connect::Backend;
    use crate::util::Cols;
    assert_eq!(store.backend(), Backend::Sqlite, "SQLite's query plan");
    let (sql, params) = append_statement(store, user, thread, message_id);
    let mut explained = format!("EXPLAIN QUERY PLAN {sql}");
    // Numbered parameters bound as literals, highest first so `$1` does not eat `$10`.
    for (at, value) in params.iter().enumerate().rev() {
        explained = explained.replace(&format!("${}", at + 1), value);
    }
    let rows = sqlx::query(sqlx::AssertSqlSafe(explained))
        .fetch_all(&store.pool)
        .await
        .expect("explain the append");
    rows.iter().map(|r| r.text(3).expect("plan detail")).collect()
}

/// The generic plan of appending a user message with id `message_id` to `thread` on Postgres.
pub async fn postgres_append_generic_plan(
    store: &Store,
    user: &str,
    thread: &str,
    message_id: &str,
) -> Vec<PlanNode> {
    let (sql, params) = append_statement(store, user, thread, message_id);
    let types = "text, text, bigint, text, text, text, text, text, text, text";
    postgres_generic_plan(store, &sql, types, &params).await
}

fn flatten_plan(node: &serde_json::Value, parent_alias: Option<&str>, out: &mut Vec<PlanNode>) {
    let field = |name: &str| node.get(name).and_then(|v| v.as_str()).map(str::to_owned);
    let this = PlanNode {
        node_type: field("Node Type").unwrap_or_default(),
        relation: field("Relation Name"),
        alias: field("Alias"),
        index: field("Index Name"),
        parent_alias: parent_alias.map(str::to_owned),
        output: node
            .get("Output")
            .and_then(|o| o.as_array())
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
    };
    let alias = this.alias.clone();
    out.push(this);
    for child in node.get("Plans").and_then(|p| p.as_array()).into_iter().flatten() {
        flatten_plan(child, alias.as_deref().or(parent_alias), out);
    }
}
