//! The per-turn source registry: every page a web tool touched gets a stable number `N`, the model cites
//! it as `[N]`, and the message metadata carries the list so the UI can resolve each `[N]` to its URL.
//!
//! Numbers are assigned in registration order starting at 1 and keyed by the exact URL string, so the
//! same page found twice keeps its number. At most [`MAX_SOURCES`] are stored; a page arriving after
//! that still consumes a number, which is never handed out again.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::citations::check::SeenSource;
use crate::citations::passages::ReadText;
use crate::tools::text::truncate_chars;

/// Most sources one turn stores.
pub const MAX_SOURCES: usize = 200;
/// Length of the page-text excerpt kept as a fetched source's description.
pub const DESCRIPTION_CHARS: usize = 200;
/// Titles come from arbitrary pages; longer ones are cut.
pub const MAX_TITLE_CHARS: usize = 300;
/// Characters of a source's text kept for the citation check: as much as a default `fetch_content`
/// shows the model.
pub const MAX_SEEN_CHARS: usize = 16_000;
/// Characters of seen text one registry keeps in all (it travels with a retry's stored state); a
/// page fetched past it is checked against the part that still fits.
pub const MAX_SEEN_TOTAL_CHARS: usize = 320_000;

/// The tool that registered a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SourceTool {
    Search,
    FetchContent,
}

/// One source as the message metadata stores it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceMetadata {
    /// 1-based; what the model cites as `[index]`.
    pub index: u32,
    pub url: String,
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub favicon: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published_date: Option<String>,
    pub tool_name: SourceTool,
}

/// One search result as a search backend returned it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchHit {
    pub title: String,
    pub url: String,
    pub snippet: Option<String>,
    pub favicon: Option<String>,
    pub image: Option<String>,
    pub published_date: Option<String>,
}

/// What reading a page told us about it. Every field is optional; absent ones leave an existing
/// source's value alone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageMeta {
    pub title: Option<String>,
    /// The extracted text as the model saw it: the first 200 characters become the description, and
    /// up to [`MAX_SEEN_CHARS`] are kept for the citation check.
    pub text_prefix: Option<String>,
    /// `text_prefix` already read for the citation check, where the fetch could do it off the
    /// async workers.
    pub read: Option<ReadText>,
    pub image: Option<String>,
    pub favicon: Option<String>,
    /// The page's own site name (`og:site_name`).
    pub site_name: Option<String>,
    pub author: Option<String>,
    pub published_date: Option<String>,
}

/// The text that tells the model how to cite source `n`.
pub fn label(n: u32) -> String {
    format!("[Source {n}] (cite as [{n}])")
}

/// A web tool's result with its citation label in front: `sourceLabel` and `sourceIndex` are added to an
/// object; anything else is wrapped as `content`.
pub fn labelled(index: u32, result: serde_json::Value) -> serde_json::Value {
    let mut obj = match result {
        serde_json::Value::Object(obj) => obj,
        other => serde_json::Map::from_iter([("content".to_owned(), other)]),
    };
    obj.insert("sourceLabel".to_owned(), label(index).into());
    obj.insert("sourceIndex".to_owned(), index.into());
    serde_json::Value::Object(obj)
}

/// The URL's host without a leading `www.`; `None` for input that is not an absolute URL with a host.
pub fn derive_site_name(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url.trim()).ok()?;
    let host = parsed.host_str()?;
    let host = host.strip_prefix("www.").unwrap_or(host);
    (!host.is_empty()).then(|| host.to_owned())
}

/// What the turn saw of a source: the page it fetched, or else the search snippet.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeenText {
    pub text: String,
    pub fetched: bool,
    /// `text` read for the citation check when it arrived. Not stored with the turn's state: a
    /// retry that restores the registry reads the text again when it checks.
    #[serde(skip)]
    pub read: Option<ReadText>,
}

/// Sources of one logical turn. Retries of the same turn keep the registry, so labels stay stable
/// (it is stored with the turn as JSON, so a retry on another instance keeps them too).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SourceRegistry {
    entries: Vec<SourceMetadata>,
    by_url: HashMap<String, usize>,
    next_index: u32,
    /// By source number; states stored before the check existed have none.
    #[serde(default)]
    seen: HashMap<u32, SeenText>,
    #[serde(default)]
    seen_chars: usize,
}

impl Default for SourceRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl SourceRegistry {
    pub fn new() -> Self {
        Self {
            entries: Vec::new(),
            by_url: HashMap::new(),
            next_index: 1,
            seen: HashMap::new(),
            seen_chars: 0,
        }
    }

    /// Registers search results in order and returns each result's number (a result past the cap gets
    /// a number that no source carries).
    pub fn register_search(&mut self, hits: &[SearchHit]) -> Vec<u32> {
        hits.iter()
            .map(|hit| {
                if let Some(index) = self.index_of(&hit.url) {
                    return index;
                }
                let index = self.push(SourceMetadata {
                    index: 0,
                    url: hit.url.clone(),
                    title: bounded_title(&hit.title),
                    description: hit.snippet.clone(),
                    image: hit.image.clone(),
                    favicon: hit.favicon.clone(),
                    site_name: derive_site_name(&hit.url),
                    author: None,
                    published_date: hit.published_date.clone(),
                    tool_name: SourceTool::Search,
                });
                self.see(index, hit.snippet.as_deref().unwrap_or_default(), false, None);
                index
            })
            .collect()
    }

    /// Registers a fetched page. A page already registered keeps its number and is enriched with
    /// whatever the fetch learned; a new page is added like a search result.
    pub fn register_fetch(&mut self, url: &str, page: PageMeta) -> u32 {
        let description = page.text_prefix.as_deref().filter(|t| !t.is_empty()).map(excerpt);
        let seen = page.text_prefix.unwrap_or_default();
        let read = page.read;
        if let Some(&pos) = self.by_url.get(url) {
            let source = &mut self.entries[pos];
            if let Some(title) = page.title.as_deref().filter(|t| !t.is_empty()) {
                source.title = bounded_title(title);
            }
            overwrite(&mut source.description, description);
            overwrite(&mut source.image, page.image);
            overwrite(&mut source.favicon, page.favicon);
            overwrite(&mut source.site_name, page.site_name);
            overwrite(&mut source.author, page.author);
            overwrite(&mut source.published_date, page.published_date);
            let index = source.index;
            self.see(index, &seen, true, read);
            return index;
        }
        let title = page
            .title
            .as_deref()
            .filter(|t| !t.is_empty())
            .map_or_else(|| bounded_title(url), bounded_title);
        let site_name = page
            .site_name
            .filter(|s| !s.is_empty())
            .or_else(|| derive_site_name(url));
        let index = self.push(SourceMetadata {
            index: 0,
            url: url.to_owned(),
            title,
            description,
            image: page.image,
            favicon: page.favicon,
            site_name,
            author: page.author,
            published_date: page.published_date,
            tool_name: SourceTool::FetchContent,
        });
        self.see(index, &seen, true, read);
        index
    }

    /// The stored sources with what the turn saw of each, for the citation check.
    pub fn seen_sources(&self) -> Vec<SeenSource<'_>> {
        self.entries
            .iter()
            .map(|source| {
                let seen = self.seen.get(&source.index);
                SeenSource {
                    index: source.index,
                    url: &source.url,
                    title: &source.title,
                    text: seen.map_or("", |s| s.text.as_str()),
                    fetched: seen.is_some_and(|s| s.fetched),
                    read: seen.and_then(|s| s.read.as_ref()),
                }
            })
            .collect()
    }

    /// The numbers of the stored sources, ascending.
    pub fn indexes(&self) -> Vec<u32> {
        self.entries.iter().map(|source| source.index).collect()
    }

    /// What the turn saw of source `index`, if it is stored.
    pub fn seen(&self, index: u32) -> Option<&SeenText> {
        self.seen.get(&index)
    }

    /// Keeps what the turn saw of a stored source. A fetched page replaces a snippet (or an earlier
    /// read of the same page); a snippet never replaces a fetched page. `read` is `text` read
    /// already; it is dropped when less of the text than it read is kept.
    fn see(&mut self, index: u32, text: &str, fetched: bool, read: Option<ReadText>) {
        if self.get(index).is_none() {
            return;
        }
        let old = self.seen.get(&index);
        if old.is_some_and(|old| old.fetched && !fetched) {
            return;
        }
        let old_chars = old.map_or(0, |old| old.text.chars().count());
        let room = MAX_SEEN_TOTAL_CHARS.saturating_sub(self.seen_chars.saturating_sub(old_chars));
        let kept: String = text.chars().take(MAX_SEEN_CHARS.min(room)).collect();
        self.seen_chars = self.seen_chars.saturating_sub(old_chars) + kept.chars().count();
        let read = read.filter(|_| kept.len() == text.len());
        self.seen.insert(
            index,
            SeenText {
                text: kept,
                fetched,
                read,
            },
        );
    }

    /// Number of an already registered URL (exact string match).
    pub fn index_of(&self, url: &str) -> Option<u32> {
        self.by_url.get(url).map(|&pos| self.entries[pos].index)
    }

    /// The source numbered `index`, if one is stored.
    pub fn get(&self, index: u32) -> Option<&SourceMetadata> {
        self.entries
            .binary_search_by_key(&index, |s| s.index)
            .ok()
            .map(|pos| &self.entries[pos])
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// All stored sources, for the message metadata.
    pub fn snapshot(&self) -> Vec<SourceMetadata> {
        self.entries.clone()
    }

    /// A position to pass to [`Self::new_since`] later.
    pub fn mark(&self) -> usize {
        self.entries.len()
    }

    /// Sources stored after `mark`, so a step can announce each new source once.
    pub fn new_since(&self, mark: usize) -> &[SourceMetadata] {
        self.entries.get(mark..).unwrap_or_default()
    }

    fn push(&mut self, mut source: SourceMetadata) -> u32 {
        let index = self.next_index;
        self.next_index = self.next_index.saturating_add(1);
        if self.entries.len() >= MAX_SOURCES {
            // The number is burned: no source will ever carry it. The caller sees `get(index)` is
            // `None` and can log the drop.
            return index;
        }
        source.index = index;
        self.by_url.insert(source.url.clone(), self.entries.len());
        self.entries.push(source);
        index
    }
}

fn overwrite(slot: &mut Option<String>, value: Option<String>) {
    if let Some(value) = value.filter(|v| !v.is_empty()) {
        *slot = Some(value);
    }
}

fn excerpt(text: &str) -> String {
    truncate_chars(text, DESCRIPTION_CHARS, "")
}

fn bounded_title(title: &str) -> String {
    truncate_chars(title, MAX_TITLE_CHARS, "…")
}
