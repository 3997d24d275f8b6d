//! Opening the database behind a `Store`: the backend from the URL (Postgres, or SQLite with its file
//! prepared), the pool, the Postgres listener for setup changes, migrations, the readiness ping, and the
//! store's clock for row timestamps.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::{AnyPool, Executor, SqlSafeStr};

use crate::error::{Result, StoreError};
use crate::observed::Observed;
use crate::setup::{ChangeSignals, SetupCache};
use crate::statement::Sql;

/// Which database a [`Store`] talks to; the few statements that must differ (full-text search) branch
/// on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Postgres,
    Sqlite,
}

/// The repository. Cheap to clone: clones share the connection pools and the clock.
#[derive(Clone)]
pub struct Store {
    /// Where reads run.
    pub(crate) pool: AnyPool,
    /// Where every write runs: on a SQLite file a pool of its own with one connection, so writes
    /// queue in the pool instead of polling in SQLite's busy handler, and the one connection that
    /// writes keeps its page cache (a connection drops it whenever another one has committed). On
    /// Postgres and in-memory SQLite, the same pool as reads.
    pub(crate) writer: AnyPool,
    backend: Backend,
    last_ms: Arc<AtomicI64>,
    pub(crate) setups: Arc<SetupCache>,
    /// Tokens checked recently, honoured while the database is unreachable.
    pub(crate) recent_tokens: Arc<crate::recent_tokens::RecentTokens>,
    /// Whether Postgres was found unreachable a moment ago (see `reach`).
    pub(crate) reach: Arc<crate::reach::Reachability>,
    /// Postgres only: the task that hears about setup changes made elsewhere.
    listener: Option<Arc<ListenerTask>>,
    /// Seals MCP header values and bearer tokens; without one they cannot be stored (see `secrets`).
    pub(crate) secrets: Option<Arc<dyn promptgate_core::storage::SecretBox>>,
    /// Stop and follow requests for running turns, heard from any instance (see `turn_claims`).
    pub(crate) turn_signals: Arc<crate::turn_claims::TurnSignals>,
    /// How long the writes of a send wait for the database (see `write_waits`).
    pub(crate) write_waits: Arc<crate::write_waits::WriteWaits>,
}

/// Stops the listener when the last clone of the store goes away.
struct ListenerTask(tokio::task::AbortHandle);

impl Drop for ListenerTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

/// One schema change, written once per backend. Append new versions; never edit a shipped one (the
/// migrator checks their checksums).
struct SchemaVersion {
    version: i64,
    name: &'static str,
    postgres: &'static str,
    /// `None` when the change concerns Postgres only.
    sqlite: Option<&'static str>,
}

/// A version whose Postgres file is `migrations/postgres/<file>`, with `sqlite` beside it.
macro_rules! schema_version {
    ($version:literal, $name:literal, $file:literal, $sqlite:expr) => {
        SchemaVersion {
            version: $version,
            name: $name,
            postgres: include_str!(concat!("../../../migrations/postgres/", $file)),
            sqlite: $sqlite,
        }
    };
}

/// A version written for both backends, the same file name under `migrations/postgres` and
/// `migrations/sqlite` (the file name is written once, so the two cannot drift apart).
macro_rules! both {
    ($version:literal, $name:literal, $file:literal) => {
        schema_version!(
            $version,
            $name,
            $file,
            Some(include_str!(concat!("../../../migrations/sqlite/", $file)))
        )
    };
}

/// A version that concerns Postgres only.
macro_rules! postgres_only {
    ($version:literal, $name:literal, $file:literal) => {
        schema_version!($version, $name, $file, None)
    };
}

const MIGRATIONS: &[SchemaVersion] = &[
    both!(1, "init", "0001_init.sql"),
    both!(2, "config versions", "0002_config_versions.sql"),
    postgres_only!(3, "notify config changes", "0003_notify_config_changes.sql"),
    both!(4, "sealed mcp secrets", "0004_sealed_mcp_secrets.sql"),
    both!(
        5,
        "thread-scoped message ids",
        "0005_thread_scoped_message_ids.sql"
    ),
    both!(6, "shared turn state", "0006_shared_turn_state.sql"),
    both!(7, "workspace files", "0007_workspace_files.sql"),
    both!(9, "user storage", "0009_user_storage.sql"),
    both!(11, "thread context", "0011_thread_context.sql"),
    both!(13, "user-scoped search", "0013_user_scoped_search.sql"),
    both!(14, "message paging", "0014_message_paging.sql"),
    both!(15, "client handoffs", "0015_client_handoffs.sql"),
    both!(16, "responses", "0016_responses.sql"),
    // FTS5 ranks from its own index; nothing to store.
    postgres_only!(18, "search rank vectors", "0018_search_rank_vectors.sql"),
    both!(19, "mcp oauth", "0019_mcp_oauth.sql"),
    both!(20, "tool approvals", "0020_tool_approvals.sql"),
    both!(21, "usage ledger and fallbacks", "0021_usage_ledger.sql"),
    both!(22, "keys and budgets", "0022_keys_budgets.sql"),
    both!(23, "tool questions", "0023_tool_questions.sql"),
    both!(24, "money budgets", "0024_money_budgets.sql"),
    both!(
        25,
        "budgets in the setup counters",
        "0025_budgets_config_versions.sql"
    ),
    both!(
        26,
        "the tools an authorized MCP server last listed",
        "0026_mcp_known_tools.sql"
    ),
];

const SQLITE_BUSY_TIMEOUT_MS: u32 = 5_000;
/// Connections that read a SQLite file; its writes have one more of their own.
const SQLITE_READERS: u32 = 4;
const POSTGRES_CONNECTIONS: u32 = 16;
/// How long a query waits for a Postgres connection. Short, so that while Postgres is down a request
/// fails fast with "unavailable" instead of hanging.
const POSTGRES_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(2);
/// SQLite has no server to lose: a wait for a connection is a wait for the one writer, which a
/// burst of first sends can make long.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

impl Store {
    /// Opens a pool for `sqlite://path/to/file.db[?mode=rwc]`, `sqlite::memory:` or `postgres://…`.
    ///
    /// A SQLite file is created (with its parent directory) when missing, readable by its owner only
    /// (mode 0600), and runs in WAL mode
    /// (synchronous NORMAL) with a busy timeout and foreign keys on. An in-memory SQLite database
    /// lives in exactly one connection that the pool never closes, because every new connection
    /// would be a new, empty database.
    pub async fn connect(url: &str) -> Result<Store> {
        Self::connect_waiting(url, POSTGRES_ACQUIRE_TIMEOUT).await
    }

    /// [`Store::connect`] with another acquire timeout for Postgres, so a test of an outage can tell
    /// one wait from two without measuring either.
    #[cfg(any(test, feature = "testing"))]
    pub async fn connect_with_acquire_timeout(url: &str, postgres_acquire: Duration) -> Result<Store> {
        Self::connect_waiting(url, postgres_acquire).await
    }

    async fn connect_waiting(url: &str, postgres_acquire: Duration) -> Result<Store> {
        install_default_drivers();
        let (backend, url) = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            (Backend::Postgres, url.to_owned())
        } else if url.starts_with("sqlite:") {
            (Backend::Sqlite, prepare_sqlite_url(url)?)
        } else {
            return Err(StoreError::Invalid(
                "database URL must start with sqlite: or postgres://".to_owned(),
            ));
        };
        let (pool, writer) = match backend {
            Backend::Postgres => {
                let pool = AnyPoolOptions::new()
                    .max_connections(POSTGRES_CONNECTIONS)
                    .acquire_timeout(postgres_acquire)
                    .connect(&url)
                    .await?;
                (pool.clone(), pool)
            }
            Backend::Sqlite if is_sqlite_memory(&url) => {
                let pool = AnyPoolOptions::new()
                    .max_connections(1)
                    .min_connections(1)
                    .idle_timeout(None)
                    .max_lifetime(None)
                    .acquire_timeout(ACQUIRE_TIMEOUT)
                    .after_connect(|conn, _| {
                        Box::pin(async move {
                            conn.execute("PRAGMA foreign_keys = ON").await?;
                            Ok(())
                        })
                    })
                    .connect(&url)
                    .await?;
                (pool.clone(), pool)
            }
            Backend::Sqlite => {
                // The writer first: it switches the file to WAL before any reader opens it.
                let writer = sqlite_file_pool(1).connect(&url).await?;
                (sqlite_file_pool(SQLITE_READERS).connect(&url).await?, writer)
            }
        };
        // SQLite has one instance, whose signals never leave the process; Postgres hears them once
        // its listener is connected.
        let turn_signals = Arc::new(crate::turn_claims::TurnSignals::new(backend == Backend::Sqlite));
        let (setups, listener) = match backend {
            Backend::Sqlite => (Arc::new(SetupCache::new(ChangeSignals::None)), None),
            Backend::Postgres => {
                let setups = Arc::new(SetupCache::new(ChangeSignals::Listener));
                #[expect(
                    clippy::disallowed_methods,
                    reason = "the store has no task tracker: the listener lives as long as the store, which aborts it on close"
                )]
                let task = tokio::spawn(crate::listener::follow_changes(
                    url,
                    Arc::downgrade(&setups),
                    Arc::downgrade(&turn_signals),
                ));
                (setups, Some(Arc::new(ListenerTask(task.abort_handle()))))
            }
        };
        let reach_span = (backend == Backend::Postgres).then_some(postgres_acquire + crate::reach::OVERLAP);
        Ok(Store {
            pool,
            writer,
            backend,
            last_ms: Arc::new(AtomicI64::new(0)),
            setups,
            recent_tokens: Default::default(),
            reach: Arc::new(crate::reach::Reachability::new(reach_span)),
            listener,
            secrets: None,
            turn_signals,
            write_waits: Default::default(),
        })
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Applies the embedded migrations for this backend; safe to call on every start.
    pub async fn migrate(&self) -> Result<()> {
        let migrations = MIGRATIONS
            .iter()
            .filter_map(|m| {
                let sql = match self.backend {
                    Backend::Postgres => m.postgres,
                    Backend::Sqlite => m.sqlite?,
                };
                Some(Migration::new(
                    m.version,
                    m.name.into(),
                    MigrationType::Simple,
                    sql.into_sql_str(),
                    false,
                ))
            })
            .collect();
        Migrator::with_migrations(migrations).run(&self.writer).await?;
        Ok(())
    }

    /// A transaction that writes. On SQLite it takes the writer's lock at BEGIN, waiting for it as
    /// long as the busy timeout allows: a deferred transaction reads first (preparing a write to
    /// messages or threads reads the full-text tables' settings) and then fails at once with
    /// "database is locked" when another writer committed in between.
    pub(crate) async fn begin_write(&self) -> Result<sqlx::Transaction<'static, sqlx::Any>> {
        let begin = match self.backend {
            Backend::Sqlite => "BEGIN IMMEDIATE",
            Backend::Postgres => "BEGIN",
        };
        let _waiting = self.write_waits.wait();
        Ok(self
            .writer
            .begin_with(begin)
            .observed("transaction.begin")
            .await?)
    }

    /// A transaction whose first statement writes. SQLite takes the writer's lock at that
    /// statement, waiting for it as the busy timeout allows, so a deferred BEGIN is enough; one that
    /// may read before its first write needs [`Store::begin_write`].
    pub(crate) async fn begin_writing_first(&self) -> Result<sqlx::Transaction<'static, sqlx::Any>> {
        #[expect(
            clippy::disallowed_methods,
            reason = "the one place a deferred transaction begins"
        )]
        let begin = self.writer.begin();
        Ok(begin.observed("transaction.begin").await?)
    }

    /// How long this store's writes wait for the database, shared by its clones.
    pub fn write_waits(&self) -> Arc<crate::write_waits::WriteWaits> {
        Arc::clone(&self.write_waits)
    }

    /// One round trip to the database (readiness checks).
    pub async fn ping(&self) -> Result<()> {
        "SELECT 1"
            .with_values(())
            .execute(&self.pool, "connect.ping")
            .await?;
        Ok(())
    }

    /// Closes every connection; later calls fail.
    pub async fn close(&self) {
        if let Some(listener) = &self.listener {
            listener.0.abort();
        }
        self.pool.close().await;
        self.writer.close().await;
    }

    /// Now in epoch milliseconds: strictly greater than any time this store handed out before while
    /// that keeps it within [`MAX_LEAD_MS`] of the wall clock; past that, the last time again.
    pub(crate) fn now_ms(&self) -> i64 {
        #[expect(
            clippy::disallowed_methods,
            reason = "the store stamps rows with the wall clock itself (the crate's conventions)"
        )]
        let wall = chrono::Utc::now().timestamp_millis();
        let mut last = self.last_ms.load(Ordering::Relaxed);
        loop {
            let next = next_stamp(wall, last);
            if next == last {
                return last;
            }
            match self
                .last_ms
                .compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return next,
                Err(seen) => last = seen,
            }
        }
    }
}

/// How far ahead of the wall clock the store's times may run to stay strictly increasing. Every
/// store call that asks for the time takes a millisecond, so past a thousand calls a second (a few
/// hundred sends a second) an unbounded count runs further ahead for as long as the load lasts: 18 s
/// ahead after a 30-second run at 400 sends a second, which put leases, expiries and the usage
/// ledger's ranges in the future. Past the lead, times repeat and ids break the tie.
const MAX_LEAD_MS: i64 = 1_000;

/// The time after `last` when the wall clock reads `wall`.
fn next_stamp(wall: i64, last: i64) -> i64 {
    if last.saturating_add(1) > wall.saturating_add(MAX_LEAD_MS) {
        last
    } else {
        wall.max(last + 1)
    }
}

/// Options for a pool of `connections` on a SQLite file.
fn sqlite_file_pool(connections: u32) -> AnyPoolOptions {
    AnyPoolOptions::new()
        .max_connections(connections)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        // A file connection cannot go stale the way a network one can, and the check is a round
        // trip to the connection's worker thread before every query.
        .test_before_acquire(false)
        .after_connect(|conn, _| {
            Box::pin(async move {
                conn.execute("PRAGMA journal_mode = WAL").await?;
                // In WAL mode NORMAL cannot corrupt the database; it only skips the fsync per
                // commit (a power cut may lose the last commits, a crash does not).
                conn.execute("PRAGMA synchronous = NORMAL").await?;
                // Writes queue in the writer's pool, so this wait is for another process that has
                // the same file open.
                conn.execute(sqlx::AssertSqlSafe(format!(
                    "PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}"
                )))
                .await?;
                conn.execute("PRAGMA foreign_keys = ON").await?;
                Ok(())
            })
        })
}

fn is_sqlite_memory(url: &str) -> bool {
    url == "sqlite::memory:" || url.contains(":memory:") || url.contains("mode=memory")
}

/// Makes sure a file database can be created: the parent directory exists and, without an explicit
/// `mode`, the file is opened read-write-create.
fn prepare_sqlite_url(url: &str) -> Result<String> {
    if is_sqlite_memory(url) {
        return Ok(url.to_owned());
    }
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .unwrap_or(url);
    let (path, query) = match rest.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (rest, None),
    };
    if path.is_empty() {
        return Err(StoreError::Invalid("sqlite URL names no file".to_owned()));
    }
    if let Some(parent) = Path::new(path).parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| {
            StoreError::Database(format!("cannot create directory {}: {e}", parent.display()))
        })?;
    }
    let mode = query.and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("mode=")));
    if mode.is_none_or(|mode| mode == "rwc") {
        create_private(Path::new(path))?;
    }
    Ok(match (query, mode) {
        (_, Some(_)) => url.to_owned(),
        (Some(q), None) => format!("sqlite://{path}?{q}&mode=rwc"),
        (None, None) => format!("sqlite://{path}?mode=rwc"),
    })
}

/// Creates the database file, when missing, readable and writable by its owner only: it holds every
/// user's conversations and token hashes. SQLite gives the `-wal` and `-shm` files beside it the
/// same mode. A file that exists is left as the operator made it.
fn create_private(path: &Path) -> Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(StoreError::Database(format!(
            "cannot create database file {}: {e}",
            path.display()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::{MAX_LEAD_MS, next_stamp};

    #[test]
    fn stamps_increase_within_a_millisecond_and_stop_at_the_lead() {
        let wall = 1_000_000;
        let mut last = 0;
        let stamps: Vec<i64> = (0..3 * MAX_LEAD_MS)
            .map(|_| {
                last = next_stamp(wall, last);
                last
            })
            .collect();
        assert_eq!(stamps[0], wall);
        assert_eq!(stamps[1], wall + 1);
        assert_eq!(stamps.last(), Some(&(wall + MAX_LEAD_MS)));
        // Once the wall clock passes the stamps, they follow it again.
        assert_eq!(next_stamp(wall + 5 * MAX_LEAD_MS, last), wall + 5 * MAX_LEAD_MS);
    }
}
