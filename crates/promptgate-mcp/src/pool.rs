//! The hub's entries, one per user, server and connection settings: found or made on each use, the
//! least recently used closed once the hub holds its most, and what they hold in memory counted for
//! `/metrics` (`promptgate_mcp_sessions`, `promptgate_mcp_session_bytes`).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use crate::entry::ServerEntry;
use crate::session::DiscoveredTool;

/// What one open session costs beyond its tool list: the rmcp service and its tasks, the pinned HTTP
/// client with its TLS setup and buffers. Measured as the growth of the process's resident memory
/// over 300 sessions (`benches/session_memory.rs`): 110 KiB each to a stateless-era server (the
/// Python SDK's), 121 KiB to a legacy one with a session (`server-everything`, its tool list aside).
pub(crate) const SESSION_BASE_BYTES: usize = 116 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PoolKey {
    pub user_id: String,
    pub server_id: String,
    pub fingerprint: u64,
}

/// Every live entry of a hub, by key.
#[derive(Default)]
pub(crate) struct Pool {
    entries: HashMap<PoolKey, Arc<ServerEntry>>,
}

impl Pool {
    pub fn get(&self, key: &PoolKey) -> Option<&Arc<ServerEntry>> {
        self.entries.get(key)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Adds `entry` in the place of any entry of the same user and server (its settings changed: the
    /// old session must not serve it again), then closes the least recently used entries past `cap`.
    pub fn insert(&mut self, key: PoolKey, entry: Arc<ServerEntry>, cap: usize) {
        self.remove_server(&key.user_id, &key.server_id);
        self.entries.insert(key, entry);
        while self.entries.len() > cap.max(1) {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, entry)| entry.last_used_ms())
                .map(|(key, _)| key.clone());
            match oldest {
                Some(key) => {
                    self.entries.remove(&key);
                    metrics::counter!("promptgate_mcp_sessions_evicted_total").increment(1);
                }
                None => break,
            }
        }
    }

    pub fn remove(&mut self, key: &PoolKey) {
        self.entries.remove(key);
    }

    pub fn remove_server(&mut self, user_id: &str, server_id: &str) {
        self.entries
            .retain(|key, _| !(key.user_id == user_id && key.server_id == server_id));
    }

    /// Removes the entry under `key` if it is still `entry` (a newer one may have taken its place).
    pub fn remove_if_same(&mut self, key: &PoolKey, entry: &ServerEntry) {
        if self
            .entries
            .get(key)
            .is_some_and(|current| std::ptr::eq(Arc::as_ptr(current), entry))
        {
            self.entries.remove(key);
        }
    }
}

/// The hub's memory in sessions, as the gauges show it.
#[derive(Default)]
pub(crate) struct Usage {
    sessions: AtomicI64,
    bytes: AtomicI64,
}

/// What a hub holds now: open sessions and the bytes they and their cached tool lists take (an
/// estimate: [`SESSION_BASE_BYTES`] per session plus the size of each list).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HubUsage {
    pub entries: usize,
    pub sessions: usize,
    pub bytes: usize,
}

impl Usage {
    pub fn apply(&self, sessions: i64, bytes: i64) {
        if sessions == 0 && bytes == 0 {
            return;
        }
        let sessions = self.sessions.fetch_add(sessions, Ordering::Relaxed) + sessions;
        let bytes = self.bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        metrics::gauge!("promptgate_mcp_sessions").set(sessions.max(0) as f64);
        metrics::gauge!("promptgate_mcp_session_bytes").set(bytes.max(0) as f64);
    }

    pub fn snapshot(&self, entries: usize) -> HubUsage {
        let count = |value: &AtomicI64| usize::try_from(value.load(Ordering::Relaxed)).unwrap_or(0);
        HubUsage {
            entries,
            sessions: count(&self.sessions),
            bytes: count(&self.bytes),
        }
    }
}

/// About what a cached tool list takes in memory: its text, and each tool's schema as JSON.
pub(crate) fn tools_bytes(tools: &[DiscoveredTool]) -> usize {
    tools
        .iter()
        .map(|tool| {
            std::mem::size_of::<DiscoveredTool>()
                + tool.name.len()
                + tool.description.as_ref().map_or(0, String::len)
                + tool.title.as_ref().map_or(0, String::len)
                + serde_json::to_vec(&tool.input_schema).map_or(0, |json| json.len())
        })
        .sum()
}
