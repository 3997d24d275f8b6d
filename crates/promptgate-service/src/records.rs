//! The records the use cases take and return, re-exported by name from the store: a transport
//! converts them to and from its own bodies.

pub use promptgate_mcp::{DiscoveredTool, ProbeReport};
pub use promptgate_store::{
    Account, ApiKey, Budget, BudgetScope, Caller, IssuedKey, LimitKind, MAX_KEYS_PER_USER, MAX_PERIOD_SECS,
};
pub use promptgate_store::{
    McpServer, Message, MessageStatus, NewMcpServer, NewProject, NewSkill, NewThread, Page, Role, Thread,
    ThreadUpdate, ThreadsAfter, TokenCounts, UsageGroup, UsageGrouping, UsageKind, UsageQuery, User,
    UserTokens,
};
