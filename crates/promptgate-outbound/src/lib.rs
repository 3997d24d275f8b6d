//! The one outbound address policy: every connection a user (or a model acting for one) can aim the
//! gateway at goes through [`Outbound`], today `fetch_content` and the user's MCP servers.
//!
//! Why a crate of its own: the policy needs I/O (name resolution, an HTTP client builder), so it
//! cannot live in `promptgate-core`, which stays pure; and the two crates that open user-chosen
//! connections, `promptgate-tools` and `promptgate-mcp`, do not depend on each other. Putting it
//! below both keeps one implementation instead of two that drift apart.
//!
//! How a connection is made safe:
//! 1. The URL is parsed the way browsers and reqwest parse it, so odd literal forms (`2130706433`,
//!    `0x7f.1`, `0177.0.0.1`, `127.1`) become the address they really name before any check.
//! 2. A host name is resolved once; every address it resolves to is checked, and the host is refused
//!    when any of them is not allowed (we cannot control which one a connection would pick).
//! 3. The HTTP client is pinned to exactly the checked addresses and its own resolver refuses every
//!    lookup, so a DNS answer that changes between the check and the connect (rebinding) cannot send
//!    the connection elsewhere. Redirects are never followed by the client; a caller that follows
//!    them by hand checks each hop again. Proxies from the environment are ignored, since a proxy
//!    would make the checked address meaningless.

mod address;
pub mod call_time;
mod client;
mod policy;
mod resolve;
#[cfg(feature = "testing")]
pub mod testing;
pub mod trace_context;

pub use address::{RestrictedRange, classify};
pub use client::{Outbound, Target, ensure_tls_provider, platform_tls_config};
pub use policy::{AddressPolicy, OutboundError};
pub use resolve::{HostResolver, SystemResolver};
