//! `search` and `fetch_content` as the model sees them: every page they return is registered in the
//! turn's source registry and labelled with its number, so the model can cite it as `[N]`.
//!
//! A failed call registers nothing. The "web calls remaining" line is added by the turn, not here.

use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use promptgate_core::citations::passages::ReadText;
use promptgate_core::sources::{
    MAX_SEEN_CHARS, PageMeta as SourcePage, SearchHit as SourceSearchHit, SourceRegistry, labelled,
};
use promptgate_core::tools::args::{FetchContentArgs, SearchArgs};
use promptgate_core::tools::names;
use serde_json::{Map, Value, json};

use super::parse;
use crate::web::fetch::clamp_max_length;
use crate::web::{FetchedPage, SafeFetcher, SearchBackend, SearchHit};
use promptgate_core::tools::{ToolError, ToolExecutor, ToolOutput};

/// Registration never awaits while holding the lock, so a poisoned lock only means another call
/// panicked mid-update of plain data; the registry is still usable.
fn lock(sources: &Mutex<SourceRegistry>) -> MutexGuard<'_, SourceRegistry> {
    sources.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn warn_if_burned(registry: &SourceRegistry, index: u32, url: &str) {
    if registry.get(index).is_none() {
        tracing::warn!(
            index,
            url,
            "source registry is full; this source is numbered but not kept"
        );
    }
}

/// Inserts `value` under `key` unless it is absent.
fn put_some(obj: &mut Map<String, Value>, key: &str, value: Option<&str>) {
    if let Some(value) = value.filter(|v| !v.is_empty()) {
        obj.insert(key.to_owned(), Value::from(value));
    }
}

/// Web search whose results are numbered as the turn's sources.
pub struct WebSearch {
    backend: Arc<dyn SearchBackend>,
    sources: Arc<Mutex<SourceRegistry>>,
}

impl WebSearch {
    pub fn new(backend: Arc<dyn SearchBackend>, sources: Arc<Mutex<SourceRegistry>>) -> Self {
        Self { backend, sources }
    }
}

fn as_source(hit: &SearchHit) -> SourceSearchHit {
    SourceSearchHit {
        title: hit.title.clone(),
        url: hit.url.clone(),
        snippet: Some(hit.snippet.clone()).filter(|s| !s.is_empty()),
        favicon: hit.favicon.clone(),
        image: hit.image.clone(),
        published_date: hit.published_date.clone(),
    }
}

fn search_result(hit: &SearchHit) -> Value {
    let mut obj = Map::new();
    obj.insert("title".to_owned(), Value::from(hit.title.as_str()));
    obj.insert("url".to_owned(), Value::from(hit.url.as_str()));
    obj.insert("snippet".to_owned(), Value::from(hit.snippet.as_str()));
    put_some(&mut obj, "favicon", hit.favicon.as_deref());
    put_some(&mut obj, "image", hit.image.as_deref());
    put_some(&mut obj, "publishedDate", hit.published_date.as_deref());
    Value::Object(obj)
}

#[async_trait]
impl ToolExecutor for WebSearch {
    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        let args: SearchArgs = parse(names::SEARCH, &input)?;
        let hits = self.backend.search(&args.query, args.limit() as usize).await?;
        let numbers = {
            let mut registry = lock(&self.sources);
            let source_hits: Vec<SourceSearchHit> = hits.iter().map(as_source).collect();
            let numbers = registry.register_search(&source_hits);
            for (hit, &index) in hits.iter().zip(&numbers) {
                warn_if_burned(&registry, index, &hit.url);
            }
            numbers
        };
        let results: Vec<Value> = hits
            .iter()
            .zip(numbers)
            .map(|(hit, index)| labelled(index, search_result(hit)))
            .collect();
        Ok(ToolOutput::json(json!({ "results": results })))
    }
}

/// Page reading whose pages are numbered as the turn's sources.
///
/// Which URL a fetched page is registered under: the URL the model asked for (as the fetcher
/// normalised it, which is also how search results are normalised, so a page found by search and then
/// fetched keeps its number). Only when that URL is unknown to the registry and the URL the redirects
/// ended at is known does the fetch enrich the known source instead, so following a redirect never
/// splits one page into two numbers.
///
/// A page the search backend carries itself (the offline demo's bundle) is answered from there and
/// never fetched; every other address goes through the fetcher and its address policy.
pub struct FetchContent {
    fetcher: Arc<SafeFetcher>,
    sources: Arc<Mutex<SourceRegistry>>,
    bundle: Option<Arc<dyn SearchBackend>>,
}

impl FetchContent {
    pub fn new(fetcher: Arc<SafeFetcher>, sources: Arc<Mutex<SourceRegistry>>) -> Self {
        Self {
            fetcher,
            sources,
            bundle: None,
        }
    }

    /// Answers the pages `backend` carries from it (see [`SearchBackend::bundled_page`]).
    pub fn with_bundle(mut self, backend: Arc<dyn SearchBackend>) -> Self {
        self.bundle = Some(backend);
        self
    }
}

/// The URL a fetched page is registered under; see [`FetchContent`].
fn registry_url<'a>(registry: &SourceRegistry, page: &'a FetchedPage) -> &'a str {
    if registry.index_of(&page.requested_url).is_none() && registry.index_of(&page.final_url).is_some() {
        &page.final_url
    } else {
        &page.requested_url
    }
}

/// What the source registry keeps of a fetched page. The text it keeps for the citation check is
/// read here, on the blocking pool: reading a page is most of what checking a citation of it costs,
/// and done now it is done once, beside the fetch, instead of on an async worker at every text part's
/// end.
async fn page_meta(page: &FetchedPage) -> SourcePage {
    let meta = &page.meta;
    let seen: String = page.text.chars().take(MAX_SEEN_CHARS).collect();
    let (seen, read) = match tokio::task::spawn_blocking(move || {
        let read = ReadText::new(&seen);
        (seen, read)
    })
    .await
    {
        Ok((seen, read)) => (seen, Some(read)),
        // The check reads the text itself when it runs.
        Err(_) => (page.text.chars().take(MAX_SEEN_CHARS).collect(), None),
    };
    SourcePage {
        title: page.title.clone().or_else(|| meta.title.clone()),
        text_prefix: Some(seen),
        read,
        image: meta.image.clone(),
        favicon: meta.favicon.clone(),
        site_name: meta.site_name.clone(),
        author: meta.author.clone(),
        published_date: meta.published_date.clone(),
    }
}

fn fetch_result(url: &str, page: &FetchedPage) -> Value {
    let mut obj = Map::new();
    obj.insert("url".to_owned(), Value::from(url));
    if page.final_url != url {
        obj.insert("finalUrl".to_owned(), Value::from(page.final_url.as_str()));
    }
    let title = page.title.as_deref().or(page.meta.title.as_deref());
    obj.insert("title".to_owned(), Value::from(title.unwrap_or(url)));
    obj.insert("contentType".to_owned(), Value::from(page.content_type.as_str()));
    put_some(&mut obj, "siteName", page.meta.site_name.as_deref());
    put_some(&mut obj, "author", page.meta.author.as_deref());
    put_some(&mut obj, "publishedDate", page.meta.published_date.as_deref());
    put_some(&mut obj, "image", page.meta.image.as_deref());
    put_some(&mut obj, "favicon", page.meta.favicon.as_deref());
    obj.insert("text".to_owned(), Value::from(page.text.as_str()));
    obj.insert("isTruncated".to_owned(), Value::from(page.is_truncated));
    Value::Object(obj)
}

#[async_trait]
impl ToolExecutor for FetchContent {
    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        let args: FetchContentArgs = parse(names::FETCH_CONTENT, &input)?;
        let max_length = args.max_length() as usize;
        let bundled = self
            .bundle
            .as_ref()
            .and_then(|b| b.bundled_page(&args.url, clamp_max_length(Some(max_length))));
        let page = match bundled {
            Some(page) => page,
            None => self.fetcher.fetch(&args.url, Some(max_length)).await?,
        };
        let meta = page_meta(&page).await;
        let (url, index) = {
            let mut registry = lock(&self.sources);
            let url = registry_url(&registry, &page).to_owned();
            let index = registry.register_fetch(&url, meta);
            warn_if_burned(&registry, index, &url);
            (url, index)
        };
        Ok(ToolOutput::json(labelled(index, fetch_result(&url, &page))))
    }
}
