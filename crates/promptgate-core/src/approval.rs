//! Tool approval policy: whether a tool call runs at once (`allow`), waits for the user's yes
//! (`ask`) or is refused (`deny`).
//!
//! When the operator turns defaults by kind on, each tool starts from one: built-in tools that change the user's things (a
//! draft in a mailbox, the task list, a workspace file or command) ask; other built-ins run; an
//! MCP tool follows its server's annotations as the MCP spec reads them (an absent hint means
//! "may change things, reaches the outside world", so an unannotated tool asks). The user's
//! settings may then choose per MCP server and per tool, the tool's entry winning over its
//! server's. The operator's floors come last and only ever tighten: a user cannot allow what
//! the operator made ask, nor ask for what the operator denied. With defaults by kind off, a tool
//! nobody chose a policy for runs at once, as before approvals existed.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tools::ToolSpec;
use crate::tools::catalogue::names;

/// What happens when the model calls a tool. Ordered from loosest to strictest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalPolicy {
    /// The call runs as soon as the model makes it.
    Allow,
    /// The call waits until the user approves or denies it.
    Ask,
    /// The call is refused; the model is told so.
    Deny,
}

impl ApprovalPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Ask => "ask",
            Self::Deny => "deny",
        }
    }
}

/// The user's choices, part of their settings. Keys of `mcp_servers` are MCP server ids or the
/// names the user gave them; keys of `tools` are tool names as the model sees them (an MCP tool
/// with its server's prefix).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ApprovalSettings {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub mcp_servers: BTreeMap<String, ApprovalPolicy>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, ApprovalPolicy>,
}

impl ApprovalSettings {
    pub fn is_empty(&self) -> bool {
        self.mcp_servers.is_empty() && self.tools.is_empty()
    }
}

/// Most entries the user's approval settings may hold, per map.
pub const MAX_APPROVAL_ENTRIES: usize = 256;

/// The operator's side, from the config: whether tools start from their defaults by kind (else
/// every tool the user did not choose for runs at once), and floors per tool name and for every
/// MCP tool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperatorApproval {
    pub by_kind: bool,
    pub tools: BTreeMap<String, ApprovalPolicy>,
    pub mcp: Option<ApprovalPolicy>,
}

/// Built-in tools that change something of the user's: each call asks by default.
const WRITING_BUILT_INS: [&str; 6] = [
    names::GOOGLE_DRAFT_EMAIL,
    names::ADD_TASKS,
    names::DELETE_TASKS,
    names::WRITE,
    names::EDIT,
    names::BASH,
];

/// The policy a tool has before anyone chose: by its kind, and for an MCP tool by its hints.
pub fn default_policy(spec: &ToolSpec) -> ApprovalPolicy {
    match &spec.mcp {
        Some(origin) => {
            let hints = origin.annotations.clone().unwrap_or_default();
            let read_only = hints.read_only_hint.unwrap_or(false);
            let destructive = hints.destructive_hint.unwrap_or(true);
            let open_world = hints.open_world_hint.unwrap_or(true);
            if read_only || (!destructive && !open_world) {
                ApprovalPolicy::Allow
            } else {
                ApprovalPolicy::Ask
            }
        }
        None if WRITING_BUILT_INS.contains(&spec.name.as_str()) => ApprovalPolicy::Ask,
        None => ApprovalPolicy::Allow,
    }
}

/// The tool's policy for this user under these floors.
pub fn policy_for(spec: &ToolSpec, user: &ApprovalSettings, operator: &OperatorApproval) -> ApprovalPolicy {
    let server_choice = spec.mcp.as_ref().and_then(|origin| {
        user.mcp_servers
            .get(&origin.server_id)
            .or_else(|| user.mcp_servers.get(&origin.name))
    });
    let chosen = user
        .tools
        .get(&spec.name)
        .or(server_choice)
        .copied()
        .unwrap_or_else(|| {
            if operator.by_kind {
                default_policy(spec)
            } else {
                ApprovalPolicy::Allow
            }
        });
    let tool_floor = operator.tools.get(&spec.name).copied();
    let mcp_floor = spec.mcp.as_ref().and(operator.mcp);
    [Some(chosen), tool_floor, mcp_floor]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(ApprovalPolicy::Allow)
}

/// What the model reads for a call the policy refused.
pub const DENIED_BY_POLICY_TEXT: &str =
    "This tool call was not run: the user's approval settings do not allow this tool.";
/// What the model reads for a call refused because the client cannot ask the user.
pub const CANNOT_ASK_TEXT: &str = "This tool call was not run: it needs the user's approval, and this \
     client cannot ask for it. Tell the user what you wanted to do instead.";
/// What the model reads for a call the user denied; `reason` is theirs, when they gave one.
pub fn denied_text(reason: Option<&str>) -> String {
    match reason.map(str::trim).filter(|reason| !reason.is_empty()) {
        Some(reason) => format!("The user denied this tool call: {reason}"),
        None => "The user denied this tool call.".to_owned(),
    }
}
/// What the model reads for a call whose approval was not given in time.
pub const EXPIRED_TEXT: &str =
    "This tool call was not run: the user did not approve it in time, so the request expired.";
/// What the model reads for a call whose approval the user cancelled with Stop.
pub const CANCELLED_TEXT: &str =
    "This tool call was not run: the user stopped the turn instead of approving it.";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{McpOrigin, McpToolHints, catalogue};

    fn mcp_tool(name: &str, server: &str, hints: Option<McpToolHints>) -> ToolSpec {
        let mut spec = catalogue::skill_spec();
        spec.name = name.to_owned();
        spec.mcp = Some(McpOrigin {
            server_id: format!("id-{server}"),
            name: server.to_owned(),
            url: "http://127.0.0.1:1/mcp".to_owned(),
            tool_name: name.to_owned(),
            title: None,
            annotations: hints,
        });
        spec
    }

    fn built_in(name: &str) -> ToolSpec {
        let mut spec = catalogue::skill_spec();
        spec.name = name.to_owned();
        spec
    }

    fn hints(read_only: Option<bool>, destructive: Option<bool>, open_world: Option<bool>) -> McpToolHints {
        McpToolHints {
            read_only_hint: read_only,
            destructive_hint: destructive,
            idempotent_hint: None,
            open_world_hint: open_world,
        }
    }

    #[test]
    fn defaults_follow_the_kind_of_tool() {
        assert_eq!(default_policy(&built_in(names::SEARCH)), ApprovalPolicy::Allow);
        assert_eq!(
            default_policy(&built_in(names::GOOGLE_DRAFT_EMAIL)),
            ApprovalPolicy::Ask
        );
        assert_eq!(
            default_policy(&built_in(names::DELETE_TASKS)),
            ApprovalPolicy::Ask
        );
        assert_eq!(default_policy(&built_in(names::BASH)), ApprovalPolicy::Ask);
        assert_eq!(default_policy(&built_in(names::WRITE)), ApprovalPolicy::Ask);
        assert_eq!(default_policy(&built_in(names::READ)), ApprovalPolicy::Allow);
    }

    #[test]
    fn mcp_tools_follow_their_annotations_with_the_spec_defaults() {
        let unannotated = mcp_tool("fs_delete", "fs", None);
        assert_eq!(default_policy(&unannotated), ApprovalPolicy::Ask);
        let read_only = mcp_tool("fs_read", "fs", Some(hints(Some(true), None, None)));
        assert_eq!(default_policy(&read_only), ApprovalPolicy::Allow);
        let destructive = mcp_tool("fs_rm", "fs", Some(hints(Some(false), Some(true), Some(false))));
        assert_eq!(default_policy(&destructive), ApprovalPolicy::Ask);
        let closed_additive = mcp_tool("mem_add", "mem", Some(hints(None, Some(false), Some(false))));
        assert_eq!(default_policy(&closed_additive), ApprovalPolicy::Allow);
        // Not destructive, yet it reaches the outside world (openWorldHint defaults to true).
        let open_additive = mcp_tool("mail_send", "mail", Some(hints(None, Some(false), None)));
        assert_eq!(default_policy(&open_additive), ApprovalPolicy::Ask);
    }

    #[test]
    fn the_tool_entry_wins_over_the_server_entry_and_floors_only_tighten() {
        let tool = mcp_tool("fs_delete", "fs", None);
        let mut user = ApprovalSettings::default();
        let by_kind = OperatorApproval {
            by_kind: true,
            ..OperatorApproval::default()
        };
        assert_eq!(policy_for(&tool, &user, &by_kind), ApprovalPolicy::Ask);
        assert_eq!(
            policy_for(&tool, &user, &OperatorApproval::default()),
            ApprovalPolicy::Allow,
            "without defaults by kind, what nobody chose runs"
        );
        user.mcp_servers.insert("fs".into(), ApprovalPolicy::Allow);
        let none = by_kind.clone();
        assert_eq!(policy_for(&tool, &user, &none), ApprovalPolicy::Allow);
        user.tools.insert("fs_delete".into(), ApprovalPolicy::Deny);
        assert_eq!(policy_for(&tool, &user, &none), ApprovalPolicy::Deny);
        user.tools.insert("fs_delete".into(), ApprovalPolicy::Allow);
        let floors = OperatorApproval {
            by_kind: true,
            tools: BTreeMap::new(),
            mcp: Some(ApprovalPolicy::Ask),
        };
        assert_eq!(policy_for(&tool, &user, &floors), ApprovalPolicy::Ask);
        // The MCP floor leaves built-ins alone; a tool floor reaches them.
        let search = built_in(names::SEARCH);
        assert_eq!(policy_for(&search, &user, &floors), ApprovalPolicy::Allow);
        let floors = OperatorApproval {
            by_kind: false,
            tools: [(names::SEARCH.to_owned(), ApprovalPolicy::Deny)].into(),
            mcp: None,
        };
        let mut loose = ApprovalSettings::default();
        loose.tools.insert(names::SEARCH.into(), ApprovalPolicy::Allow);
        assert_eq!(policy_for(&search, &loose, &floors), ApprovalPolicy::Deny);
    }

    #[test]
    fn a_server_is_named_by_its_id_or_its_name() {
        let tool = mcp_tool("fs_delete", "fs", None);
        let mut user = ApprovalSettings::default();
        user.mcp_servers.insert("id-fs".into(), ApprovalPolicy::Deny);
        assert_eq!(
            policy_for(&tool, &user, &OperatorApproval::default()),
            ApprovalPolicy::Deny
        );
    }

    #[test]
    fn a_denial_reads_with_the_users_reason() {
        assert_eq!(
            denied_text(Some("  not now ")),
            "The user denied this tool call: not now"
        );
        assert_eq!(denied_text(Some(" ")), "The user denied this tool call.");
    }
}
