//! The offline demo's web: a search backend over a few pages bundled into the binary, so a fresh
//! install shows search, reading and citations without network or keys. Its pages live under the
//! reserved `.invalid` top-level domain (RFC 2606), which never resolves: `fetch_content` answers
//! them from the bundle instead of the network, and no real site can be shadowed by it.

use async_trait::async_trait;

use super::{SearchBackend, SearchHit, checked_query, clamp_max_results};
use crate::web::fetch::{FetchedPage, PageMeta};
use promptgate_core::tools::ToolError;

/// The name the pages go by in sources.
const SITE_NAME: &str = "promptgate offline demo";

/// One page of the bundle: its address, title and Markdown text.
struct BundledPage {
    url: &'static str,
    title: &'static str,
    text: &'static str,
}

const PAGES: [BundledPage; 3] = [
    BundledPage {
        url: "https://guide.promptgate.invalid/what-it-is",
        title: "What promptgate is",
        text: "\
promptgate sits between a chat frontend and a language model. For every message it assembles the \
system prompt from the user's settings, decides which tools this one send may use, calls the model, \
runs the tool calls itself and streams the answer back in the AI SDK's UI message stream.\n\n\
## What a send can use\n\n\
- **Web search and page reading**, with every page numbered as a source the answer cites by that number.\n\
- **MCP servers** you register, whose tools join the send.\n\
- **Integrations** such as mail and calendars, once a user connects them.\n\
- **A budget** of tool calls per answer, so a model cannot loop forever.\n\n\
Every answer is stored before the stream says it is done, so a reload never loses what was shown.",
    },
    BundledPage {
        url: "https://guide.promptgate.invalid/sources-and-citations",
        title: "Sources and citations",
        text: "\
Each search result and each page read during an answer gets a number. The model cites a page by \
writing its number in square brackets, and the frontend turns those markers into links to the \
sources listed under the answer.\n\n\
A page found by search and then read keeps its number, and the page's title, site name and image \
enrich the source entry. The numbers are stored with the message, so they survive a reload.",
    },
    BundledPage {
        url: "https://guide.promptgate.invalid/models",
        title: "Connecting a real model",
        text: "\
The offline demo model only quotes what its tools return. To get real answers, add a provider and \
a model to a copy of the configuration file: any OpenAI-compatible chat-completions endpoint, or \
Anthropic's own API. Configure a real search backend (SearXNG or Brave) and this bundled web is \
replaced by the real one.",
    },
];

/// The bundled pages as a search backend; also answers `fetch_content` for exactly those pages.
#[derive(Debug, Clone, Default)]
pub struct BundledSearch;

/// How many of the query's words (longer than two letters) occur in the page, a word of the title
/// counting twice more: question words ("how", "work") are in every page, the topic is in the title.
fn score(page: &BundledPage, words: &[String]) -> usize {
    let title = page.title.to_lowercase();
    let text = page.text.to_lowercase();
    words
        .iter()
        .map(|w| usize::from(text.contains(w.as_str())) + 2 * usize::from(title.contains(w.as_str())))
        .sum()
}

fn hit(page: &BundledPage) -> SearchHit {
    let snippet = page
        .text
        .lines()
        .find(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .unwrap_or_default()
        .to_owned();
    SearchHit {
        title: page.title.to_owned(),
        url: page.url.to_owned(),
        snippet,
        favicon: None,
        image: None,
        published_date: None,
    }
}

#[async_trait]
impl SearchBackend for BundledSearch {
    /// The pages that share words with the query, best first; every page when none does, so the
    /// demo's first question always finds something to read.
    async fn search(&self, query: &str, max_results: usize) -> Result<Vec<SearchHit>, ToolError> {
        let words: Vec<String> = checked_query(query)?
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() > 2)
            .map(str::to_lowercase)
            .collect();
        let mut scored: Vec<(usize, &BundledPage)> = PAGES.iter().map(|p| (score(p, &words), p)).collect();
        if scored.iter().any(|(s, _)| *s > 0) {
            scored.retain(|(s, _)| *s > 0);
        }
        // Stable: equal scores keep the bundle's order.
        scored.sort_by_key(|(score, _)| std::cmp::Reverse(*score));
        Ok(scored
            .into_iter()
            .take(clamp_max_results(max_results))
            .map(|(_, page)| hit(page))
            .collect())
    }

    fn bundled_page(&self, url: &str, max_chars: usize) -> Option<FetchedPage> {
        let normalised = url::Url::parse(url.trim()).ok()?;
        let page = PAGES
            .iter()
            .find(|p| url::Url::parse(p.url).is_ok_and(|u| u == normalised))?;
        let is_truncated = page.text.chars().count() > max_chars;
        Some(FetchedPage {
            requested_url: normalised.to_string(),
            final_url: normalised.to_string(),
            content_type: "text/markdown".to_owned(),
            title: Some(page.title.to_owned()),
            text: page.text.chars().take(max_chars).collect(),
            is_truncated,
            meta: PageMeta {
                title: Some(page.title.to_owned()),
                site_name: Some(SITE_NAME.to_owned()),
                ..PageMeta::default()
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_best_matching_page_comes_first_and_any_question_finds_something() {
        let hits = BundledSearch.search("How do citations work?", 5).await.unwrap();
        assert_eq!(hits[0].title, "Sources and citations");
        let hits = BundledSearch.search("zzz qqq", 5).await.unwrap();
        assert_eq!(hits.len(), PAGES.len());
    }

    #[test]
    fn only_the_bundled_addresses_are_answered() {
        let page = BundledSearch
            .bundled_page("https://guide.promptgate.invalid/models", 16_000)
            .unwrap();
        assert_eq!(page.title.as_deref(), Some("Connecting a real model"));
        assert!(
            BundledSearch
                .bundled_page("https://guide.promptgate.invalid/other", 16_000)
                .is_none()
        );
        assert!(
            BundledSearch
                .bundled_page("https://example.com/models", 16_000)
                .is_none()
        );
    }
}
