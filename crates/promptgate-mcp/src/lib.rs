//! The user's MCP servers as a source of tools, spoken to over streamable HTTP.
//!
//! [`McpHub`] is the one entry point: it discovers the tools of a send's servers concurrently (each
//! bounded by a timeout, only as many servers as the toolset has room for, failures skipped and
//! reconnected in the background), keeps a bounded pool of live sessions and tool lists between
//! sends, checks them in the background, calls tools, and probes a server on demand.
//!
//! Both protocol eras are spoken: the `2026-07-28` stateless protocol where a server offers it, and
//! the `initialize` handshake with sessions otherwise. See `era` for how the choice is made.

mod config;
mod elicitation;
mod entry;
mod era;
mod error;
mod hub;
mod keeper;
pub mod oauth;
mod pool;
mod probes;
mod result;
mod session;
#[cfg(feature = "testing")]
pub mod testing;
mod trace_header;

pub use config::{DEFAULT_CALL_TIMEOUT, DEFAULT_DISCOVERY_TIMEOUT, HubSettings, McpServerConfig};
pub use elicitation::{ElicitationAnswer, ElicitationAsk, Elicitor};
pub use error::McpError;
pub use hub::{DiscoveryOutcome, McpHub, ProbeReport};
pub use pool::HubUsage;
pub use probes::ProbePermit;
/// The address policy MCP connections are checked by; the same type `[web.fetch]` uses.
pub use promptgate_outbound::AddressPolicy;
pub use result::McpToolResult;
pub use session::{DiscoveredTool, ToolHints};
