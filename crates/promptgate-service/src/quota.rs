//! Per-user storage quotas: how many bytes and threads a user may keep. They are checked where new
//! work starts (a send, a new thread), never on the answer a turn writes: an answer a user has seen
//! is stored even when it takes them past the quota, and the next send is refused instead.

use promptgate_store::StorageUsage;

use super::{Service, ServiceError};

/// What one user may keep; `None` leaves that dimension unbounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StorageQuota {
    /// Bytes of messages, artifacts and workspace files together.
    pub max_bytes: Option<u64>,
    pub max_threads: Option<u64>,
}

/// One GiB and ten thousand threads: far above what a person chats, far below what fills a disk.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;
pub const DEFAULT_MAX_THREADS: u64 = 10_000;

impl Default for StorageQuota {
    fn default() -> Self {
        Self {
            max_bytes: Some(DEFAULT_MAX_BYTES),
            max_threads: Some(DEFAULT_MAX_THREADS),
        }
    }
}

/// A user's usage beside their quota, as `GET /v1/usage/storage` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StorageReport {
    pub usage: StorageUsage,
    pub quota: StorageQuota,
}

impl StorageQuota {
    /// Refuses new work when the user is at or past a bound; `new_thread` when the work would
    /// create a thread.
    fn admit(&self, usage: StorageUsage, new_thread: bool) -> Result<(), ServiceError> {
        if let Some(max) = self.max_bytes.filter(|max| usage.bytes >= *max) {
            return Err(ServiceError::QuotaExceeded(format!(
                "you keep {} bytes, your storage quota is {max}; delete threads to make room",
                usage.bytes
            )));
        }
        if let Some(max) = self.max_threads.filter(|max| new_thread && usage.threads >= *max) {
            return Err(ServiceError::QuotaExceeded(format!(
                "you have {} threads, your quota is {max}; delete threads to make room",
                usage.threads
            )));
        }
        Ok(())
    }
}

impl Service {
    /// Refuses work that would store more for a user at or past their quota. `known` is their usage
    /// when the caller read it already (a send reads it with its thread, saving a round trip).
    pub(crate) async fn admit_storage(
        &self,
        user_id: &str,
        new_thread: bool,
        known: Option<StorageUsage>,
    ) -> Result<(), ServiceError> {
        let usage = match known {
            Some(usage) => usage,
            None => self.store.storage_usage(user_id).await?,
        };
        self.config.quota.admit(usage, new_thread)
    }

    /// The user's storage usage and quota.
    pub async fn storage_report(&self, user_id: &str) -> Result<StorageReport, ServiceError> {
        Ok(StorageReport {
            usage: self.store.storage_usage(user_id).await?,
            quota: self.config.quota,
        })
    }
}
