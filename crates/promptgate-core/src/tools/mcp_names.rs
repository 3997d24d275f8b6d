//! Naming and merging of tools discovered on a user's MCP servers.
//!
//! Each server gets a prefix derived from its display name (`My Notes` → `my_notes`), unique within the
//! send; its tools are offered as `<prefix>_<tool>`. The first registration of a name wins, so an MCP
//! tool can never shadow a built-in or a tool of an earlier server.
//!
//! Upstream function names must match `^[a-zA-Z0-9_-]{1,64}$`. Characters outside that set become `_`;
//! a name still longer than 64 characters keeps its first 53 characters, then `_` and ten hex digits of
//! a 64-bit FNV-1a hash of the full unshortened name. The result is deterministic across sends and
//! processes, readable at the front, and two long names that share their first 53 characters still
//! differ.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::text::truncate_chars;
use super::{McpOrigin, McpToolHints, ToolSpec};

/// Most tools one request offers the model, built-ins included.
pub const MAX_TOOLS: usize = 128;
/// Longest function name upstreams accept.
pub const MAX_TOOL_NAME_CHARS: usize = 64;
/// Prefix bases are cut to this length so the tool part of a name stays readable.
pub const MAX_PREFIX_CHARS: usize = 32;
/// MCP tool descriptions longer than this are cut: they are paid for in every request.
pub const MAX_DESCRIPTION_CHARS: usize = 2048;

const HASH_HEX_DIGITS: usize = 10;

/// The prefix base for a server's display name: lower-cased, every run of characters outside
/// `[a-z0-9]` replaced by one `_`, one `_` stripped from each end, `mcp` when nothing is left.
/// `Ünïcødé` → `n_c_d`; `日本` → `mcp`.
pub fn sanitize_tool_prefix(name: Option<&str>) -> String {
    let lower = name.unwrap_or_default().to_lowercase();
    let mut out = String::with_capacity(lower.len());
    let mut in_run = false;
    for c in lower.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
            in_run = false;
        } else if !in_run {
            out.push('_');
            in_run = true;
        }
    }
    let out = out.strip_prefix('_').unwrap_or(&out);
    let out = out.strip_suffix('_').unwrap_or(out);
    if out.is_empty() {
        "mcp".to_owned()
    } else {
        out.to_owned()
    }
}

/// Hands out unique prefixes: `base`, then `base_2`, `base_3`, … Every prefix handed out is reserved,
/// so `render`, `render`, `render 2` get `render`, `render_2`, `render_2_2`.
#[derive(Debug, Default, Clone)]
pub struct PrefixAllocator {
    taken: HashSet<String>,
}

impl PrefixAllocator {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn allocate(&mut self, server_name: &str) -> String {
        let base = sanitize_tool_prefix(Some(server_name));
        let base = match base.char_indices().nth(MAX_PREFIX_CHARS) {
            Some((cut, _)) => base[..cut].trim_end_matches('_').to_owned(),
            None => base,
        };
        let mut candidate = base.clone();
        let mut n = 2u32;
        while self.taken.contains(&candidate) {
            candidate = format!("{base}_{n}");
            n += 1;
        }
        self.taken.insert(candidate.clone());
        candidate
    }
}

/// `<prefix>_<tool>` made acceptable to upstreams (see the module documentation).
pub fn upstream_tool_name(prefix: &str, tool: &str) -> String {
    let full = format!("{prefix}_{tool}");
    let clean: String = full
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.len() <= MAX_TOOL_NAME_CHARS {
        return clean;
    }
    let head = MAX_TOOL_NAME_CHARS - HASH_HEX_DIGITS - 1;
    let hash = format!("{:016x}", fnv1a64(full.as_bytes()));
    // `clean` is ASCII, so byte slicing is on character boundaries.
    format!("{}_{}", &clean[..head], &hash[..HASH_HEX_DIGITS])
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// One tool as a server listed it. Serialized, it is what the store keeps of a server's last
/// listing, offered while the user's grant for the server is dead.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct McpToolDef {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub input_schema: Value,
    /// Display name, when the server gives one.
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub annotations: Option<McpToolHints>,
}

/// A server whose discovery succeeded for this send.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServerTools {
    pub server_id: String,
    /// Display name as the user gave it.
    pub name: String,
    pub url: String,
    pub tools: Vec<McpToolDef>,
}

/// Why a discovered tool is not offered.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum NotOfferedReason {
    /// Its name is already taken by a built-in or an earlier server's tool.
    NameTaken,
    /// The toolset already holds [`MAX_TOOLS`] tools.
    ToolLimit,
}

/// A discovered tool that was left out of the toolset.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NotOffered {
    /// The name it would have had.
    pub name: String,
    pub server: String,
    pub tool_name: String,
    pub reason: NotOfferedReason,
}

impl NotOffered {
    /// A line for the log.
    pub fn warning(&self) -> String {
        match self.reason {
            NotOfferedReason::NameTaken => format!(
                "MCP tool `{}` of server \"{}\" skipped: the name `{}` is already in use",
                self.tool_name, self.server, self.name
            ),
            NotOfferedReason::ToolLimit => format!(
                "MCP tool `{}` of server \"{}\" dropped: a request offers at most {MAX_TOOLS} tools",
                self.tool_name, self.server
            ),
        }
    }
}

/// Names a log line lists before it only counts the rest.
const NAMES_LISTED: usize = 5;

/// One line for the log about everything a send left out: tools past [`MAX_TOOLS`] or whose names
/// were taken, and the servers not connected at all because the toolset was already full. `None`
/// when nothing was left out. A send with many servers can leave out hundreds of tools; this says it
/// in one line, naming a few.
pub fn left_out_summary(not_offered: &[NotOffered], unconnected: &[String]) -> Option<String> {
    let mut parts = Vec::new();
    for (reason, why) in [
        (
            NotOfferedReason::ToolLimit,
            format!("a request offers at most {MAX_TOOLS} tools"),
        ),
        (NotOfferedReason::NameTaken, "their names are in use".to_owned()),
    ] {
        let names: Vec<String> = not_offered
            .iter()
            .filter(|n| n.reason == reason)
            .map(|n| format!("`{}` of \"{}\"", n.tool_name, n.server))
            .collect();
        if !names.is_empty() {
            parts.push(format!(
                "{} ({why}): {}",
                counted(names.len(), "tool"),
                listed(&names)
            ));
        }
    }
    if !unconnected.is_empty() {
        let names: Vec<String> = unconnected.iter().map(|name| format!("\"{name}\"")).collect();
        parts.push(format!(
            "{} not connected (the toolset is full without them): {}",
            counted(names.len(), "server"),
            listed(&names)
        ));
    }
    (!parts.is_empty()).then(|| format!("MCP left out of sends: {}", parts.join("; ")))
}

/// What the model reads of the user's MCP servers that need the user to authorize them before any
/// of their tools can be offered (their grant ended, or they were never connected, and no tool list
/// of theirs is known): so it can tell the user why it cannot do what those servers would.
pub fn needs_authorization_note(names: &[String]) -> Option<String> {
    if names.is_empty() {
        return None;
    }
    let quoted: Vec<String> = names.iter().map(|name| format!("\"{name}\"")).collect();
    let (servers, them) = if names.len() == 1 {
        ("MCP server", "it")
    } else {
        ("MCP servers", "them")
    };
    Some(format!(
        "The user's {servers} {} cannot be used now: the user needs to connect {them} again (Connect in \
         the app's MCP servers settings). If the user asks for something only {them} could do, say so.",
        listed(&quoted)
    ))
}

fn counted(n: usize, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

/// The first few names, and how many more there are.
fn listed(names: &[String]) -> String {
    let shown = names[..names.len().min(NAMES_LISTED)].join(", ");
    match names.len().saturating_sub(NAMES_LISTED) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

/// The prefix a server got and how many of its tools made it in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergedServer {
    pub server_id: String,
    pub prefix: String,
    pub added: usize,
}

/// Result of [`merge`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MergeOutcome {
    /// Tools to append to the toolset, in server order then listing order.
    pub added: Vec<ToolSpec>,
    pub servers: Vec<MergedServer>,
    /// `- <prefix> (n tools)` per server that contributed at least one tool.
    pub summary_lines: Vec<String>,
    pub not_offered: Vec<NotOffered>,
}

impl MergeOutcome {
    /// The body of the prompt's `## Connected MCP Servers` section; `None` when no tool merged.
    pub fn summary(&self) -> Option<String> {
        (!self.summary_lines.is_empty()).then(|| self.summary_lines.join("\n"))
    }

    /// Tools dropped because of [`MAX_TOOLS`].
    pub fn dropped_for_limit(&self) -> impl Iterator<Item = &NotOffered> {
        self.not_offered
            .iter()
            .filter(|n| n.reason == NotOfferedReason::ToolLimit)
    }
}

/// Merges the servers' tools into a toolset whose names are `existing`.
pub fn merge<'a>(existing: impl IntoIterator<Item = &'a str>, servers: &[McpServerTools]) -> MergeOutcome {
    let mut taken: HashSet<String> = existing.into_iter().map(str::to_owned).collect();
    let mut prefixes = PrefixAllocator::new();
    let mut outcome = MergeOutcome::default();
    for server in servers {
        let prefix = prefixes.allocate(&server.name);
        let mut added = 0usize;
        for tool in &server.tools {
            let name = upstream_tool_name(&prefix, &tool.name);
            let reason = if taken.contains(&name) {
                Some(NotOfferedReason::NameTaken)
            } else if taken.len() >= MAX_TOOLS {
                Some(NotOfferedReason::ToolLimit)
            } else {
                None
            };
            if let Some(reason) = reason {
                outcome.not_offered.push(NotOffered {
                    name,
                    server: server.name.clone(),
                    tool_name: tool.name.clone(),
                    reason,
                });
                continue;
            }
            taken.insert(name.clone());
            outcome.added.push(ToolSpec {
                description: describe(tool, &server.name),
                parameters: std::sync::Arc::new(object_schema(&tool.input_schema)),
                verb: None,
                cacheable: false,
                web: false,
                mcp: Some(McpOrigin {
                    server_id: server.server_id.clone(),
                    name: server.name.clone(),
                    url: server.url.clone(),
                    tool_name: tool.name.clone(),
                    title: tool.title.clone(),
                    annotations: tool.annotations.clone(),
                }),
                name,
            });
            added += 1;
        }
        if added > 0 {
            let unit = if added == 1 { "tool" } else { "tools" };
            outcome.summary_lines.push(format!("- {prefix} ({added} {unit})"));
        }
        outcome.servers.push(MergedServer {
            server_id: server.server_id.clone(),
            prefix,
            added,
        });
    }
    outcome
}

fn describe(tool: &McpToolDef, server: &str) -> String {
    let text = tool
        .description
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map_or_else(
            || format!("`{}` from the MCP server \"{server}\".", tool.name),
            str::to_owned,
        );
    truncate_chars(&text, MAX_DESCRIPTION_CHARS, "…")
}

/// Upstreams want an object schema at the top; servers occasionally send something else, or name a
/// meta-schema some upstreams refuse.
fn object_schema(schema: &Value) -> Value {
    let mut obj = match schema {
        Value::Object(obj) => obj.clone(),
        _ => Map::new(),
    };
    obj.remove("$schema");
    obj.insert("type".to_owned(), Value::String("object".to_owned()));
    obj.entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    Value::Object(obj)
}
