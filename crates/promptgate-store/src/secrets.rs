//! Secrets at rest: MCP header values and bearer tokens are written sealed and opened on read.
//!
//! The store does not know the cipher. The server hands it a [`SecretBox`] (the OAuth token sealer:
//! one key, one format for every secret the gateway keeps). Rows written before sealing existed are
//! marked `secrets_sealed = 0` and stay readable; [`Store::seal_plain_mcp_secrets`] seals them at
//! start-up. Without a box, storing a secret is refused rather than written in clear, and a row
//! that is sealed cannot be opened.

use std::collections::BTreeMap;
use std::sync::Arc;

use promptgate_core::storage::SecretBox;

use crate::connect::Store;
use crate::error::{Result, StoreError};
use crate::statement::Sql;
use crate::util::{Cols, from_json, to_json};

/// What [`Store::seal_plain_mcp_secrets`] found and did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SealingReport {
    /// Rows that were plain and are sealed now.
    pub sealed_now: u64,
    /// Rows that were sealed already.
    pub already_sealed: u64,
}

/// The message a user sees when the operator configured no key.
pub(crate) const NO_KEY: &str = "this server has no key to seal secrets at rest, so MCP headers and bearer \
tokens cannot be stored; the operator must set PROMPTGATE_TOKEN_KEY (see docs/security.md, \"Secrets at rest\")";

/// Header values and bearer token in the form a row stores them.
pub(crate) struct StoredSecrets {
    pub headers_json: String,
    pub bearer_token: Option<String>,
    pub sealed: bool,
}

impl Store {
    /// The store with `secrets` sealing and opening MCP secrets.
    pub fn with_secret_box(mut self, secrets: Arc<dyn SecretBox>) -> Store {
        self.secrets = Some(secrets);
        self
    }

    /// Seals what a create or update is about to write. Without a box only secret-free rows pass.
    pub(crate) fn seal_mcp_secrets(
        &self,
        headers: &BTreeMap<String, String>,
        bearer_token: Option<&str>,
    ) -> Result<StoredSecrets> {
        let Some(secrets) = &self.secrets else {
            if !headers.is_empty() || bearer_token.is_some() {
                return Err(StoreError::Invalid(NO_KEY.to_owned()));
            }
            return Ok(StoredSecrets {
                headers_json: to_json("MCP headers", headers)?,
                bearer_token: None,
                sealed: false,
            });
        };
        let seal = |plain: &str| {
            secrets
                .seal(plain)
                .map_err(|e| StoreError::Database(format!("sealing an MCP secret failed: {e}")))
        };
        let mut sealed_headers = BTreeMap::new();
        for (name, value) in headers {
            sealed_headers.insert(name.clone(), seal(value)?);
        }
        Ok(StoredSecrets {
            headers_json: to_json("MCP headers", &sealed_headers)?,
            bearer_token: bearer_token.map(seal).transpose()?,
            sealed: true,
        })
    }

    /// Seals one secret with the store's box; without a box the secret is refused, never kept in clear.
    pub(crate) fn seal_secret(&self, plain: &str) -> Result<String> {
        let Some(secrets) = &self.secrets else {
            return Err(StoreError::Invalid(NO_KEY.to_owned()));
        };
        secrets
            .seal(plain)
            .map_err(|e| StoreError::Database(format!("sealing a secret failed: {e}")))
    }

    /// Opens one secret [`Store::seal_secret`] sealed.
    pub(crate) fn open_secret(&self, sealed: &str) -> Result<String> {
        let Some(secrets) = &self.secrets else {
            return Err(StoreError::Database(
                "a secret is sealed but this server has no key to open it".to_owned(),
            ));
        };
        secrets
            .open(sealed)
            .map_err(|_| StoreError::Database("a sealed secret cannot be opened with this key".to_owned()))
    }

    /// Opens a row's secrets; plain rows (from before sealing) are returned as they are.
    pub(crate) fn open_mcp_secrets(
        &self,
        headers_json: &str,
        bearer_token: Option<String>,
        sealed: bool,
    ) -> Result<(BTreeMap<String, String>, Option<String>)> {
        let headers: BTreeMap<String, String> = from_json("MCP headers", headers_json)?;
        if !sealed {
            return Ok((headers, bearer_token));
        }
        let Some(secrets) = &self.secrets else {
            return Err(StoreError::Database(
                "MCP secrets are sealed but this server has no key to open them".to_owned(),
            ));
        };
        let open = |value: &str| {
            secrets.open(value).map_err(|_| {
                StoreError::Database("a sealed MCP secret cannot be opened with this key".to_owned())
            })
        };
        let mut opened = BTreeMap::new();
        for (name, value) in headers {
            let plain = open(&value)?;
            opened.insert(name, plain);
        }
        Ok((opened, bearer_token.as_deref().map(open).transpose()?))
    }

    /// How many MCP server rows hold sealed secrets. A server started without a key must not run
    /// over such rows: every send to those servers would fail.
    pub async fn count_sealed_mcp_servers(&self) -> Result<u64> {
        let row = "SELECT COUNT(*) FROM mcp_servers WHERE secrets_sealed = 1"
            .with_values(())
            .fetch_one(&self.pool, "secrets.count_sealed_mcp_servers")
            .await?;
        Ok(u64::try_from(row.int(0)?).unwrap_or(0))
    }

    /// How many MCP server rows still hold a header or bearer token in clear.
    pub async fn count_plain_mcp_secrets(&self) -> Result<u64> {
        let row = "SELECT COUNT(*) FROM mcp_servers WHERE secrets_sealed = 0 \
                   AND (bearer_token IS NOT NULL OR headers <> '{}')"
            .with_values(())
            .fetch_one(&self.pool, "secrets.count_plain_mcp_secrets")
            .await?;
        Ok(u64::try_from(row.int(0)?).unwrap_or(0))
    }

    /// Seals every row still in clear, after checking that the key opens one row sealed before (a
    /// changed key would otherwise leave rows no key can open). Each row is updated only while it
    /// is still plain, so two instances starting at once cannot seal a row twice.
    pub async fn seal_plain_mcp_secrets(&self) -> Result<SealingReport> {
        if self.secrets.is_none() {
            return Err(StoreError::Invalid(NO_KEY.to_owned()));
        }
        let sample = "SELECT headers, bearer_token FROM mcp_servers WHERE secrets_sealed = 1 \
                      AND (bearer_token IS NOT NULL OR headers <> '{}') LIMIT 1"
            .with_values(())
            .fetch_optional(&self.pool, "secrets.seal_plain_mcp_secrets")
            .await?;
        if let Some(row) = sample {
            self.open_mcp_secrets(&row.text(0)?, row.opt_text(1)?, true)
                .map_err(|_| {
                    StoreError::Invalid(
                        "the configured key does not open the MCP secrets already sealed in the database \
                         (was the key changed?)"
                            .to_owned(),
                    )
                })?;
        }
        let already_sealed = self.count_sealed_mcp_servers().await?;
        let plain = "SELECT id, headers, bearer_token FROM mcp_servers WHERE secrets_sealed = 0"
            .with_values(())
            .fetch_all(&self.pool, "secrets.seal_plain_mcp_secrets")
            .await?;
        let mut sealed_now = 0;
        for row in &plain {
            let id = row.text(0)?;
            let (headers, token) = self.open_mcp_secrets(&row.text(1)?, row.opt_text(2)?, false)?;
            let stored = self.seal_mcp_secrets(&headers, token.as_deref())?;
            let done = "UPDATE mcp_servers SET headers = $2, bearer_token = $3, secrets_sealed = 1 \
                        WHERE id = $1 AND secrets_sealed = 0"
                .with_values((&id, &stored.headers_json, stored.bearer_token.as_deref()))
                .execute(&self.writer, "secrets.seal_plain_mcp_secrets")
                .await?;
            sealed_now += done.rows_affected();
        }
        if sealed_now > 0 && self.backend() == crate::connect::Backend::Sqlite {
            // The clear values still sit in freed pages and in the write-ahead log; rewrite the file
            // and empty the log so they leave the disk with this start.
            "VACUUM"
                .with_values(())
                .execute(&self.writer, "secrets.seal_plain_mcp_secrets")
                .await?;
            "PRAGMA wal_checkpoint(TRUNCATE)"
                .with_values(())
                .execute(&self.writer, "secrets.seal_plain_mcp_secrets")
                .await?;
        }
        Ok(SealingReport {
            sealed_now,
            already_sealed,
        })
    }
}
