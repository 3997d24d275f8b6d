//! Keyword search over the text of a user's chats: the `search_project_chats` tool's message hits
//! here, the thread search of `GET /v1/threads?q=` in [`crate::thread_search`].
//!
//! The user's query is reduced to words (runs of letters and digits) before it reaches either engine,
//! so no input can be a syntax error: SQLite gets `"word"*` terms for FTS5, Postgres gets `'word':*`
//! terms for `to_tsquery('simple', …)`. Every word must match, as a prefix, in the message text or in
//! its thread's title; title matches weigh more. The excerpt is cut in Rust, the same for both.
//!
//! Both indexes hold every word behind its user's key (see migration 0013), and every query word is
//! given the searching user's key, so a search reads only that user's index entries.

use async_trait::async_trait;
use promptgate_core::storage::{ChatHit, ChatSearch, MessageSearch, StorageError};

use crate::connect::{Backend, Store};
use crate::error::Result;
use crate::observed::Observed;
use crate::spans::StoreCall;
use crate::util::{Cols, bound_limit, placeholders};

const MAX_QUERY_WORDS: usize = 16;
const MAX_WORD_CHARS: usize = 64;
const MAX_THREADS: usize = 1_000;
const MAX_LIMIT: u32 = 50;
const EXCERPT_CHARS: usize = 200;
/// How much text an excerpt shows before the first match.
const EXCERPT_LEAD: usize = 60;

/// Lower-cased runs of letters and digits: the words search sees, in text and in queries alike.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// What is stored for the engines to index: the words of `text`, separated by single spaces. Doing
/// this here rather than in SQL keeps both backends (and any database locale) on the same words.
pub(crate) fn search_terms(text: &str) -> String {
    words(text).collect::<Vec<_>>().join(" ")
}

/// The query's words, bounded in number and length.
pub(crate) fn query_words(query: &str) -> Vec<String> {
    words(query)
        .map(|w| w.chars().take(MAX_WORD_CHARS).collect())
        .take(MAX_QUERY_WORDS)
        .collect()
}

/// The key in front of every indexed word of `user`: the hex of the id, then `x` (which hex never
/// contains, so one user's key and word can never read as another user's key). The migrations build
/// the same key in SQL.
fn user_key(user: &str) -> String {
    let mut key: String = user.bytes().map(|b| format!("{b:02x}")).collect();
    key.push('x');
    key
}

/// The query as an FTS5 match expression over `user`'s words: every word, as a prefix.
pub(crate) fn fts5_match(user: &str, words: &[String]) -> String {
    let key = user_key(user);
    words
        .iter()
        .map(|w| format!("\"{key}{}\"*", w.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The query as a `to_tsquery('simple', …)` text over `user`'s words: every word, as a prefix.
pub(crate) fn pg_tsquery(user: &str, words: &[String]) -> String {
    prefix_tsquery(&user_key(user), words)
}

/// The same query without the user's key, for ranking a match from its stored `rank_vector`.
pub(crate) fn pg_rank_tsquery(words: &[String]) -> String {
    prefix_tsquery("", words)
}

fn prefix_tsquery(key: &str, words: &[String]) -> String {
    words
        .iter()
        .map(|w| format!("'{key}{}':*", w.replace('\'', "''")))
        .collect::<Vec<_>>()
        .join(" & ")
}

impl Store {
    /// The best `limit` (at most 50) messages in `thread_ids` matching every word of `query`, best
    /// first. Threads that are not the user's never match; messages without text (tool calls only)
    /// are skipped, since their excerpt would be empty.
    pub async fn search_messages(
        &self,
        user: &str,
        thread_ids: &[String],
        query: &str,
        limit: u32,
    ) -> Result<Vec<ChatHit>> {
        let words = query_words(query);
        let limit = limit.min(MAX_LIMIT);
        if words.is_empty() || thread_ids.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let threads = &thread_ids[..thread_ids.len().min(MAX_THREADS)];
        let in_list = placeholders(4, threads.len());
        let (sql, expr) = match self.backend() {
            Backend::Sqlite => (
                format!(
                    "SELECT m.thread_id, m.search_text FROM chat_search \
                     JOIN messages m ON m.pk = chat_search.rowid \
                     WHERE chat_search MATCH $2 AND m.user_id = $1 AND m.thread_id IN ({in_list}) \
                     AND m.search_text <> '' \
                     ORDER BY bm25(chat_search, 10.0, 1.0), chat_search.rowid DESC {limit_clause}",
                    limit_clause = bound_limit(3)
                ),
                fts5_match(user, &words),
            ),
            Backend::Postgres => (
                format!(
                    "SELECT m.thread_id, m.search_text FROM messages m \
                     WHERE m.user_id = $1 AND m.thread_id IN ({in_list}) AND m.search_text <> '' \
                     AND message_search_vector(m.user_id, m.title_terms, m.search_terms) \
                         @@ to_tsquery('simple', $2) \
                     ORDER BY ts_rank(m.rank_vector, to_tsquery('simple', ${rank})) DESC, \
                     m.created_at DESC LIMIT $3",
                    rank = 4 + threads.len()
                ),
                pg_tsquery(user, &words),
            ),
        };
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(user)
            .bind(expr)
            .bind(i64::from(limit));
        for id in threads {
            q = q.bind(id.as_str());
        }
        if self.backend() == Backend::Postgres {
            q = q.bind(pg_rank_tsquery(&words));
        }
        let rows = q.fetch_all(&self.pool).observed("search.search_messages").await?;
        rows.iter()
            .map(|r| {
                Ok(ChatHit {
                    thread_id: r.text(0)?,
                    excerpt: excerpt(&r.text(1)?, &words),
                })
            })
            .collect()
    }
}

#[async_trait]
impl ChatSearch for Store {
    async fn project_threads(
        &self,
        user_id: &str,
        project_id: &str,
        exclude_thread_id: &str,
    ) -> Result<Vec<(String, Option<String>)>, StorageError> {
        Ok(Store::sibling_threads(self, user_id, project_id, exclude_thread_id).await?)
    }

    async fn search_messages(
        &self,
        user_id: &str,
        search: MessageSearch<'_>,
    ) -> Result<Vec<ChatHit>, StorageError> {
        let MessageSearch {
            thread_ids,
            query,
            limit,
        } = search;
        let search = Store::search_messages(self, user_id, thread_ids, query, limit);
        Ok(self.traced(StoreCall::SearchChats, search).await?)
    }
}

/// About 200 characters of `text` (whitespace collapsed) around the first word that starts with one
/// of `words`, with `…` where it was cut. The start of the text when only the title matched.
pub(crate) fn excerpt(text: &str, words: &[String]) -> String {
    let chars: Vec<char> = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .collect();
    let hit = first_match(&chars, words).unwrap_or(0);
    let mut start = hit.saturating_sub(EXCERPT_LEAD);
    let mut end = (start + EXCERPT_CHARS).min(chars.len());
    if end == chars.len() {
        start = end.saturating_sub(EXCERPT_CHARS);
    }
    // Cut at spaces rather than inside words when a space is near.
    if start > 0
        && let Some(space) = chars[start..hit].iter().position(|c| *c == ' ')
    {
        start += space + 1;
    }
    if end < chars.len()
        && let Some(space) = chars[hit..end].iter().rposition(|c| *c == ' ')
    {
        end = hit + space;
    }
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.extend(&chars[start..end]);
    if end < chars.len() {
        out.push('…');
    }
    out
}

/// Index of the first word start in `chars` that begins with one of `words` (case-insensitively).
fn first_match(chars: &[char], words: &[String]) -> Option<usize> {
    let words: Vec<Vec<char>> = words.iter().map(|w| w.chars().collect()).collect();
    (0..chars.len()).find(|&i| {
        let word_start = chars[i].is_alphanumeric() && (i == 0 || !chars[i - 1].is_alphanumeric());
        word_start
            && words.iter().any(|w| {
                let mut text = chars[i..].iter().flat_map(|c| c.to_lowercase());
                w.iter().all(|wc| text.next() == Some(*wc))
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_syntax_is_neutralised() {
        assert_eq!(
            query_words(r#"foo" OR bar* NEAR(x) 'y'"#),
            ["foo", "or", "bar", "near", "x", "y"]
        );
        assert_eq!(
            fts5_match("u-1", &query_words("Ünïcode test")),
            r#""752d31xünïcode"* "752d31xtest"*"#
        );
        assert_eq!(
            pg_tsquery("u-1", &query_words("a-b")),
            "'752d31xa':* & '752d31xb':*"
        );
        assert!(query_words(" \"*()' ").is_empty());
    }

    #[test]
    fn excerpt_centres_on_the_first_match() {
        let text = format!("{} Needle here {}", "lead ".repeat(60), "tail ".repeat(60));
        let cut = excerpt(&text, &["need".to_owned()]);
        assert!(cut.starts_with('…') && cut.ends_with('…'), "{cut}");
        assert!(cut.contains("Needle here"), "{cut}");
        assert!(cut.chars().count() <= EXCERPT_CHARS + 2, "{cut}");
        assert_eq!(excerpt("short text", &["zzz".to_owned()]), "short text");
    }

    #[test]
    fn match_is_at_word_starts_only() {
        let chars: Vec<char> = "prefix unfix fixed".chars().collect();
        assert_eq!(first_match(&chars, &["fix".to_owned()]), Some(13));
    }
}
