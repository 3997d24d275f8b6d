//! The web budget: caps by intent, slash tokens, promotion, and what a spent budget answers.

use promptgate_core::Error;
use promptgate_core::budget::{
    Admission, DEFAULT_EXHAUSTED_MESSAGE, PROMOTION_SETTING, WebBudget, WebIntent, budget_exhausted_result,
    normalize_url, normalize_web_tool_key, parse_promotion_setting, resolve_web_intent, stable_stringify,
    tool_call_key,
};
use serde_json::{Value, json};

fn search(query: &str) -> Value {
    json!({"query": query, "max_results": 5})
}

fn fetch(url: &str) -> Value {
    json!({"url": url})
}

/// Admits `n` distinct searches and asserts each one runs.
/// An auto-intent budget with all five of its calls spent on distinct searches.
fn spent_auto_budget() -> WebBudget {
    let mut budget = WebBudget::new(WebIntent::Auto, true);
    spend(&mut budget, 5);
    budget
}

fn spend(budget: &mut WebBudget, n: u32) {
    for i in 0..n {
        let admission = budget.admit("search", &search(&format!("topic {i}")));
        assert!(
            matches!(admission, Admission::Run { .. }),
            "call {i}: {admission:?}"
        );
    }
}

fn is_exhausted_result(admission: &Admission) -> bool {
    matches!(admission, Admission::Exhausted(v) if v["status"] == "budget_exhausted")
}

#[test]
fn caps_grow_with_the_intent() {
    assert_eq!(WebIntent::Auto.cap(), 5);
    assert_eq!(WebIntent::Search.cap(), 12);
    assert_eq!(WebIntent::Research.cap(), 30);
    assert!(WebIntent::Search.cap() >= 11);
}

#[test]
fn intent_comes_from_slash_tokens_only() {
    let cases = [
        ("/search rust async runtimes", WebIntent::Search),
        ("compare these /research", WebIntent::Research),
        ("/search first, then /research", WebIntent::Research),
        ("/research\nand /search", WebIntent::Research),
        ("line one\n/search\tline two", WebIntent::Search),
        ("please search for this", WebIntent::Auto),
        ("do some research", WebIntent::Auto),
        ("see https://example.com/search", WebIntent::Auto),
        ("a/search and docs/research", WebIntent::Auto),
        ("/search.", WebIntent::Auto),
        ("/research, please", WebIntent::Auto),
        ("/Research this", WebIntent::Auto),
        ("/meeting-notes", WebIntent::Auto),
        ("", WebIntent::Auto),
        ("/", WebIntent::Auto),
        ("ünï /search", WebIntent::Search),
    ];
    for (text, expected) in cases {
        assert_eq!(resolve_web_intent(text), expected, "{text:?}");
    }
}

#[test]
fn promotion_switch_accepts_only_on_and_off() {
    assert_eq!(parse_promotion_setting(None), Ok(true));
    assert_eq!(parse_promotion_setting(Some("on")), Ok(true));
    assert_eq!(parse_promotion_setting(Some("off")), Ok(false));
    for bad in ["", "0", "1", "true", "ON", "offf"] {
        let err = parse_promotion_setting(Some(bad)).expect_err(bad);
        assert!(matches!(err, Error::InvalidSetting { .. }));
        assert!(err.to_string().contains(PROMOTION_SETTING), "{err}");
    }
}

#[test]
fn a_fresh_budget_reports_its_intent_and_cap() {
    let budget = WebBudget::new(WebIntent::Search, true);
    assert_eq!(budget.intent(), WebIntent::Search);
    assert_eq!(budget.initial_cap(), 12);
    assert_eq!(budget.cap(), 12);
    assert_eq!(budget.consumed(), 0);
    assert!(!budget.promoted());
    assert!(!budget.is_exhausted());
}

#[test]
fn an_auto_budget_promotes_to_research_once_and_keeps_its_counts() {
    let mut budget = spent_auto_budget();
    assert!(is_exhausted_result(&budget.admit("search", &search("one more"))));
    assert!(budget.is_exhausted());

    budget.promote(WebIntent::Research);
    assert_eq!(budget.cap(), 30);
    assert!(budget.promoted());
    assert_eq!(budget.intent(), WebIntent::Auto);
    assert_eq!(budget.consumed(), 5);
    assert_eq!(budget.exhausted_attempts(), 1);
    assert!(!budget.is_exhausted());
    // Calls admitted before the promotion are still shared.
    assert!(matches!(
        budget.admit("search", &search("topic 0")),
        Admission::Reuse { .. }
    ));
    assert!(matches!(
        budget.admit("search", &search("one more")),
        Admission::Run { .. }
    ));

    budget.promote(WebIntent::Research);
    assert_eq!(budget.cap(), 30);
    assert_eq!(budget.consumed(), 6);
}

#[test]
fn promotion_applies_only_from_auto_to_research_when_enabled() {
    let mut budget = WebBudget::new(WebIntent::Auto, true);
    budget.promote(WebIntent::Search);
    budget.promote(WebIntent::Auto);
    assert_eq!(budget.cap(), 5);

    let mut explicit = WebBudget::new(WebIntent::Search, true);
    explicit.promote(WebIntent::Research);
    assert_eq!(explicit.cap(), 12);

    let mut research = WebBudget::new(WebIntent::Research, true);
    research.promote(WebIntent::Research);
    assert_eq!(research.cap(), 30);
    assert!(!research.promoted());

    let mut disabled = WebBudget::new(WebIntent::Auto, false);
    disabled.promote(WebIntent::Research);
    assert_eq!(disabled.cap(), 5);
    assert!(!disabled.promoted());
}

#[test]
fn exhaustion_alone_never_promotes() {
    let mut budget = spent_auto_budget();
    for i in 0..3 {
        assert!(is_exhausted_result(
            &budget.admit("fetch_content", &fetch(&format!("https://x.test/{i}")))
        ));
    }
    assert_eq!(budget.cap(), 5);
    assert_eq!(budget.exhausted_attempts(), 3);
}

#[test]
fn the_sixth_distinct_call_of_an_auto_turn_is_denied() {
    let mut budget = spent_auto_budget();
    let denied = budget.admit("fetch_content", &fetch("https://example.com/a"));
    let Admission::Exhausted(result) = denied else {
        panic!("expected a denial, got {denied:?}");
    };
    assert_eq!(result["status"], "budget_exhausted");
    assert_eq!(result["message"], DEFAULT_EXHAUSTED_MESSAGE);
    assert!(!DEFAULT_EXHAUSTED_MESSAGE.is_empty());
    assert_eq!(budget.consumed(), 5);
    assert_eq!(budget.exhausted_attempts(), 1);
}

#[test]
fn a_denied_call_is_not_remembered() {
    let mut budget = spent_auto_budget();
    assert!(is_exhausted_result(&budget.admit("search", &search("late"))));
    assert!(is_exhausted_result(&budget.admit("search", &search("late"))));
    assert_eq!(budget.exhausted_attempts(), 2);
}

#[test]
fn duplicates_are_free_even_after_exhaustion() {
    let mut budget = WebBudget::new(WebIntent::Auto, true);
    let first = budget.admit("search", &json!({"query": "Rust  Async", "max_results": 5}));
    let Admission::Run { key } = first else {
        panic!("first call should run: {first:?}");
    };
    spend(&mut budget, 4);
    assert!(budget.is_exhausted());
    let again = budget.admit("search", &json!({"max_results": 5, "query": "  rust async "}));
    assert_eq!(again, Admission::Reuse { key });
    assert_eq!(budget.consumed(), 5);
    assert_eq!(budget.exhausted_attempts(), 0);
}

#[test]
fn a_failed_call_keeps_its_charge_but_may_run_again() {
    let mut budget = WebBudget::new(WebIntent::Auto, true);
    let Admission::Run { key } = budget.admit("fetch_content", &fetch("https://down.test/")) else {
        panic!("should run");
    };
    budget.failed(&key);
    assert_eq!(budget.consumed(), 1);
    assert!(matches!(
        budget.admit("fetch_content", &fetch("https://down.test")),
        Admission::Run { .. }
    ));
    assert_eq!(budget.consumed(), 2);
}

#[test]
fn non_web_tools_are_never_charged() {
    let mut budget = spent_auto_budget();
    for _ in 0..3 {
        assert!(matches!(
            budget.admit("getTasks", &json!({})),
            Admission::Run { .. }
        ));
    }
    assert_eq!(budget.consumed(), 5);
    assert_eq!(budget.exhausted_attempts(), 0);
}

#[test]
fn a_custom_exhausted_message_passes_through_verbatim() {
    let message = "Out of web calls. Ask me to keep digging, or start over with /research.";
    let mut budget = WebBudget::new(WebIntent::Auto, true).with_exhausted_message(message);
    spend(&mut budget, 5);
    assert_eq!(
        budget.admit("search", &search("more")),
        Admission::Exhausted(json!({"status": "budget_exhausted", "message": message}))
    );
    assert_eq!(budget_exhausted_result(Some("x"))["message"], "x");
    assert_eq!(budget_exhausted_result(None)["status"], "budget_exhausted");
}

#[test]
fn the_remaining_line_reflects_capacity_when_it_is_rendered() {
    let mut budget = WebBudget::new(WebIntent::Auto, true);
    assert_eq!(budget.remaining_line(), "Web calls remaining this turn: 5.");
    spend(&mut budget, 2);
    assert_eq!(budget.remaining_line(), "Web calls remaining this turn: 3.");
    spend_more(&mut budget);
    let exhausted = budget.remaining_line();
    assert!(
        exhausted.starts_with("Web calls remaining this turn: 0. "),
        "{exhausted}"
    );
    assert!(exhausted.len() > "Web calls remaining this turn: 0. ".len());
    budget.promote(WebIntent::Research);
    assert_eq!(budget.remaining_line(), "Web calls remaining this turn: 25.");
}

#[test]
fn a_shared_result_shows_the_capacity_left_when_it_is_shown_again() {
    let mut budget = WebBudget::new(WebIntent::Auto, true);
    let output = json!({"results": [{"title": "A"}]});
    let Admission::Run { .. } = budget.admit("search", &search("a")) else {
        panic!("should run");
    };
    assert_eq!(
        budget.model_output_parts(&output),
        [
            r#"{"results":[{"title":"A"}]}"#.to_owned(),
            "Web calls remaining this turn: 4.".to_owned()
        ]
    );
    spend(&mut budget, 4);
    assert!(matches!(
        budget.admit("search", &search("a")),
        Admission::Reuse { .. }
    ));
    let [_, line] = budget.model_output_parts(&output);
    assert!(line.starts_with("Web calls remaining this turn: 0. "), "{line}");
}

fn spend_more(budget: &mut WebBudget) {
    for i in 0..3 {
        let admission = budget.admit("fetch_content", &fetch(&format!("https://more.test/{i}")));
        assert!(matches!(admission, Admission::Run { .. }));
    }
}

#[test]
fn search_keys_ignore_case_and_spacing_but_not_other_arguments() {
    let a = normalize_web_tool_key("search", &json!({"query": "  Rust\t\nASYNC  ", "max_results": 5}));
    let b = normalize_web_tool_key("search", &json!({"max_results": 5, "query": "rust async"}));
    let c = normalize_web_tool_key("search", &json!({"query": "rust async", "max_results": 6}));
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert_eq!(b, r#"search:{"max_results":5,"query":"rust async"}"#);
}

#[test]
fn fetch_keys_normalise_the_url() {
    let same = [
        ("https://Example.COM/", "https://example.com"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("http://example.com:80/a", "http://example.com/a"),
        ("https://user:pw@example.com/a", "https://example.com/a"),
        ("https://example.com/a?", "https://example.com/a"),
        ("https://example.com/a#", "https://example.com/a"),
        ("  https://example.com/a  ", "https://example.com/a"),
        ("https://example.com/a b", "https://example.com/a%20b"),
    ];
    for (raw, expected) in same {
        assert_eq!(normalize_url(raw), expected, "{raw}");
    }
    assert_eq!(
        normalize_url("https://example.com:8443/x?q=1#top"),
        "https://example.com:8443/x?q=1#top"
    );
    assert_eq!(
        normalize_url("https://example.com/Path/"),
        "https://example.com/Path/"
    );
    assert_ne!(
        normalize_url("https://example.com/path/"),
        normalize_url("https://example.com/path")
    );
    assert_eq!(normalize_url("  not a url "), "not a url");

    let a = normalize_web_tool_key(
        "fetch_content",
        &json!({"url": "https://EXAMPLE.com/", "max_length": 2000}),
    );
    let b = normalize_web_tool_key(
        "fetch_content",
        &json!({"max_length": 2000, "url": "https://example.com"}),
    );
    assert_eq!(a, b);
}

#[test]
fn stable_stringify_sorts_keys_at_every_depth_and_keeps_array_order() {
    let a = json!({"b": 1, "a": {"d": [3, 1, {"y": true, "x": null}], "c": "s"}});
    let b = json!({"a": {"c": "s", "d": [3, 1, {"x": null, "y": true}]}, "b": 1});
    assert_eq!(stable_stringify(&a), stable_stringify(&b));
    assert_eq!(
        stable_stringify(&a),
        r#"{"a":{"c":"s","d":[3,1,{"x":null,"y":true}]},"b":1}"#
    );
    assert_ne!(stable_stringify(&json!([1, 2])), stable_stringify(&json!([2, 1])));
    assert_eq!(tool_call_key("getTasks", &json!({})), "getTasks:{}");
}
