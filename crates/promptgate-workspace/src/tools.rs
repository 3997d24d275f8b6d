//! The four workspace tools: their definitions for the model and their executors.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use promptgate_core::prompt::WORKSPACE_HOME;
use promptgate_core::tools::ToolSpec;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::shell::{self, cut};
use crate::tree::{Workspace, resolve};

/// The workspace tools' names, in the order the harness installs them (before the app's tools).
pub const TOOL_NAMES: [&str; 4] = ["read", "write", "edit", "bash"];

/// What a tool call gives back to the model. `is_error` marks a call that did nothing useful, so the
/// stream can show it as a failed tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    pub output: Value,
    pub is_error: bool,
}

impl ToolOutcome {
    fn ok(output: Value) -> ToolOutcome {
        ToolOutcome {
            output,
            is_error: false,
        }
    }
    fn fail(message: impl Into<String>) -> ToolOutcome {
        ToolOutcome {
            output: json!({ "error": message.into() }),
            is_error: true,
        }
    }
}

fn spec(name: &str, description: String, parameters: Value) -> ToolSpec {
    ToolSpec {
        name: name.to_owned(),
        description,
        parameters: Arc::new(parameters),
        verb: None,
        cacheable: false,
        web: false,
        mcp: None,
    }
}

/// Definitions of `read`, `write`, `edit` and `bash`, in [`TOOL_NAMES`] order.
pub fn tool_specs() -> Vec<ToolSpec> {
    vec![
        spec(
            "read",
            format!(
                "Read a text file of the workspace. Relative paths start at {WORKSPACE_HOME}. Returns the \
                 lines from `offset` (1-based) on, at most `limit` of them."
            ),
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The file to read."},
                    "offset": {"type": "integer", "minimum": 1, "description": "First line to return, counting from 1."},
                    "limit": {"type": "integer", "minimum": 1, "description": "Most lines to return."}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        ),
        spec(
            "write",
            format!(
                "Create or replace a file of the workspace with `content`; missing directories are created. \
                 Relative paths start at {WORKSPACE_HOME}."
            ),
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The file to write."},
                    "content": {"type": "string", "description": "The whole new content."}
                },
                "required": ["path", "content"],
                "additionalProperties": false
            }),
        ),
        spec(
            "edit",
            "Edit a workspace file by exact replacement: each `oldText` must occur exactly once in the file \
             and is replaced by its `newText`. The edits apply in order; if any fails, the file is unchanged."
                .to_owned(),
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The file to edit."},
                    "edits": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "properties": {
                                "oldText": {"type": "string", "description": "Text to find; must be unique in the file."},
                                "newText": {"type": "string", "description": "Replacement text."}
                            },
                            "required": ["oldText", "newText"],
                            "additionalProperties": false
                        }
                    }
                },
                "required": ["path", "edits"],
                "additionalProperties": false
            }),
        ),
        spec(
            "bash",
            format!(
                "Run a command in the workspace's simulated shell (no network; run `help` for the commands). \
                 Each call starts a fresh shell in {WORKSPACE_HOME}: files persist, variables do not. \
                 Returns stdout, stderr and the exit code, cut to a size limit."
            ),
            json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The shell command or script to run."},
                    "timeout": {"type": "number", "description": "Seconds to allow; capped by the workspace limit."}
                },
                "required": ["command"],
                "additionalProperties": false
            }),
        ),
    ]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    path: String,
    offset: Option<u64>,
    limit: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    path: String,
    content: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    path: String,
    edits: Vec<Edit>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Edit {
    old_text: String,
    new_text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BashArgs {
    command: String,
    timeout: Option<f64>,
}

fn parse<T: for<'de> Deserialize<'de>>(tool: &str, args: &Value) -> Result<T, ToolOutcome> {
    serde_json::from_value(args.clone())
        .map_err(|e| ToolOutcome::fail(format!("invalid arguments for {tool}: {e}")))
}

/// Runs the workspace tool `name`, or `None` when `name` is not one of them (the caller's other
/// executors handle it). Failures the model can act on come back as an error outcome.
pub async fn run_tool(
    ws: &mut Workspace,
    name: &str,
    args: &Value,
    now: DateTime<Utc>,
) -> Option<ToolOutcome> {
    let outcome = match name {
        "read" => parse(name, args).map(|a| read(ws, a)),
        "write" => parse(name, args).map(|a| write(ws, a)),
        "edit" => parse(name, args).map(|a| edit(ws, a)),
        "bash" => match parse::<BashArgs>(name, args) {
            Ok(a) => Ok(bash(ws, a, now).await),
            Err(e) => Err(e),
        },
        _ => return None,
    };
    Some(outcome.unwrap_or_else(|e| e))
}

fn read(ws: &Workspace, args: ReadArgs) -> ToolOutcome {
    let path = match resolve(&args.path) {
        Ok(p) => p,
        Err(e) => return ToolOutcome::fail(e.0),
    };
    let bytes = match ws.read(&path) {
        Ok(b) => b,
        Err(e) => return ToolOutcome::fail(e.0),
    };
    let Ok(text) = std::str::from_utf8(bytes) else {
        return ToolOutcome::fail(format!(
            "{path} is binary ({} bytes); inspect it with bash (for example `base64` or `tar -tf`)",
            bytes.len()
        ));
    };
    let limits = ws.limits();
    let offset = usize::try_from(args.offset.unwrap_or(1).max(1)).unwrap_or(usize::MAX);
    let limit = usize::try_from(args.limit.unwrap_or(limits.max_output_lines as u64))
        .unwrap_or(usize::MAX)
        .min(limits.max_output_lines)
        .max(1);
    let total_lines = text.lines().count();
    if offset > total_lines.max(1) {
        return ToolOutcome::fail(format!(
            "{path} has {total_lines} lines; offset {offset} is past the end"
        ));
    }
    let mut shown: String = text.split_inclusive('\n').skip(offset - 1).take(limit).collect();
    let last = (offset - 1 + limit).min(total_lines);
    shown = cut(&shown, limits.max_output_bytes, usize::MAX);
    if last < total_lines {
        shown.push_str(&format!(
            "\n[lines {offset}-{last} of {total_lines}; continue with offset {}]",
            last + 1
        ));
    }
    ToolOutcome::ok(Value::String(shown))
}

fn write(ws: &mut Workspace, args: WriteArgs) -> ToolOutcome {
    let path = match resolve(&args.path) {
        Ok(p) => p,
        Err(e) => return ToolOutcome::fail(e.0),
    };
    let len = args.content.len();
    match ws.write(&path, args.content.into_bytes()) {
        Ok(()) => ToolOutcome::ok(Value::String(format!("wrote {len} bytes to {path}"))),
        Err(e) => ToolOutcome::fail(e.0),
    }
}

fn edit(ws: &mut Workspace, args: EditArgs) -> ToolOutcome {
    let path = match resolve(&args.path) {
        Ok(p) => p,
        Err(e) => return ToolOutcome::fail(e.0),
    };
    let mut text = match ws.read(&path) {
        Ok(bytes) => match std::str::from_utf8(bytes) {
            Ok(t) => t.to_owned(),
            Err(_) => return ToolOutcome::fail(format!("{path} is binary and cannot be edited as text")),
        },
        Err(e) => return ToolOutcome::fail(e.0),
    };
    if args.edits.is_empty() {
        return ToolOutcome::fail("edits is empty");
    }
    for (i, e) in args.edits.iter().enumerate() {
        let n = i + 1;
        if e.old_text.is_empty() {
            return ToolOutcome::fail(format!("edit {n}: oldText is empty"));
        }
        let mut found = text.match_indices(&e.old_text);
        let Some((at, _)) = found.next() else {
            return ToolOutcome::fail(format!(
                "edit {n}: oldText does not occur in {path}; the file is unchanged"
            ));
        };
        if found.next().is_some() {
            return ToolOutcome::fail(format!(
                "edit {n}: oldText occurs more than once in {path}; add surrounding text to make it unique. \
                 The file is unchanged"
            ));
        }
        text.replace_range(at..at + e.old_text.len(), &e.new_text);
    }
    let count = args.edits.len();
    match ws.write(&path, text.into_bytes()) {
        Ok(()) => ToolOutcome::ok(Value::String(format!("applied {count} edit(s) to {path}"))),
        Err(e) => ToolOutcome::fail(e.0),
    }
}

async fn bash(ws: &mut Workspace, args: BashArgs, now: DateTime<Utc>) -> ToolOutcome {
    if args.command.trim().is_empty() {
        return ToolOutcome::fail("command is empty");
    }
    let timeout = args
        .timeout
        .filter(|t| t.is_finite() && *t > 0.0)
        .map(|t| std::time::Duration::from_secs_f64(t.min(86_400.0)));
    let out = shell::run(ws, &args.command, now, timeout).await;
    let is_error = out.exit_code != 0;
    ToolOutcome {
        output: json!({ "stdout": out.stdout, "stderr": out.stderr, "exit_code": out.exit_code }),
        is_error,
    }
}
