//! The scale of lists and search: users with 100, 1,000, 10,000 and 100,000 threads side by side in
//! one database, on SQLite and on Postgres, and the time of the store calls behind
//! `GET /v1/threads` (first page), `GET /v1/threads/{id}/messages` (a page of a 20,000-message thread)
//! and `GET /v1/threads?q=` (a word in one old thread, and a word in 1% of the threads), for each
//! user. The rows are written with set-based SQL, through the schema's own triggers, so the search
//! indexes are built as the gateway would build them.

use std::time::{Duration, Instant};

use anyhow::Context;
use promptgate_store::{Backend, Store};
use sqlx::AnyPool;

/// Words of the filled text: `RARE` is in one thread of each user (its oldest), a `k<n>q` word in
/// every hundredth thread.
const RARE: &str = "zeppelin";
const COMMON: &str = "k7q";
/// Messages of the one long thread (the lightest user's).
const LONG_THREAD: u64 = 20_000;
const PAGE: u32 = 50;

/// What to fill and how often to measure each call.
#[derive(Debug, Clone)]
pub struct ListsOptions {
    pub sizes: Vec<u64>,
    pub reps: usize,
    /// A Postgres cluster (superuser URL) to create a scratch database on; SQLite only without it.
    pub postgres_url: Option<String>,
}

/// One measured call: median and 95th percentile over the repetitions.
#[derive(Debug, Clone)]
pub struct Timing {
    pub backend: &'static str,
    pub threads: u64,
    pub call: &'static str,
    pub median: Duration,
    pub p95: Duration,
}

/// Fills each backend and measures; the rows of the result table.
pub async fn run(options: &ListsOptions) -> anyhow::Result<Vec<Timing>> {
    let mut timings = Vec::new();
    let dir = std::env::temp_dir().join(format!("promptgate-scale-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir)?;
    let sqlite = format!("sqlite://{}?mode=rwc", dir.join("scale.db").display());
    let outcome = measure_backend("SQLite", &sqlite, options).await;
    let _ = std::fs::remove_dir_all(&dir);
    timings.extend(outcome?);
    if let Some(admin) = &options.postgres_url {
        let (url, name) = scratch_database(admin).await?;
        let outcome = measure_backend("Postgres", &url, options).await;
        drop_database(admin, &name).await;
        timings.extend(outcome?);
    }
    Ok(timings)
}

async fn measure_backend(
    label: &'static str,
    url: &str,
    options: &ListsOptions,
) -> anyhow::Result<Vec<Timing>> {
    let store = Store::connect(url).await?;
    store.migrate().await?;
    sqlx::any::install_default_drivers();
    let pool = AnyPool::connect(url).await?;
    let mut sizes = options.sizes.clone();
    sizes.sort_unstable();
    let mut users = Vec::new();
    for &size in &sizes {
        let user = store.create_user(&format!("scale-{size}")).await?.id;
        let started = Instant::now();
        fill_threads(&pool, store.backend(), &user, size).await?;
        tracing::info!(backend = label, threads = size, took = ?started.elapsed(), "filled");
        users.push((size, user));
    }
    let lightest = users.first().context("no sizes")?.1.clone();
    fill_long_thread(&pool, store.backend(), &lightest).await?;
    sqlx::query("ANALYZE").execute(&pool).await?;
    pool.close().await;

    let mut timings = Vec::new();
    for (size, user) in &users {
        let calls = measure_user(&store, user, *size == users[0].0, options.reps).await?;
        timings.extend(calls.into_iter().map(|(call, (median, p95))| Timing {
            backend: label,
            threads: *size,
            call,
            median,
            p95,
        }));
    }
    store.close().await;
    Ok(timings)
}

/// The calls of one user; the message pages only for the user with the long thread.
async fn measure_user(
    store: &Store,
    user: &str,
    has_long_thread: bool,
    reps: usize,
) -> anyhow::Result<Vec<(&'static str, (Duration, Duration))>> {
    let mut out = vec![
        (
            "thread list, first page",
            time(reps, || async {
                store.list_threads_page(user, None, None, PAGE).await.map(|_| ())
            })
            .await?,
        ),
        (
            "search, a word in one old thread",
            time(reps, || async {
                let page = store.search_threads(user, None, RARE, 0, PAGE).await?;
                anyhow::ensure!(page.items.len() == 1, "the old thread was not found");
                Ok(())
            })
            .await?,
        ),
        (
            "search, a word in 1% of threads (first page)",
            time(reps, || async {
                store
                    .search_threads(user, None, COMMON, 0, PAGE)
                    .await
                    .map(|_| ())
            })
            .await?,
        ),
    ];
    if has_long_thread {
        out.push((
            "messages, newest page of 20,000",
            time(reps, || async {
                store
                    .list_messages_page(user, "long", None, PAGE, false)
                    .await
                    .map(|_| ())
            })
            .await?,
        ));
        let middle = i64::try_from(LONG_THREAD / 2)?;
        out.push((
            "messages, a page from the middle of 20,000",
            time(reps, || async {
                store
                    .list_messages_page(user, "long", Some(middle), PAGE, false)
                    .await
                    .map(|_| ())
            })
            .await?,
        ));
    }
    Ok(out)
}

/// Median and 95th percentile of `reps` runs of `call`, after one unmeasured run.
async fn time<F, Fut, E>(reps: usize, call: F) -> anyhow::Result<(Duration, Duration)>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<(), E>>,
    E: Into<anyhow::Error>,
{
    call().await.map_err(Into::into)?;
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        let started = Instant::now();
        call().await.map_err(Into::into)?;
        samples.push(started.elapsed());
    }
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    Ok((at(0.5), at(0.95)))
}

/// `1..=n` as a row source named `n(i)`, in the backend's dialect.
fn series(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => {
            "(WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < $2) SELECT i FROM s) n"
        }
        Backend::Postgres => "(SELECT generate_series(1, $2::bigint) AS i) n",
    }
}

/// `size` threads for `user`, each with a question and an answer; thread `i` was last active at
/// `i` ms, so thread 1 is the oldest.
async fn fill_threads(pool: &AnyPool, backend: Backend, user: &str, size: u64) -> anyhow::Result<()> {
    let n = series(backend);
    let topic = "'k' || (i % 100) || 'q'";
    let title = format!("'notes ' || i || ' on ' || {topic}");
    let statements = [
        format!(
            "INSERT INTO threads (user_id, id, project_id, title, title_terms, created_at, updated_at) \
             SELECT $1, 't' || i, NULL, {title}, {title}, i, i FROM {n}"
        ),
        message_insert(
            n,
            "1",
            "'user'",
            "NULL",
            &format!(
                "'how should i plan the ' || {topic} || ' garden in week ' || i || CASE WHEN i = 1 THEN ' {RARE}' ELSE '' END"
            ),
        ),
        message_insert(
            n,
            "2",
            "'assistant'",
            "'complete'",
            &format!("'plant roses early and water the ' || {topic} || ' beds every morning'"),
        ),
    ];
    for sql in statements {
        insert_series(pool, sql, user, size).await?;
    }
    Ok(())
}

/// An insert of one message per row of `n` into thread `t<i>` at position `seq`, with `text`.
fn message_insert(n: &str, seq: &str, role: &str, status: &str, text: &str) -> String {
    format!(
        "INSERT INTO messages (user_id, id, thread_id, seq, role, parts, metadata, status, search_text, \
         search_terms, created_at) \
         SELECT $1, 'm' || i || '-' || {seq}, 't' || i, {seq}, {role}, \
         '[{{\"type\":\"text\",\"text\":\"' || x || '\"}}]', '{{}}', {status}, x, x, i \
         FROM (SELECT i, {text} AS x FROM {n}) w"
    )
}

/// The thread `long`: 20,000 messages, questions and answers in turn.
async fn fill_long_thread(pool: &AnyPool, backend: Backend, user: &str) -> anyhow::Result<()> {
    sqlx::query(
        "INSERT INTO threads (user_id, id, project_id, title, title_terms, created_at, updated_at) \
         VALUES ($1, 'long', NULL, 'a long thread', 'a long thread', 0, 0)",
    )
    .bind(user)
    .execute(pool)
    .await?;
    let n = series(backend);
    let sql = format!(
        "INSERT INTO messages (user_id, id, thread_id, seq, role, parts, metadata, status, search_text, \
         search_terms, created_at) \
         SELECT $1, 'l' || i, 'long', i, CASE WHEN i % 2 = 1 THEN 'user' ELSE 'assistant' END, \
         '[{{\"type\":\"text\",\"text\":\"message ' || i || ' of the long thread\"}}]', '{{}}', \
         CASE WHEN i % 2 = 1 THEN NULL ELSE 'complete' END, \
         'message ' || i || ' of the long thread', 'message ' || i || ' of the long thread', i FROM {n}"
    );
    insert_series(pool, sql, user, LONG_THREAD).await
}

/// Runs one generated insert: `$1` is the user, `$2` the length of the series its rows come from.
async fn insert_series(pool: &AnyPool, sql: String, user: &str, rows: u64) -> anyhow::Result<()> {
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(user)
        .bind(i64::try_from(rows)?)
        .execute(pool)
        .await?;
    Ok(())
}

async fn scratch_database(admin: &str) -> anyhow::Result<(String, String)> {
    sqlx::any::install_default_drivers();
    let name = format!("scale_{}", uuid::Uuid::new_v4().simple());
    let pool = AnyPool::connect(admin).await?;
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&pool)
        .await?;
    pool.close().await;
    let mut url = url::Url::parse(admin)?;
    url.set_path(&name);
    Ok((url.to_string(), name))
}

async fn drop_database(admin: &str, name: &str) {
    if let Ok(pool) = AnyPool::connect(admin).await {
        let sql = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
        if let Err(err) = sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&pool).await {
            tracing::warn!(%err, "could not drop the scratch database");
        }
        pool.close().await;
    }
}

/// The timings as a markdown table, one row per backend and user, one column per call.
pub fn markdown(timings: &[Timing]) -> String {
    let mut out = String::from(
        "| store | threads of the user | call | median ms | p95 ms |\n|---|---:|---|---:|---:|\n",
    );
    for t in timings {
        out.push_str(&format!(
            "| {} | {} | {} | {:.2} | {:.2} |\n",
            t.backend,
            t.threads,
            t.call,
            t.median.as_secs_f64() * 1000.0,
            t.p95.as_secs_f64() * 1000.0
        ));
    }
    out
}
