//! The source registry: numbering, labels, the same URL keeping its number, fetched pages, the cap.

use promptgate_core::sources::{
    DESCRIPTION_CHARS, MAX_SOURCES, PageMeta, SearchHit, SourceMetadata, SourceRegistry, SourceTool,
    derive_site_name, label, labelled,
};
use serde_json::json;

fn hit(url: &str) -> SearchHit {
    SearchHit {
        title: format!("Title of {url}"),
        url: url.to_owned(),
        ..SearchHit::default()
    }
}

#[test]
fn labels_tell_the_model_how_to_cite() {
    assert_eq!(label(1), "[Source 1] (cite as [1])");
    assert_eq!(label(17), "[Source 17] (cite as [17])");
}

#[test]
fn results_carry_their_label() {
    assert_eq!(
        labelled(4, json!({"title": "T", "url": "https://x.test"})),
        json!({"title": "T", "url": "https://x.test", "sourceLabel": "[Source 4] (cite as [4])", "sourceIndex": 4})
    );
    assert_eq!(
        labelled(2, json!("page text")),
        json!({"content": "page text", "sourceLabel": "[Source 2] (cite as [2])", "sourceIndex": 2})
    );
}

#[test]
fn search_results_are_numbered_from_one_and_keep_their_fields() {
    let mut registry = SourceRegistry::new();
    let hits = [
        SearchHit {
            title: "Tokio".into(),
            url: "https://www.tokio.rs:8443/docs".into(),
            snippet: Some("An async runtime".into()),
            favicon: Some("https://tokio.rs/favicon.ico".into()),
            image: Some("https://tokio.rs/og.png".into()),
            published_date: Some("2026-01-02".into()),
        },
        hit("https://docs.rs/"),
    ];
    assert_eq!(registry.register_search(&hits), [1, 2]);
    let first = registry.get(1).expect("stored");
    assert_eq!(first.title, "Tokio");
    assert_eq!(first.description.as_deref(), Some("An async runtime"));
    assert_eq!(first.image.as_deref(), Some("https://tokio.rs/og.png"));
    assert_eq!(first.favicon.as_deref(), Some("https://tokio.rs/favicon.ico"));
    assert_eq!(first.site_name.as_deref(), Some("tokio.rs"));
    assert_eq!(first.author, None);
    assert_eq!(first.published_date.as_deref(), Some("2026-01-02"));
    assert_eq!(first.tool_name, SourceTool::Search);
}

#[test]
fn the_same_url_keeps_its_number_and_only_an_exact_match_counts() {
    let mut registry = SourceRegistry::new();
    assert_eq!(
        registry.register_search(&[hit("https://a.test/x"), hit("https://b.test/")]),
        [1, 2]
    );
    let again = registry.register_search(&[
        hit("https://b.test/"),
        hit("https://a.test/x/"),
        hit("https://a.test/x"),
        hit("https://a.test/x/"),
    ]);
    assert_eq!(again, [2, 3, 1, 3]);
    assert_eq!(registry.len(), 3);
    assert_eq!(registry.index_of("https://a.test/x/"), Some(3));
}

#[test]
fn a_fetched_page_is_added_with_fallbacks() {
    let mut registry = SourceRegistry::new();
    let long_text = "é".repeat(DESCRIPTION_CHARS + 50);
    let index = registry.register_fetch(
        "https://www.example.org/post",
        PageMeta {
            text_prefix: Some(long_text),
            ..PageMeta::default()
        },
    );
    assert_eq!(index, 1);
    let source = registry.get(1).expect("stored");
    assert_eq!(source.title, "https://www.example.org/post");
    assert_eq!(
        source.description.as_ref().map(|d| d.chars().count()),
        Some(DESCRIPTION_CHARS)
    );
    assert_eq!(source.site_name.as_deref(), Some("example.org"));
    assert_eq!(source.tool_name, SourceTool::FetchContent);

    let with_og = registry.register_fetch(
        "https://blog.test/a",
        PageMeta {
            title: Some("A post".into()),
            site_name: Some("The Blog".into()),
            author: Some("Ada".into()),
            ..PageMeta::default()
        },
    );
    assert_eq!(with_og, 2);
    let source = registry.get(2).expect("stored");
    assert_eq!(source.title, "A post");
    assert_eq!(source.site_name.as_deref(), Some("The Blog"));
    assert_eq!(source.author.as_deref(), Some("Ada"));
}

#[test]
fn fetching_a_known_page_enriches_it_in_place() {
    let mut registry = SourceRegistry::new();
    registry.register_search(&[
        hit("https://a.test/"),
        SearchHit {
            title: "Search title".into(),
            url: "https://b.test/page".into(),
            snippet: Some("search snippet".into()),
            favicon: Some("https://b.test/icon.png".into()),
            image: Some("https://b.test/search.png".into()),
            published_date: None,
        },
    ]);
    let index = registry.register_fetch(
        "https://b.test/page",
        PageMeta {
            title: Some("Real title".into()),
            text_prefix: Some("The page text.".into()),
            read: None,
            image: Some("https://b.test/og.png".into()),
            favicon: None,
            site_name: Some("B Site".into()),
            author: Some("Grace".into()),
            published_date: Some("2025-12-24".into()),
        },
    );
    assert_eq!(index, 2);
    assert_eq!(registry.len(), 2);
    let source = registry.get(2).expect("stored");
    assert_eq!(source.title, "Real title");
    assert_eq!(source.description.as_deref(), Some("The page text."));
    assert_eq!(source.image.as_deref(), Some("https://b.test/og.png"));
    assert_eq!(
        source.favicon.as_deref(),
        Some("https://b.test/icon.png"),
        "absent fields are kept"
    );
    assert_eq!(source.site_name.as_deref(), Some("B Site"));
    assert_eq!(source.author.as_deref(), Some("Grace"));
    assert_eq!(source.published_date.as_deref(), Some("2025-12-24"));
    assert_eq!(source.tool_name, SourceTool::Search, "the registering tool stays");

    registry.register_fetch("https://b.test/page", PageMeta::default());
    assert_eq!(registry.get(2).map(|s| s.title.as_str()), Some("Real title"));
}

#[test]
fn past_the_cap_numbers_are_burned_and_never_reused() {
    let mut registry = SourceRegistry::new();
    let urls: Vec<SearchHit> = (1..=MAX_SOURCES)
        .map(|i| hit(&format!("https://s.test/{i}")))
        .collect();
    let indexes = registry.register_search(&urls);
    assert_eq!(indexes.last(), Some(&(MAX_SOURCES as u32)));

    let over = registry.register_search(&[hit("https://late.test/1"), hit("https://s.test/7")]);
    assert_eq!(over, [MAX_SOURCES as u32 + 1, 7]);
    assert!(registry.get(MAX_SOURCES as u32 + 1).is_none());
    let fetched = registry.register_fetch("https://late.test/2", PageMeta::default());
    assert_eq!(fetched, MAX_SOURCES as u32 + 2);
    // A burned page asked for again burns another number: it was never stored.
    assert_eq!(
        registry.register_search(&[hit("https://late.test/1")]),
        [MAX_SOURCES as u32 + 3]
    );
    assert_eq!(registry.len(), MAX_SOURCES);
    assert_eq!(
        registry.get(MAX_SOURCES as u32).map(|s| s.url.as_str()),
        Some("https://s.test/200")
    );
}

#[test]
fn new_since_yields_each_new_source_once() {
    let mut registry = SourceRegistry::new();
    registry.register_search(&[hit("https://a.test/")]);
    let mark = registry.mark();
    registry.register_search(&[hit("https://a.test/"), hit("https://b.test/")]);
    registry.register_fetch("https://c.test/", PageMeta::default());
    let fresh: Vec<&str> = registry.new_since(mark).iter().map(|s| s.url.as_str()).collect();
    assert_eq!(fresh, ["https://b.test/", "https://c.test/"]);
    assert!(registry.new_since(registry.mark()).is_empty());
    assert!(registry.new_since(usize::MAX).is_empty());
    assert_eq!(registry.snapshot().len(), 3);
}

#[test]
fn metadata_serialises_in_camel_case_without_absent_fields() {
    let mut registry = SourceRegistry::new();
    registry.register_search(&[SearchHit {
        title: "T".into(),
        url: "https://www.x.test/".into(),
        snippet: None,
        favicon: None,
        image: None,
        published_date: Some("2026-03-01".into()),
    }]);
    registry.register_fetch("https://y.test/", PageMeta::default());
    let value = serde_json::to_value(registry.snapshot()).expect("serialisable");
    assert_eq!(
        value,
        json!([
            {"index": 1, "url": "https://www.x.test/", "title": "T", "siteName": "x.test",
             "publishedDate": "2026-03-01", "toolName": "search"},
            {"index": 2, "url": "https://y.test/", "title": "https://y.test/", "siteName": "y.test",
             "toolName": "fetch_content"}
        ])
    );
    let back: Vec<SourceMetadata> = serde_json::from_value(value).expect("round trip");
    assert_eq!(back, registry.snapshot());
}

#[test]
fn site_names_come_from_the_host() {
    assert_eq!(
        derive_site_name("https://www.rust-lang.org/learn").as_deref(),
        Some("rust-lang.org")
    );
    assert_eq!(
        derive_site_name("http://news.example.com:8080/a").as_deref(),
        Some("news.example.com")
    );
    assert_eq!(
        derive_site_name("https://wwwx.test/").as_deref(),
        Some("wwwx.test")
    );
    assert_eq!(derive_site_name("not a url"), None);
    assert_eq!(derive_site_name(""), None);
    assert_eq!(derive_site_name("mailto:a@b.c"), None);
}
