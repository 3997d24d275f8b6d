//! OAuth 2.1 for MCP servers that are protected resources, as the MCP authorization spec has it:
//! finding the authorization server (the `401` challenge's `resource_metadata`, else the RFC 9728
//! well-known URLs; then RFC 8414 metadata, else OpenID discovery), the client identity (a Client
//! ID Metadata Document the gateway serves, else registration under RFC 7591),
//! the authorization URL (PKCE S256, `state`, RFC 8707 `resource`), the RFC 9207 `iss` check on the
//! callback, and the token requests (code, refresh, revocation).
//!
//! Every URL involved goes through the outbound address policy and is fetched by a client pinned to
//! the addresses checked, following no redirects. Nothing here keeps state or reads the clock or a
//! random source: the caller stores pending authorizations and tokens, and passes in the time, the
//! `state` and the PKCE challenge.

mod client;
mod discovery;
mod flow;
mod http;

pub use client::{client_metadata_document, union_scopes, valid_scope};
pub use discovery::{AuthServer, Challenge};
pub use flow::{ClientCredentials, TokenSet, bearer, check_issuer};

use std::sync::Arc;

use promptgate_outbound::Outbound;

/// The OAuth side of the hub: the same outbound policy as every MCP connection.
#[derive(Clone)]
pub struct McpOAuth {
    outbound: Arc<Outbound>,
}

impl std::fmt::Debug for McpOAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpOAuth").finish_non_exhaustive()
    }
}

impl McpOAuth {
    pub(crate) fn new(outbound: Arc<Outbound>) -> McpOAuth {
        McpOAuth { outbound }
    }
}
