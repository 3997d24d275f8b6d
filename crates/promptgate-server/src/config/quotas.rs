//! The `[quotas]` section: what each user may keep in the database. Zero leaves a bound off.

use promptgate_service::StorageQuota;
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QuotasConfig {
    /// Bytes of one user's messages, artifacts and workspace files together.
    pub max_stored_bytes: u64,
    /// Threads one user may have.
    pub max_threads: u64,
}

impl Default for QuotasConfig {
    fn default() -> Self {
        let quota = StorageQuota::default();
        Self {
            max_stored_bytes: quota.max_bytes.unwrap_or(0),
            max_threads: quota.max_threads.unwrap_or(0),
        }
    }
}

impl QuotasConfig {
    pub fn quota(&self) -> StorageQuota {
        StorageQuota {
            max_bytes: Some(self.max_stored_bytes).filter(|max| *max > 0),
            max_threads: Some(self.max_threads).filter(|max| *max > 0),
        }
    }
}
