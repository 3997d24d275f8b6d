//! The tools each OAuth-authorized MCP server last listed, so a send that finds the user's grant
//! dead (the token refused and renewing it refused too) does not silently go on without the server:
//! the model still sees its tools, and calling one asks the user to authorize the server again
//! mid-turn, like any call that meets `401`. The list lives in the store beside the grant, so
//! another instance or a restarted one knows it too; a send writes it only when the hub's listing
//! changed since this instance last wrote it, so a cached discovery costs no write.
//!
//! A server refusing discovery whose tools were never listed (or that was never connected) cannot
//! be offered: the model reads a note that the user must connect it, and a client that shows cards
//! gets a `data-authorization` part that does not wait (see `consent`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use promptgate_core::tools::mcp_names::McpToolDef;
use promptgate_mcp::{DiscoveredTool, McpError, McpServerConfig};

use crate::Service;

/// Past this many servers remembered, the memory starts over (each server's next listing is
/// written again, once).
const SERVERS_REMEMBERED: usize = 10_000;

/// A user's server: (user id, server id).
type ServerKey = (String, String);

/// The listings this instance wrote, by user and server. A weak handle on the hub's list keeps its
/// allocation from being reused, so "the same list" is exact while the hub caches it.
#[derive(Default)]
pub(crate) struct KnownTools {
    written: Mutex<HashMap<ServerKey, Weak<[DiscoveredTool]>>>,
    /// The authorizations started for sends' cards, by user and server, with when: the next
    /// sends show the same one rather than each keeping another pending authorization.
    notices: Mutex<HashMap<ServerKey, (String, Instant)>>,
}

/// How long a card's authorization is shown again: well within the life of a pending one.
const NOTICE_REUSED: Duration = Duration::from_secs(5 * 60);

impl KnownTools {
    pub(crate) fn recent_notice(&self, user_id: &str, server_id: &str) -> Option<String> {
        let notices = self
            .notices
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (url, at) = notices.get(&(user_id.to_owned(), server_id.to_owned()))?;
        (at.elapsed() < NOTICE_REUSED).then(|| url.clone())
    }

    /// The server was authorized: a card's authorization shown before is of no use any more.
    pub(crate) fn forget_notice(&self, user_id: &str, server_id: &str) {
        self.notices
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&(user_id.to_owned(), server_id.to_owned()));
    }

    pub(crate) fn note_notice(&self, user_id: &str, server_id: &str, url: &str) {
        let mut notices = self
            .notices
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        notices.retain(|_, (_, at)| at.elapsed() < NOTICE_REUSED);
        if notices.len() >= SERVERS_REMEMBERED {
            notices.clear();
        }
        notices.insert(
            (user_id.to_owned(), server_id.to_owned()),
            (url.to_owned(), Instant::now()),
        );
    }

    fn unchanged(&self, key: &ServerKey, tools: &Arc<[DiscoveredTool]>) -> bool {
        let written = self
            .written
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        written
            .get(key)
            .is_some_and(|kept| Weak::ptr_eq(kept, &Arc::downgrade(tools)))
    }

    fn note_written(&self, key: ServerKey, tools: &Arc<[DiscoveredTool]>) {
        let mut written = self
            .written
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if written.len() >= SERVERS_REMEMBERED && !written.contains_key(&key) {
            written.clear();
        }
        written.insert(key, Arc::downgrade(tools));
    }
}

/// A discovery failure that says the server wants the user's authorization (rather than being
/// down): `401`, or a token too narrow for it.
pub(crate) fn wants_authorization(error: &McpError) -> bool {
    matches!(
        error,
        McpError::Unauthorized { status: 401 } | McpError::InsufficientScope { .. }
    )
}

/// The server is authorized by a secret the user stored with it, which only they can fix: no
/// authorization is asked for.
pub(crate) fn has_static_secret(config: &McpServerConfig, authorized: bool) -> bool {
    !config.headers.is_empty() || (config.bearer_token.is_some() && !authorized)
}

impl Service {
    /// Keeps `tools` as what the authorized server `config` last listed, unless this instance
    /// already kept this very listing. A write that fails is logged; the send goes on.
    pub(crate) async fn remember_mcp_tools(
        &self,
        config: &McpServerConfig,
        tools: &Arc<[DiscoveredTool]>,
        defs: &[McpToolDef],
    ) {
        let key = (config.user_id.clone(), config.id.clone());
        if self.mcp_known.unchanged(&key, tools) {
            return;
        }
        let Ok(text) = serde_json::to_string(defs) else {
            return;
        };
        match self
            .store
            .put_mcp_known_tools(&config.user_id, &config.id, &text)
            .await
        {
            Ok(()) => self.mcp_known.note_written(key, tools),
            Err(error) => {
                tracing::info!(server_id = %config.id, %error, "an MCP server's tool list could not be kept")
            }
        }
    }

    /// What the authorized server last listed, if it was kept.
    pub(crate) async fn known_mcp_tools(&self, user_id: &str, server_id: &str) -> Option<Vec<McpToolDef>> {
        let text = match self.store.mcp_known_tools(user_id, server_id).await {
            Ok(text) => text?,
            Err(error) => {
                tracing::info!(%server_id, %error, "an MCP server's kept tool list could not be read");
                return None;
            }
        };
        serde_json::from_str(&text).ok()
    }
}
