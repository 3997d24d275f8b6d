//! The `[approval]` section: the operator's side of tool approval (floors under the users'
//! choices, how long a call waits, and what `ask` becomes for a client that cannot answer).

use std::collections::BTreeMap;
use std::time::Duration;

use promptgate_core::approval::{ApprovalPolicy, OperatorApproval};
use promptgate_service::deployment::{ApprovalConfig as ServiceApproval, DEFAULT_APPROVAL_EXPIRY};
use serde::Deserialize;

use crate::config::ConfigError;

/// The longest a call may wait for its approval: a week.
const MAX_EXPIRY_SECS: u64 = 7 * 24 * 3600;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ApprovalConfig {
    /// `by_kind` (the default): tools that change things ask (the writing built-ins, MCP tools by
    /// their annotations); `allow`: a tool nobody chose a policy for runs at once.
    pub defaults: Defaults,
    /// Seconds a call waits for its approval; unanswered, it is denied and the model told so.
    pub expiry_secs: u64,
    /// `allow` or `deny`: what a call of an asking tool gets where the client cannot answer (a
    /// v5 UI stream, the OpenAI, Responses and Messages facades).
    pub without_client: ApprovalPolicy,
    /// A floor for every MCP tool: `ask` makes every MCP call wait, `deny` offers none to run.
    pub mcp_floor: Option<ApprovalPolicy>,
    /// Floors per tool name (as the model sees it): no user can loosen a tool past its floor.
    pub floors: BTreeMap<String, ApprovalPolicy>,
}

/// Where a tool's policy starts before the user or a floor chose.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Defaults {
    Allow,
    #[default]
    ByKind,
}

impl Default for ApprovalConfig {
    fn default() -> Self {
        Self {
            defaults: Defaults::default(),
            expiry_secs: DEFAULT_APPROVAL_EXPIRY.as_secs(),
            without_client: ApprovalPolicy::Allow,
            mcp_floor: None,
            floors: BTreeMap::new(),
        }
    }
}

impl ApprovalConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.without_client == ApprovalPolicy::Ask {
            return Err(ConfigError::Invalid(
                "approval.without_client must be \"allow\" or \"deny\": that client cannot be asked".into(),
            ));
        }
        if self.expiry_secs > MAX_EXPIRY_SECS {
            return Err(ConfigError::Invalid(format!(
                "approval.expiry_secs must be at most {MAX_EXPIRY_SECS} (a week)"
            )));
        }
        Ok(())
    }

    pub fn settings(&self) -> ServiceApproval {
        ServiceApproval {
            operator: OperatorApproval {
                by_kind: self.defaults == Defaults::ByKind,
                tools: self.floors.clone(),
                mcp: self.mcp_floor,
            },
            expiry: Duration::from_secs(self.expiry_secs),
            without_client: self.without_client,
        }
    }
}
