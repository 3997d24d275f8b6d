//! Which built-in tools a send gets, in catalogue order, and their specs.

use promptgate_core::Error;
use promptgate_core::settings::{IntegrationState, IntegrationStatus, UserSettings};
use promptgate_core::tools::args::*;
use promptgate_core::tools::{
    ToolSpec, available, built_in, has_web_tools, names, parse_args, search_project_chats_spec, skill_spec,
};
use serde_json::{Map, Value, json};

const ON: IntegrationState = IntegrationState {
    connected: true,
    enabled: true,
};

fn tool_names(specs: &[ToolSpec]) -> Vec<&str> {
    specs.iter().map(|s| s.name.as_str()).collect()
}

fn everything_on() -> (UserSettings, IntegrationStatus) {
    let settings = UserSettings {
        experimental_tasks: true,
        web_tools_enabled: true,
        ..UserSettings::default()
    };
    let integrations = IntegrationStatus {
        google: ON,
        microsoft: ON,
        do_not_ask: false,
    };
    (settings, integrations)
}

#[test]
fn models_without_tool_support_get_no_tools() {
    let (settings, integrations) = everything_on();
    assert!(available(&settings, &integrations, false).is_empty());
}

#[test]
fn the_default_user_gets_the_artifact_and_web_tools() {
    let specs = available(&UserSettings::default(), &IntegrationStatus::default(), true);
    assert_eq!(tool_names(&specs), ["render_html", "search", "fetch_content"]);
    assert!(has_web_tools(&specs));
}

#[test]
fn every_gate_opens_in_catalogue_order() {
    let (settings, integrations) = everything_on();
    let specs = available(&settings, &integrations, true);
    assert_eq!(
        tool_names(&specs),
        [
            "render_html",
            "addTasks",
            "getTasks",
            "deleteTasks",
            "search",
            "fetch_content",
            "google_check_inbox",
            "google_search_emails",
            "google_get_email",
            "google_draft_email",
            "google_check_calendar",
            "microsoft_list_messages",
            "microsoft_get_message",
            "microsoft_search_onedrive",
            "microsoft_get_onedrive_file_content",
        ]
    );
}

#[test]
fn integrations_need_to_be_connected_and_enabled() {
    let settings = UserSettings {
        web_tools_enabled: false,
        ..UserSettings::default()
    };
    let half = IntegrationStatus {
        google: IntegrationState {
            connected: true,
            enabled: false,
        },
        microsoft: IntegrationState {
            connected: false,
            enabled: true,
        },
        do_not_ask: false,
    };
    let specs = available(&settings, &half, true);
    assert_eq!(tool_names(&specs), ["render_html"]);
    assert!(!has_web_tools(&specs));

    let google_only = IntegrationStatus { google: ON, ..half };
    let specs = available(&settings, &google_only, true);
    assert_eq!(specs.len(), 6);
    assert!(specs.iter().skip(1).all(|s| s.name.starts_with("google_")));
}

#[test]
fn verbs_and_cache_flags_follow_the_catalogue() {
    let expected = [
        ("render_html", "Rendering artifact", false),
        ("addTasks", "Adding tasks", false),
        ("getTasks", "Getting tasks", false),
        ("deleteTasks", "Deleting tasks", false),
        ("search", "searching for {query}", true),
        ("fetch_content", "fetching {url}", true),
        ("google_check_inbox", "Checking Gmail inbox", false),
        ("google_search_emails", "Searching Gmail messages", false),
        ("google_get_email", "Getting Gmail message details", false),
        ("google_draft_email", "Creating Gmail draft", false),
        ("google_check_calendar", "Checking Google Calendar", true),
        ("microsoft_list_messages", "Listing Microsoft messages", true),
        ("microsoft_get_message", "Getting Microsoft message", true),
        ("microsoft_search_onedrive", "Searching OneDrive", true),
        (
            "microsoft_get_onedrive_file_content",
            "Getting OneDrive file content",
            true,
        ),
    ];
    for (name, verb, cacheable) in expected {
        let spec = built_in(name).expect(name);
        assert_eq!(spec.verb.as_deref(), Some(verb), "{name}");
        assert_eq!(spec.cacheable, cacheable, "{name}");
        assert_eq!(spec.web, names::WEB.contains(&name), "{name}");
        assert!(spec.mcp.is_none());
        assert!(!spec.description.is_empty());
    }
    for spec in [skill_spec(), search_project_chats_spec("Garden")] {
        assert_eq!(spec.verb, None);
        assert!(!spec.cacheable && !spec.web);
    }
}

#[test]
fn skill_and_project_search_specs() {
    assert_eq!(skill_spec().name, "skill");
    assert_eq!(skill_spec().parameters["required"], json!(["name"]));
    let project = search_project_chats_spec("Kitchen Remodel");
    assert_eq!(project.name, "search_project_chats");
    assert!(project.description.contains("\"Kitchen Remodel\""));
    assert_eq!(project.parameters["required"], json!(["query"]));
}

fn all_schemas() -> Vec<ToolSpec> {
    let (settings, integrations) = everything_on();
    let mut specs = available(&settings, &integrations, true);
    specs.push(skill_spec());
    specs.push(search_project_chats_spec("P"));
    specs
}

fn contains_key(value: &Value, key: &str) -> bool {
    match value {
        Value::Object(obj) => obj.contains_key(key) || obj.values().any(|v| contains_key(v, key)),
        Value::Array(items) => items.iter().any(|v| contains_key(v, key)),
        _ => false,
    }
}

#[test]
fn schemas_are_plain_inline_objects() {
    for spec in all_schemas() {
        let schema = &spec.parameters;
        assert_eq!(schema["type"], "object", "{}", spec.name);
        assert!(schema["properties"].is_object(), "{}", spec.name);
        for key in ["$ref", "$defs", "definitions", "$schema", "format"] {
            assert!(!contains_key(schema, key), "{} has {key}", spec.name);
        }
        assert!(schema.get("title").is_none(), "{}", spec.name);
        let text = schema.to_string();
        assert!(!text.contains(r#""null""#), "{}: {text}", spec.name);
        assert!(
            !text.contains("\\n"),
            "descriptions are single paragraphs: {text}"
        );
        assert!(!spec.description.contains("  "), "{}", spec.description);
    }
}

#[test]
fn strict_tools_and_only_they_reject_unknown_keys() {
    let lenient = [
        "render_html",
        "addTasks",
        "getTasks",
        "deleteTasks",
        "skill",
        "search_project_chats",
    ];
    for spec in all_schemas() {
        let strict = !lenient.contains(&spec.name.as_str());
        let declared = spec.parameters.get("additionalProperties") == Some(&Value::Bool(false));
        assert_eq!(declared, strict, "{}", spec.name);
        let mut input = sample_input(&spec.parameters, false);
        if let Value::Object(obj) = &mut input {
            obj.insert("surprise".into(), json!(1));
        }
        assert_eq!(
            parse_builtin(&spec.name, &input).is_err(),
            strict,
            "{}",
            spec.name
        );
    }
}

/// A value of the shape a schema describes: required properties only, or all of them.
fn sample_input(schema: &Value, all: bool) -> Value {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut obj = Map::new();
    if let Some(props) = schema["properties"].as_object() {
        for (name, prop) in props {
            if all || required.contains(&name.as_str()) {
                obj.insert(name.clone(), sample_value(prop));
            }
        }
    }
    Value::Object(obj)
}

fn sample_value(prop: &Value) -> Value {
    if let Some(first) = prop["anyOf"].as_array().and_then(|alts| alts.last()) {
        return sample_value(first);
    }
    match prop["type"].as_str() {
        Some("string") => json!("text"),
        Some("integer") | Some("number") => prop.get("minimum").cloned().unwrap_or(json!(3)),
        Some("boolean") => json!(true),
        Some("array") => json!([sample_value(&prop["items"])]),
        Some("object") => sample_input(prop, true),
        _ => Value::Null,
    }
}

/// Parses `input` with the argument struct of tool `name`, as executors do.
fn parse_builtin(name: &str, input: &Value) -> Result<(), Error> {
    fn p<T: serde::de::DeserializeOwned>(name: &str, input: &Value) -> Result<(), Error> {
        parse_args::<T>(name, input).map(drop)
    }
    match name {
        "render_html" => p::<RenderHtmlArgs>(name, input),
        "addTasks" => p::<AddTasksArgs>(name, input),
        "getTasks" => p::<GetTasksArgs>(name, input),
        "deleteTasks" => p::<DeleteTasksArgs>(name, input),
        "search" => p::<SearchArgs>(name, input),
        "fetch_content" => p::<FetchContentArgs>(name, input),
        "google_check_inbox" => p::<GoogleCheckInboxArgs>(name, input),
        "google_search_emails" => p::<GoogleSearchEmailsArgs>(name, input),
        "google_get_email" => p::<GoogleGetEmailArgs>(name, input),
        "google_draft_email" => p::<GoogleDraftEmailArgs>(name, input),
        "google_check_calendar" => p::<GoogleCheckCalendarArgs>(name, input),
        "microsoft_list_messages" => p::<MicrosoftListMessagesArgs>(name, input),
        "microsoft_get_message" => p::<MicrosoftGetMessageArgs>(name, input),
        "microsoft_search_onedrive" => p::<MicrosoftSearchOnedriveArgs>(name, input),
        "microsoft_get_onedrive_file_content" => p::<MicrosoftGetOnedriveFileContentArgs>(name, input),
        "skill" => p::<SkillArgs>(name, input),
        "search_project_chats" => p::<SearchProjectChatsArgs>(name, input),
        other => Err(Error::InvalidToolArguments {
            tool: other.to_owned(),
            reason: "the test has no parser for this tool".to_owned(),
        }),
    }
}

#[test]
fn whatever_a_schema_describes_its_parser_accepts() {
    for spec in all_schemas() {
        for all in [false, true] {
            let input = sample_input(&spec.parameters, all);
            assert!(
                parse_builtin(&spec.name, &input).is_ok(),
                "{} rejects {input}",
                spec.name
            );
        }
    }
}

#[test]
fn a_missing_required_field_is_a_clear_error() {
    let err = parse_args::<GoogleGetEmailArgs>("google_get_email", &json!({})).expect_err("missing id");
    assert_eq!(
        err,
        Error::InvalidToolArguments {
            tool: "google_get_email".into(),
            reason: "missing field `id`".into(),
        }
    );
    assert!(err.to_string().contains("google_get_email"));
    let err = parse_args::<SearchArgs>("search", &json!({"query": "x", "max_results": "lots"}))
        .expect_err("not a number");
    assert!(err.to_string().contains("whole number"), "{err}");
}

#[test]
fn search_counts_are_clamped_and_leniently_parsed() {
    let limit = |v: Value| parse_args::<SearchArgs>("search", &v).map(|a| a.limit());
    assert_eq!(limit(json!({"query": "q", "max_results": 7})), Ok(7));
    assert_eq!(limit(json!({"query": "q", "max_results": 7.0})), Ok(7));
    assert_eq!(limit(json!({"query": "q", "max_results": "7"})), Ok(7));
    assert_eq!(limit(json!({"query": "q", "max_results": 100})), Ok(25));
    assert_eq!(limit(json!({"query": "q", "max_results": -3})), Ok(10));
    assert_eq!(limit(json!({"query": "q", "max_results": 0})), Ok(10));
    assert_eq!(limit(json!({"query": "q"})), Ok(10));
}

#[test]
fn fetch_length_defaults_and_clamps() {
    let len = |v: Value| parse_args::<FetchContentArgs>("fetch_content", &v).map(|a| a.max_length());
    assert_eq!(len(json!({"url": "https://x.test"})), Ok(16_000));
    assert_eq!(
        len(json!({"url": "https://x.test", "max_length": null})),
        Ok(16_000)
    );
    assert_eq!(len(json!({"url": "https://x.test", "max_length": 10})), Ok(1_000));
    assert_eq!(
        len(json!({"url": "https://x.test", "max_length": 99_999})),
        Ok(64_000)
    );
    assert_eq!(
        len(json!({"url": "https://x.test", "max_length": 5_000})),
        Ok(5_000)
    );
}

#[test]
fn listing_tools_default_to_twenty_and_cap_at_fifty() {
    let inbox: GoogleCheckInboxArgs = parse_args("google_check_inbox", &json!({})).expect("defaults");
    assert_eq!(
        (
            inbox.label.as_str(),
            inbox.max_results(),
            inbox.include_spam_trash
        ),
        ("INBOX", 20, false)
    );
    let inbox: GoogleCheckInboxArgs =
        parse_args("google_check_inbox", &json!({"max_results": 500})).expect("valid");
    assert_eq!(inbox.max_results(), 50);
    let emails: GoogleSearchEmailsArgs =
        parse_args("google_search_emails", &json!({"query": "from:a"})).expect("valid");
    assert_eq!(emails.max_results(), 20);
    let files: MicrosoftSearchOnedriveArgs = parse_args(
        "microsoft_search_onedrive",
        &json!({"query": "q", "max_results": 51}),
    )
    .expect("valid");
    assert_eq!(files.max_results(), 50);
    let calendar: GoogleCheckCalendarArgs =
        parse_args("google_check_calendar", &Value::Null).expect("defaults");
    assert_eq!(
        (calendar.days_ahead(), calendar.calendar_id.as_str()),
        (7, "primary")
    );
}

#[test]
fn draft_recipients_take_one_address_or_many() {
    let one: GoogleDraftEmailArgs = parse_args(
        "google_draft_email",
        &json!({"to": "a@x.test", "subject": "s", "body": "b", "cc": ["c@x.test", "d@x.test"]}),
    )
    .expect("valid");
    assert_eq!(one.to.to_vec(), ["a@x.test"]);
    assert_eq!(
        one.cc.map(|c| c.to_vec()),
        Some(vec!["c@x.test".to_owned(), "d@x.test".to_owned()])
    );
    assert_eq!((one.bcc, one.reply_to_id, one.reply_all), (None, None, false));
    let bad = parse_args::<GoogleDraftEmailArgs>(
        "google_draft_email",
        &json!({"to": 5, "subject": "s", "body": "b"}),
    );
    assert!(bad.is_err());
}

#[test]
fn outlook_paging_treats_empty_strings_as_absent() {
    let cases = [
        (
            json!({"top": 10, "skipToken": "", "filter": " ", "includeBodyHtml": false}),
            (10, None, None),
        ),
        (
            json!({"top": 80, "skipToken": "abc", "filter": "isRead eq false", "includeBodyHtml": true}),
            (50, Some("abc"), Some("isRead eq false")),
        ),
    ];
    for (input, expected) in cases {
        let args: MicrosoftListMessagesArgs = parse_args("microsoft_list_messages", &input).expect("valid");
        assert_eq!((args.top(), args.skip_token(), args.filter()), expected);
    }
}
