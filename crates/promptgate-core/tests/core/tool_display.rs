//! What the UI shows while a tool runs: the rendered verb, categories and display names.

use promptgate_core::tools::built_in;
use promptgate_core::tools::verb::{
    Category, category, display_name, initials, loading_message, loading_message_for, render_verb,
};
use serde_json::json;

#[test]
fn a_verb_quotes_the_named_argument() {
    let input = json!({"query": "rust async"});
    assert_eq!(
        render_verb("searching for {query}", &input),
        "searching for \"rust async\""
    );
    assert_eq!(
        loading_message("search", Some("searching for {query}"), &input),
        "Searching for \"rust async\"..."
    );
    let spec = built_in("fetch_content").expect("catalogue");
    assert_eq!(
        loading_message_for(spec, &json!({"url": "https://example.com"})),
        "Fetching \"https://example.com\"..."
    );
}

#[test]
fn long_values_are_cut_at_forty_characters() {
    let long = "a".repeat(41);
    let exact = "b".repeat(40);
    assert_eq!(
        render_verb("q {v}", &json!({"v": long})),
        format!("q \"{}...\"", "a".repeat(40))
    );
    assert_eq!(
        render_verb("q {v}", &json!({"v": exact})),
        format!("q \"{exact}\"")
    );
    let wide = "語".repeat(45);
    assert_eq!(
        render_verb("{v}", &json!({"v": wide})),
        format!("\"{}...\"", "語".repeat(40))
    );
}

#[test]
fn missing_null_and_empty_values_remove_the_placeholder() {
    for input in [
        json!({}),
        json!({"query": null}),
        json!({"query": ""}),
        json!(null),
    ] {
        assert_eq!(
            render_verb("searching  for {query} now", &input),
            "searching for now"
        );
        assert_eq!(
            loading_message("search", Some("searching for {query}"), &input),
            "Searching for..."
        );
    }
}

#[test]
fn non_strings_are_written_out() {
    let input = json!({"n": 5, "flag": false, "list": ["a", "b"]});
    assert_eq!(
        render_verb("take {n} {flag} {list}", &input),
        "take \"5\" \"false\" \"a,b\""
    );
}

#[test]
fn braces_that_are_not_placeholders_stay() {
    assert_eq!(
        render_verb("set {} and {a b} {", &json!({"a": 1})),
        "set {} and {a b} {"
    );
    assert_eq!(render_verb("{x}{y}", &json!({"x": "1", "y": "2"})), "\"1\" \"2\"");
}

#[test]
fn without_a_verb_the_message_is_guessed_from_the_name() {
    let long_query = json!({"query": "how do lifetimes interact with async closures"});
    for (name, verb, input, expected) in [
        (
            "notes_search",
            None,
            long_query,
            "Searching for \"how do lifetimes int…\"...",
        ),
        (
            "find_docs",
            Some("  "),
            json!({"query": "short"}),
            "Searching for \"short\"...",
        ),
        ("notes_search", None, json!({}), "Searching..."),
        ("get_forecast", None, json!({}), "Loading data..."),
        ("weather_now", None, json!({}), "Checking the weather..."),
        ("frobnicate", None, json!({}), "Using Frobnicate..."),
    ] {
        assert_eq!(loading_message(name, verb, &input), expected, "{name} {input}");
    }
}

#[test]
fn categories_take_the_first_matching_rule() {
    assert_eq!(category("search_project_chats"), Category::Search);
    assert_eq!(category("google_get_email"), Category::Data);
    assert_eq!(category("google_draft_email"), Category::Action);
    assert_eq!(category("summarize_thread"), Category::Analysis);
    assert_eq!(category("slack_send"), Category::Communication);
    assert_eq!(category("weather"), Category::Weather);
    assert_eq!(category("xyz"), Category::Unknown);
}

#[test]
fn display_names_are_readable_and_short() {
    assert_eq!(display_name("fetch_content"), "Fetch Content");
    assert_eq!(display_name("addTasks"), "Add Tasks");
    assert_eq!(display_name("everything.get-sum"), "Everything Get Sum");
    assert_eq!(display_name("v2Api"), "V2 Api");
    let long = display_name("microsoft_get_onedrive_file_content");
    assert_eq!(long, "Microsoft Get Onedrive Fi");
    assert_eq!(long.chars().count(), 25);
    assert_eq!(
        display_name("a_very_long_name_that_ends_at_space_x"),
        "A Very Long Name That End"
    );
    assert_eq!(
        display_name("twentyfourcharacterswor x"),
        "Twentyfourcharacterswor X"
    );
}

#[test]
fn initials_take_the_first_two_words() {
    assert_eq!(initials("fetch_content"), "FC");
    assert_eq!(initials("search"), "S");
    assert_eq!(initials("google_check_inbox"), "GC");
}
