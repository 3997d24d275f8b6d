//! What each user keeps: the bytes of their messages, artifacts and workspace files,
//! and their number of threads. The database's triggers keep the counters in the transaction of each
//! write (migration 0009), so reading a user's usage is one row, however much they keep.

use crate::connect::Store;
use crate::error::Result;
use crate::statement::Sql;
use crate::types::StorageUsage;
use crate::util::Cols;

impl Store {
    /// The user's usage; nothing counted yet (or no such user) reads as zero.
    pub async fn storage_usage(&self, user: &str) -> Result<StorageUsage> {
        let row = "SELECT bytes, threads FROM user_storage WHERE user_id = $1"
            .with_values((user,))
            .fetch_optional(&self.pool, "usage.storage_usage")
            .await?;
        let Some(row) = row else {
            return Ok(StorageUsage::default());
        };
        Ok(StorageUsage {
            bytes: u64::try_from(row.int(0)?).unwrap_or(0),
            threads: u64::try_from(row.int(1)?).unwrap_or(0),
        })
    }
}
