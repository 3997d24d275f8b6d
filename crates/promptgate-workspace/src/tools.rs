//! The four workspace tools' executors. Their definitions (and argument types) live in core, with
//! the other tools the model is offered.

use chrono::{DateTime, Utc};
use promptgate_core::tools::args::{BashArgs, EditArgs, ReadArgs, WriteArgs};
use promptgate_core::tools::{names, parse_args};
use serde_json::{Value, json};

use crate::pool::ShellPool;
use crate::shell::{self, cut};
use crate::tree::{Workspace, resolve};

/// The workspace tools' names, in the order the harness offers them (before the app's tools).
pub const TOOL_NAMES: [&str; 4] = names::WORKSPACE;

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

    /// The failure's message, for a call that did nothing (a shell command that ran and exited
    /// non-zero is not one: its output is the answer).
    pub fn error_message(&self) -> Option<&str> {
        self.output.get("error").and_then(Value::as_str)
    }

    /// The result as the model reads it: plain text rather than JSON with escaped newlines. A shell
    /// call shows stdout, then stderr and the exit code when there are any.
    pub fn model_text(&self) -> String {
        if let Some(text) = self.output.as_str() {
            return text.to_owned();
        }
        if let Some(message) = self.error_message() {
            return message.to_owned();
        }
        let field = |k: &str| self.output.get(k).and_then(Value::as_str).unwrap_or_default();
        let code = self
            .output
            .get("exit_code")
            .and_then(Value::as_i64)
            .unwrap_or_default();
        let mut text = field("stdout").to_owned();
        let section = |text: &mut String, part: &str| {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(part);
        };
        let stderr = field("stderr");
        if !stderr.is_empty() {
            section(&mut text, &format!("[stderr]\n{stderr}"));
        }
        if code != 0 {
            section(&mut text, &format!("[exit code {code}]"));
        }
        if text.is_empty() {
            text.push_str("(no output)");
        }
        text
    }
}

fn parse<T: serde::de::DeserializeOwned>(tool: &str, args: &Value) -> Result<T, ToolOutcome> {
    parse_args(tool, args).map_err(|e| ToolOutcome::fail(e.to_string()))
}

/// Runs the workspace tool `name`, or `None` when `name` is not one of them (the caller's other
/// executors handle it). Failures the model can act on come back as an error outcome.
pub async fn run_tool(
    ws: &mut Workspace,
    pool: &ShellPool,
    name: &str,
    args: &Value,
    now: DateTime<Utc>,
) -> Option<ToolOutcome> {
    let outcome = match name {
        names::READ => parse(name, args).map(|a| read(ws, a)),
        names::WRITE => parse(name, args).map(|a| write(ws, a)),
        names::EDIT => parse(name, args).map(|a| edit(ws, a)),
        names::BASH => match parse::<BashArgs>(name, args) {
            Ok(a) => Ok(bash(ws, pool, a, now).await),
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
    let offset = args.offset.map_or(1, |o| o.max(1) as usize);
    let limit = args
        .limit
        .map_or(limits.max_output_lines, |l| l as usize)
        .clamp(1, limits.max_output_lines);
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

async fn bash(ws: &mut Workspace, pool: &ShellPool, args: BashArgs, now: DateTime<Utc>) -> ToolOutcome {
    if args.command.trim().is_empty() {
        return ToolOutcome::fail("command is empty");
    }
    let timeout = args
        .timeout
        .filter(|t| t.is_finite() && *t > 0.0)
        .map(|t| std::time::Duration::from_secs_f64(t.min(86_400.0)));
    let out = match shell::run(ws, pool, &args.command, now, timeout).await {
        Ok(out) => out,
        Err(refused) => return ToolOutcome::fail(format!("bash: {refused}; nothing was run")),
    };
    let is_error = out.exit_code != 0;
    ToolOutcome {
        output: json!({ "stdout": out.stdout, "stderr": out.stderr, "exit_code": out.exit_code }),
        is_error,
    }
}
