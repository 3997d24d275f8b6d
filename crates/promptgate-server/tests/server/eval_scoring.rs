//! How `promptgate eval` reads a scenario file and scores an answer: the criteria's failure texts are
//! what a user reads in its table, and a file it cannot use is refused with the reason.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used)]

use promptgate_eval::{Criteria, Observed, Outcome, parse, score, table};
use serde_json::{Value, json};

fn answer(text: &str) -> Observed {
    Observed {
        text: text.to_owned(),
        steps: 1,
        tool_calls: Vec::new(),
        citation_counts: None,
    }
}

fn with_calls(calls: &[(&str, Value)]) -> Observed {
    Observed {
        text: "ok".into(),
        steps: 2,
        tool_calls: calls.iter().map(|(n, v)| ((*n).to_owned(), v.clone())).collect(),
        citation_counts: None,
    }
}

/// Criteria as a scenario file writes them (camel-case keys), so each test names only what it checks.
fn criteria(keys: Value) -> Criteria {
    serde_json::from_value(keys).unwrap()
}

#[test]
fn citations_count_distinct_brackets_of_both_kinds_but_not_titled_markers() {
    let criteria = criteria(json!({"minCitations": 3}));
    assert!(score(&criteria, &answer("a [1] b [2] c 【1】 d [1]")).is_empty());
    assert_eq!(
        score(&criteria, &answer("a [1] b 【2†title】 c [1](http://x)")),
        ["Insufficient citations: 1 found, 3 required"]
    );
}

#[test]
fn an_empty_or_blank_answer_fails_must_produce_output() {
    let criteria = criteria(json!({"mustProduceOutput": true}));
    assert_eq!(
        score(&criteria, &answer(" \n")),
        ["Empty response: no text output produced"]
    );
    assert!(score(&criteria, &answer("Hi")).is_empty());
}

#[test]
fn only_web_tools_count_towards_tool_call_limits() {
    let observed = with_calls(&[
        ("search", json!({"query": "a"})),
        ("skill", json!({"name": "research"})),
        ("fetch_content", json!({"url": "https://a.example"})),
    ]);
    assert_eq!(
        score(&criteria(json!({"maxToolCalls": 1})), &observed),
        ["Too many web tool calls: 2 (max: 1)"]
    );
    assert_eq!(
        score(&criteria(json!({"minToolCalls": 3})), &observed),
        ["Too few web tool calls: 2 (min: 3)"]
    );
}

#[test]
fn duplicates_ignore_key_order_but_not_case_or_spacing() {
    let observed = with_calls(&[
        ("search", json!({"query": "tides", "max_results": 5})),
        ("search", json!({"max_results": 5, "query": "tides"})),
        ("search", json!({"query": "Tides", "max_results": 5})),
        ("skill", json!({"name": "x"})),
        ("skill", json!({"name": "x"})),
    ]);
    assert_eq!(
        score(&criteria(json!({"noDuplicateToolCalls": true})), &observed),
        ["Duplicate web tool calls: 1"]
    );
}

#[test]
fn widgets_are_found_by_tag_name() {
    let text = "See <widget:link-preview url=\"a\"/> and <widget:weather-forecast city=\"x\"/>";
    assert_eq!(
        score(&criteria(json!({"mustNotUseWidgets": true})), &answer(text)),
        ["Unexpected widget tags found: link-preview, weather-forecast"]
    );
    let require = criteria(json!({"mustUseLinkPreviews": true, "mustUseWidget": "map"}));
    assert_eq!(
        score(&require, &answer(text)),
        ["No <widget:map> tag found in response"]
    );
    assert_eq!(
        score(&require, &answer("none")),
        [
            "No <widget:link-preview> tags found in response",
            "No <widget:map> tag found in response"
        ]
    );
}

#[test]
fn steps_over_the_limit_fail() {
    assert_eq!(
        score(&criteria(json!({"maxSteps": 1})), &with_calls(&[])),
        ["Too many steps: 2 (max: 1)"]
    );
}

/// How the link criteria score an answer of one link preview for each set of attributes, with
/// `more` text after them.
fn score_previews(keys: Value, attributes: &[&str], more: &str) -> Vec<String> {
    let mut text: String = attributes
        .iter()
        .map(|a| format!("Read this <widget:link-preview {a}/> for more."))
        .collect();
    text.push_str(more);
    score(&criteria(keys), &answer(&text))
}

#[test]
fn homepage_links_fail_whatever_the_quotes_or_attribute_order() {
    let attributes = [
        r#"url="https://example.com""#,
        "title='Docs' url='https://Docs.example.org/?ref=x#top'",
        r#"url="https://example.com/guide/tides" title="a > b""#,
        r#"url="https://example.com""#,
    ];
    assert_eq!(
        score_previews(json!({"noHomepageLinks": true}), &attributes, ""),
        ["Homepage links found: https://example.com, https://Docs.example.org/?ref=x#top"]
    );
}

#[test]
fn links_with_a_path_are_not_homepages() {
    let attributes = [
        r#"url="https://example.com/guide""#,
        "title='x' url='http://example.com:8080/a/b?q=1'",
    ];
    let more = "<widget:link-preview-card url=\"https://example.com/\"/>plain https://example.com/ text";
    assert!(score_previews(json!({"noHomepageLinks": true}), &attributes, more).is_empty());
}

#[test]
fn review_sites_and_their_subdomains_fail() {
    let attributes = [
        r#"url="https://www.yelp.com/biz/cafe-x""#,
        "url='https://old.Reddit.com/r/tides/comments/1' title='thread'",
        r#"url="https://www.nytimes.com/wirecutter/reviews/best-kettle/""#,
        r#"url="https://uk.trustpilot.com""#,
    ];
    assert_eq!(
        score_previews(json!({"noReviewSites": true}), &attributes, ""),
        ["Review-site links found: https://www.yelp.com/biz/cafe-x, \
          https://old.Reddit.com/r/tides/comments/1, \
          https://www.nytimes.com/wirecutter/reviews/best-kettle/, https://uk.trustpilot.com"]
    );
}

#[test]
fn sites_that_merely_resemble_review_sites_pass() {
    let attributes = [
        r#"url="https://notyelp.com/biz/cafe-x""#,
        "url='https://www.nytimes.com/2024/01/01/science/tides.html'",
        r#"url="https://reddit.com.example.org/r/tides""#,
        r#"title="reddit.com" url="https://noaa.gov/tides""#,
    ];
    assert!(score_previews(json!({"noReviewSites": true}), &attributes, "").is_empty());
}

#[test]
fn link_hosts_are_read_without_case_www_or_a_trailing_dot_and_odd_links_are_ignored() {
    let attributes = [
        r#"url="https://WWW.Yelp.com./biz?b#c""#,
        r#"url="http://user@host.example:81""#,
        r#"url="//cdn.example.net/x""#,
        r#"url="www.tripadvisor.com/hotel""#,
        r#"url="/relative/path""#,
        r#"url="mailto:a@example.com""#,
        r#"url="ftp://example.com/""#,
    ];
    let both = json!({"noHomepageLinks": true, "noReviewSites": true});
    assert_eq!(
        score_previews(both, &attributes, ""),
        [
            "Homepage links found: http://user@host.example:81",
            "Review-site links found: https://WWW.Yelp.com./biz?b#c, www.tripadvisor.com/hotel",
        ]
    );
}

#[test]
fn scenario_criteria_read_the_camel_case_keys() {
    let criteria: Criteria = serde_json::from_value(json!({
        "minCitations": 2, "mustProduceOutput": true, "noDuplicateToolCalls": true, "maxToolCalls": 4
    }))
    .unwrap();
    assert_eq!(criteria.min_citations, Some(2));
    assert!(criteria.must_produce_output && criteria.no_duplicate_tool_calls);
    let links: Criteria =
        serde_json::from_value(json!({"noHomepageLinks": true, "noReviewSites": true})).unwrap();
    assert!(links.no_homepage_links && links.no_review_sites);
    assert!(serde_json::from_value::<Criteria>(json!({"minCitation": 1})).is_err());
}

#[test]
fn a_scenario_file_reads_settings_skills_and_criteria() {
    let file = parse(
        "scenarios:\n  - name: cited\n    message: /research tides\n    settings: {preferred_name: Ada}\n    \
         skills:\n      - {slug: research, name: Research, instructions: Dig deep.}\n    \
         criteria: {minCitations: 2, noDuplicateToolCalls: true}\n",
    )
    .unwrap();
    let scenario = &file.scenarios[0];
    assert_eq!(scenario.skills[0].slug, "research");
    assert_eq!(scenario.criteria.min_citations, Some(2));
    assert_eq!(scenario.settings.as_ref().unwrap()["preferred_name"], "Ada");
}

#[test]
fn empty_files_and_unknown_criteria_are_refused_with_a_reason() {
    let empty = parse("scenarios: []\n").unwrap_err().to_string();
    assert!(empty.contains("no scenarios"), "{empty}");
    let unknown = parse("scenarios:\n  - name: x\n    message: hi\n    criteria: {minCites: 1}\n")
        .unwrap_err()
        .to_string();
    assert!(unknown.contains("minCites"), "{unknown}");
}

#[test]
fn the_shipped_scenarios_parse() {
    let file = parse(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../eval/scenarios.yaml"
    )))
    .unwrap();
    assert!((5..=8).contains(&file.scenarios.len()));
}

#[test]
fn the_table_shows_each_failure_under_its_scenario() {
    let outcomes = vec![
        Outcome {
            name: "ok".into(),
            model: "m".into(),
            passed: true,
            failures: vec![],
            citations: 2,
            web_tool_calls: 3,
            steps: 4,
            text: String::new(),
            ..Default::default()
        },
        Outcome {
            name: "broken".into(),
            model: "m".into(),
            passed: false,
            failures: vec!["Too few web tool calls: 0 (min: 1)".into()],
            citations: 0,
            web_tool_calls: 0,
            steps: 1,
            text: String::new(),
            ..Default::default()
        },
    ];
    let table = table(&outcomes);
    assert!(table.contains("broken    FAIL"), "{table}");
    assert!(table.contains("    - Too few web tool calls: 0 (min: 1)"));
    assert!(table.ends_with("1/2 scenarios passed"));
}
