//! MCP tools joining a send: prefixes from server names, reserved and bounded, and the origin
//! each tool carries.

use promptgate_core::settings::UserSettings;
use promptgate_core::tools::mcp_names::{
    MAX_TOOL_NAME_CHARS, MAX_TOOLS, McpServerTools, McpToolDef, MergeOutcome, NotOfferedReason,
    PrefixAllocator, left_out_summary, merge, sanitize_tool_prefix, upstream_tool_name,
};
use promptgate_core::tools::{McpOrigin, McpToolHints, available};
use regex::Regex;
use serde_json::json;

fn tool(name: &str) -> McpToolDef {
    McpToolDef {
        name: name.to_owned(),
        description: Some(format!("Does {name}.")),
        input_schema: json!({"type": "object", "properties": {"x": {"type": "string"}}}),
        ..McpToolDef::default()
    }
}

/// A server offering `tools` (each made by [`tool`]); the compose tests use it too.
pub(crate) fn server(id: &str, name: &str, tools: &[&str]) -> McpServerTools {
    McpServerTools {
        server_id: id.to_owned(),
        name: name.to_owned(),
        url: format!("https://{id}.test/mcp"),
        tools: tools.iter().map(|t| tool(t)).collect(),
    }
}

/// A server offering 100 tools, `t0` to `t99`: more than fit beside the built-ins.
fn hundred_tools(id: &str, name: &str) -> McpServerTools {
    let names: Vec<String> = (0..100).map(|i| format!("t{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    server(id, name, &names)
}

/// The names of the tools a merge offered, in order.
fn added_names(outcome: &MergeOutcome) -> Vec<&str> {
    outcome.added.iter().map(|t| t.name.as_str()).collect()
}

fn builtin_names() -> Vec<String> {
    available(
        &UserSettings::default(),
        &promptgate_core::settings::IntegrationStatus::default(),
        true,
    )
    .into_iter()
    .map(|s| s.name)
    .collect()
}

#[test]
fn prefixes_are_sanitised_server_names() {
    let cases = [
        (Some("My Notes"), "my_notes"),
        (Some("GitHub (work)"), "github_work"),
        (Some("__already__"), "already"),
        (Some("-x-"), "x"),
        (Some("a  --  b"), "a_b"),
        (Some("Ünïcødé"), "n_c_d"),
        (Some("日本"), "mcp"),
        (Some(""), "mcp"),
        (Some("!!!"), "mcp"),
        (None, "mcp"),
        (Some("Server 2"), "server_2"),
    ];
    for (name, expected) in cases {
        assert_eq!(sanitize_tool_prefix(name), expected, "{name:?}");
    }
}

#[test]
fn every_prefix_handed_out_is_reserved() {
    let mut prefixes = PrefixAllocator::new();
    let got: Vec<String> = ["render", "render", "render 2", "Render", "日本", "x"]
        .iter()
        .map(|n| prefixes.allocate(n))
        .collect();
    assert_eq!(got, ["render", "render_2", "render_2_2", "render_3", "mcp", "x"]);
}

#[test]
fn long_server_names_give_bounded_prefixes() {
    let mut prefixes = PrefixAllocator::new();
    let prefix = prefixes.allocate(&"very long server name ".repeat(10));
    assert!(prefix.len() <= 32, "{prefix}");
    assert!(!prefix.ends_with('_'));
}

#[test]
fn tools_merge_with_their_origin_and_a_summary() {
    let builtins = builtin_names();
    let outcome = merge(
        builtins.iter().map(String::as_str),
        &[
            server("s1", "Notes", &["find", "add"]),
            server("s2", "Weather!", &["today"]),
        ],
    );
    let names = added_names(&outcome);
    assert_eq!(names, ["notes_find", "notes_add", "weather_today"]);
    assert_eq!(
        outcome.summary().as_deref(),
        Some("- notes (2 tools)\n- weather (1 tool)")
    );
    let first = &outcome.added[0];
    assert_eq!(
        first.mcp,
        Some(McpOrigin {
            server_id: "s1".into(),
            name: "Notes".into(),
            url: "https://s1.test/mcp".into(),
            tool_name: "find".into(),
            ..McpOrigin::default()
        })
    );
    assert_eq!(first.description, "Does find.");
    assert_eq!(first.parameters["properties"]["x"]["type"], "string");
    assert!(!first.cacheable && !first.web && first.verb.is_none());
    assert!(outcome.not_offered.is_empty());
    assert_eq!(outcome.servers[1].prefix, "weather");
}

#[test]
fn origin_metadata_serialises_as_the_ui_expects() {
    let outcome = merge([], &[server("s1", "My Notes", &["find"])]);
    let origin = outcome.added[0].mcp.as_ref().expect("mcp tool");
    assert_eq!(
        serde_json::to_value(origin).expect("serialisable"),
        json!({"name": "My Notes", "url": "https://s1.test/mcp", "toolName": "find"})
    );
}

#[test]
fn a_tools_title_and_hints_reach_its_origin_and_the_preview_shape() {
    let mut annotated = tool("delete");
    annotated.title = Some("Delete a note".into());
    annotated.annotations = Some(McpToolHints {
        read_only_hint: Some(false),
        destructive_hint: Some(true),
        idempotent_hint: Some(true),
        open_world_hint: Some(false),
    });
    let servers = [McpServerTools {
        tools: vec![annotated],
        ..server("s1", "Notes", &[])
    }];
    let outcome = merge([], &servers);
    let spec = serde_json::to_value(&outcome.added[0]).expect("serialisable");
    assert_eq!(
        spec["mcp"],
        json!({
            "name": "Notes", "url": "https://s1.test/mcp", "toolName": "delete", "title": "Delete a note",
            "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false},
        })
    );
    let builtin = available(
        &UserSettings::default(),
        &promptgate_core::settings::IntegrationStatus::default(),
        true,
    );
    let first = serde_json::to_value(&builtin[0]).expect("serialisable");
    assert!(
        first.get("mcp").is_none(),
        "built-in tools carry no MCP origin: {first}"
    );
}

#[test]
fn the_first_registration_of_a_name_wins() {
    let builtins = builtin_names();
    let outcome = merge(
        builtins.iter().map(String::as_str),
        &[
            // `fetch` + `content` collides with the built-in `fetch_content`.
            server("s1", "fetch", &["content", "page"]),
            server("s2", "fetch", &["page"]),
            server("s3", "fetch_2", &["page", "other"]),
        ],
    );
    let names = added_names(&outcome);
    // s2 is `fetch_2`; s3's base `fetch_2` is taken, so it is `fetch_2_2`.
    assert_eq!(
        names,
        ["fetch_page", "fetch_2_page", "fetch_2_2_page", "fetch_2_2_other"]
    );
    assert_eq!(outcome.not_offered.len(), 1);
    let skipped = &outcome.not_offered[0];
    assert_eq!(skipped.name, "fetch_content");
    assert_eq!(skipped.reason, NotOfferedReason::NameTaken);
    assert!(
        skipped.warning().contains("already in use"),
        "{}",
        skipped.warning()
    );
    assert_eq!(
        outcome.summary_lines,
        ["- fetch (1 tool)", "- fetch_2 (1 tool)", "- fetch_2_2 (2 tools)"]
    );
}

#[test]
fn a_server_whose_tools_all_collide_gets_no_summary_line() {
    let outcome = merge(["dup_a"], &[server("s1", "dup", &["a", "a"])]);
    assert!(outcome.added.is_empty());
    assert_eq!(outcome.summary(), None);
    assert_eq!(outcome.not_offered.len(), 2);
    assert_eq!(outcome.servers[0].added, 0);
}

#[test]
fn names_are_made_acceptable_to_upstreams() {
    let valid = Regex::new(r"^[a-zA-Z0-9_-]{1,64}$").expect("valid pattern");
    assert_eq!(upstream_tool_name("everything", "get-sum"), "everything_get-sum");
    assert_eq!(upstream_tool_name("files", "fs.read file"), "files_fs_read_file");
    let long_tool = "x".repeat(100);
    let shortened = upstream_tool_name("srv", &long_tool);
    assert!(valid.is_match(&shortened), "{shortened}");
    assert_eq!(shortened.len(), MAX_TOOL_NAME_CHARS);
    assert!(shortened.starts_with("srv_xxxx"));
    assert_eq!(shortened, upstream_tool_name("srv", &long_tool), "deterministic");
    let other = upstream_tool_name("srv", &format!("{long_tool}y"));
    assert_ne!(shortened, other, "names sharing a long head still differ");
    assert!(valid.is_match(&upstream_tool_name("ünï", "ツール")));
    assert_eq!(upstream_tool_name("a", &"b".repeat(62)).len(), 64);
}

#[test]
fn sanitised_names_that_collide_on_one_server_keep_the_first() {
    let outcome = merge([], &[server("s1", "files", &["read.file", "read_file"])]);
    let names = added_names(&outcome);
    assert_eq!(names, ["files_read_file"]);
    assert_eq!(
        outcome.added[0].mcp.as_ref().map(|m| m.tool_name.as_str()),
        Some("read.file")
    );
    assert_eq!(outcome.not_offered[0].tool_name, "read_file");
}

#[test]
fn the_toolset_is_capped_and_the_dropped_tools_are_named() {
    let builtins = builtin_names();
    let outcome = merge(
        builtins.iter().map(String::as_str),
        &[hundred_tools("s1", "one"), hundred_tools("s2", "two")],
    );
    assert_eq!(builtins.len() + outcome.added.len(), MAX_TOOLS);
    let dropped: Vec<&str> = outcome.dropped_for_limit().map(|d| d.name.as_str()).collect();
    assert_eq!(dropped.len(), 200 - outcome.added.len());
    assert_eq!(
        dropped.first(),
        Some(&format!("two_t{}", MAX_TOOLS - builtins.len() - 100).as_str())
    );
    assert!(
        outcome
            .dropped_for_limit()
            .all(|d| d.warning().contains("at most 128"))
    );
    assert_eq!(
        outcome.summary_lines,
        [
            "- one (100 tools)".to_owned(),
            format!("- two ({} tools)", MAX_TOOLS - builtins.len() - 100)
        ]
    );
}

#[test]
fn what_a_send_left_out_is_one_line_naming_a_few() {
    let builtins = builtin_names();
    let outcome = merge(
        builtins.iter().map(String::as_str),
        &[
            // `fetch` + `content` collides with the built-in `fetch_content`.
            server("s0", "fetch", &["content"]),
            hundred_tools("s1", "one"),
            hundred_tools("s2", "two"),
        ],
    );
    let dropped = outcome.dropped_for_limit().count();
    assert!(dropped > 50, "{dropped}");
    let unconnected = ["Three".to_owned(), "Four".to_owned()];
    let line = left_out_summary(&outcome.not_offered, &unconnected).unwrap();
    assert!(
        line.starts_with(&format!(
            "MCP left out of sends: {dropped} tools (a request offers at most 128 tools): `t"
        )),
        "{line}"
    );
    assert!(line.contains(&format!("and {} more; ", dropped - 5)), "{line}");
    assert!(
        line.contains("; 1 tool (their names are in use): `content` of \"fetch\"; "),
        "{line}"
    );
    assert!(
        line.ends_with("2 servers not connected (the toolset is full without them): \"Three\", \"Four\""),
        "{line}"
    );
    assert_eq!(line.matches('`').count(), 12, "six tools are named: {line}");
    assert_eq!(left_out_summary(&[], &[]), None);
}

#[test]
fn odd_schemas_and_descriptions_are_made_usable() {
    let mut bare = tool("bare");
    bare.input_schema = json!(null);
    bare.description = None;
    let mut typeless = tool("typeless");
    typeless.input_schema = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"]
    });
    typeless.description = Some("x".repeat(5000));
    let outcome = merge(
        [],
        &[McpServerTools {
            server_id: "s".into(),
            name: "odd".into(),
            url: "https://odd.test".into(),
            tools: vec![bare, typeless],
        }],
    );
    assert_eq!(
        *outcome.added[0].parameters,
        json!({"type": "object", "properties": {}})
    );
    assert!(outcome.added[0].description.contains("bare"));
    assert!(outcome.added[0].description.contains("\"odd\""));
    assert_eq!(outcome.added[1].parameters["type"], "object");
    assert_eq!(outcome.added[1].parameters["required"], json!(["a"]));
    assert!(outcome.added[1].parameters.get("$schema").is_none());
    assert!(outcome.added[1].description.chars().count() <= 2049);
}
