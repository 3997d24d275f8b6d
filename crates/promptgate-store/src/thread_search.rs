//! The thread search behind `GET /v1/threads?q=`: every thread of the user, found by its title or by
//! one of its messages, best first, a page at a time.
//!
//! A thread matches when every query word starts a word of its title, or of one of its messages
//! (with the title: the words may be split between the two). Its score is its best match: bm25 on
//! SQLite, `ts_rank` on Postgres, title words weighing ten times the text's; ties go to the thread
//! whose matching words are the most recent. Both indexes hold only keyed words (see [`crate::search`]), so the
//! lookup reads the searching user's entries only.

use crate::connect::{Backend, Store};
use crate::error::Result;
use crate::observed::Observed;
use crate::pages::threads_page;
use crate::search::{fts5_match, pg_rank_tsquery, pg_tsquery, query_words};
use crate::types::{Page, Thread};
use crate::util::bound_limit;

/// Matches per thread, as `(thread_id, score, at)`: each message (with its thread's title) and each
/// title on its own, so a thread without messages is found too; `at` breaks ties in favour of recent
/// words. `$1` is the user, `$2` the match expression, `$5` the project when one is asked for.
///
/// On Postgres the rank is read from the row's stored `rank_vector` (its words without the user's key,
/// migration 0018) with the query's words unkeyed (`{rank}`, the last parameter): ranking the keyed
/// index expression would tokenise every match again.
///
/// The user is compared as `user_id || ''` on purpose: the keyed match already keeps the search to
/// the user's words, and a comparison the user's btree indexes could answer would let a plan made
/// without knowing the user (a prepared statement's generic plan) walk all of a heavy user's rows
/// instead of asking the search index.
const SQLITE_HITS: &str = "\
    SELECT m.thread_id AS thread_id, bm25(chat_search, 10.0, 1.0) AS score, m.created_at AS at \
    FROM chat_search JOIN messages m ON m.pk = chat_search.rowid \
    WHERE chat_search MATCH $2 AND m.user_id || '' = $1 {in_project} \
    UNION ALL \
    SELECT h.id, 10.0 * bm25(thread_title_search), h.updated_at FROM thread_title_search \
    JOIN threads h ON h.search_rowid = thread_title_search.rowid \
    WHERE thread_title_search MATCH $2 AND h.user_id || '' = $1 {title_in_project}";

const POSTGRES_HITS: &str = "\
    SELECT m.thread_id AS thread_id, \
        ts_rank(m.rank_vector, to_tsquery('simple', {rank})) AS score, \
        m.created_at AS at \
    FROM messages m \
    WHERE message_search_vector(m.user_id, m.title_terms, m.search_terms) @@ to_tsquery('simple', $2) \
        AND m.user_id || '' = $1 {in_project} \
    UNION ALL \
    SELECT h.id, ts_rank(h.rank_vector, to_tsquery('simple', {rank})), h.updated_at \
    FROM threads h \
    WHERE thread_search_vector(h.user_id, h.title_terms) @@ to_tsquery('simple', $2) \
        AND h.user_id || '' = $1 {title_in_project}";

impl Store {
    /// Up to `limit` of the user's threads matching `query`, best first, skipping the first `skip`;
    /// only the project's threads when `project_id` is given. A query without words finds nothing.
    pub async fn search_threads(
        &self,
        user: &str,
        project_id: Option<&str>,
        query: &str,
        skip: u32,
        limit: u32,
    ) -> Result<Page<Thread>> {
        let words = query_words(query);
        if words.is_empty() {
            return Ok(Page {
                items: Vec::new(),
                more: false,
            });
        }
        let sql = search_threads_sql(self.backend(), project_id.is_some());
        let expr = match self.backend() {
            Backend::Sqlite => fts5_match(user, &words),
            Backend::Postgres => pg_tsquery(user, &words),
        };
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(user)
            .bind(expr)
            .bind(i64::from(limit) + 1)
            .bind(i64::from(skip));
        if let Some(project) = project_id {
            q = q.bind(project);
        }
        if self.backend() == Backend::Postgres {
            q = q.bind(pg_rank_tsquery(&words));
        }
        // Not kept prepared: each search is planned for its own user and words, so a plan made for
        // the average user is never reused for one with a hundred thousand threads.
        let rows = q
            .persistent(false)
            .fetch_all(&self.pool)
            .observed("thread_search.search_threads")
            .await?;
        threads_page(&rows, limit)
    }
}

/// The search statement: `$1` user, `$2` match expression, `$3` rows, `$4` rows skipped, `$5` the
/// project when `by_project`, then on Postgres the rank query ([`pg_rank_tsquery`]). The page is
/// chosen from the hits alone; only its threads are read.
pub(crate) fn search_threads_sql(backend: Backend, by_project: bool) -> String {
    let (hits, best) = match backend {
        Backend::Sqlite => (SQLITE_HITS, "MIN(x.score)"),
        Backend::Postgres => (POSTGRES_HITS, "-MAX(x.score)"),
    };
    let (in_project, title_in_project) = if by_project {
        (
            "AND m.thread_id IN (SELECT id FROM threads WHERE user_id = $1 AND project_id = $5)",
            "AND h.project_id = $5",
        )
    } else {
        ("", "")
    };
    let rank = if by_project { "$6" } else { "$5" };
    let hits = hits
        .replace("{in_project}", in_project)
        .replace("{title_in_project}", title_in_project)
        .replace("{rank}", rank);
    let limit_clause = bound_limit(3);
    format!(
        "SELECT t.id, t.project_id, t.title, t.created_at, t.updated_at FROM (\
         SELECT x.thread_id AS thread_id, {best} AS rank, MAX(x.at) AS at FROM ({hits}) x \
         GROUP BY x.thread_id ORDER BY rank, at DESC, x.thread_id DESC {limit_clause} OFFSET $4) p \
         JOIN threads t ON t.user_id = $1 AND t.id = p.thread_id \
         ORDER BY p.rank, p.at DESC, p.thread_id DESC"
    )
}
