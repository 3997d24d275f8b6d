//! A user's settings and integration state, and the sealed token sets of their integrations (the
//! store is the tools' `TokenVault`).

use async_trait::async_trait;
use promptgate_core::settings::{IntegrationProvider, IntegrationState, IntegrationStatus, UserSettings};
use promptgate_core::storage::{StorageError, TokenVault, VaultKey};

use crate::connect::Store;
use crate::error::{Result, StoreError};
use crate::statement::Sql;
use crate::util::{Cols, check_len, flag, from_json, to_json};

/// Sealed OAuth blobs are small; a bound keeps a confused caller from storing megabytes.
const MAX_SEALED_SECRET: usize = 64 * 1024;
/// User-controlled settings text ends up in every prompt; keep the whole document small.
const MAX_SETTINGS_JSON: usize = 64 * 1024;

impl Store {
    /// The user's settings, or the defaults when none were saved yet.
    pub async fn get_settings(&self, user: &str) -> Result<UserSettings> {
        let row = "SELECT data FROM user_settings WHERE user_id = $1"
            .with_values((user,))
            .fetch_optional(&self.pool, "settings.get_settings")
            .await?;
        match row {
            Some(row) => from_json("settings", &row.text(0)?),
            None => Ok(UserSettings::default()),
        }
    }

    /// Replaces the user's settings. NotFound when the user does not exist.
    pub async fn put_settings(&self, user: &str, s: &UserSettings) -> Result<()> {
        let data = to_json("settings", s)?;
        if data.len() > MAX_SETTINGS_JSON {
            return Err(StoreError::Invalid(format!(
                "settings are larger than {MAX_SETTINGS_JSON} bytes"
            )));
        }
        "INSERT INTO user_settings (user_id, data, updated_at) VALUES ($1, $2, $3) \
         ON CONFLICT (user_id) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at"
            .with_values((user, data, self.now_ms()))
            .execute(&self.writer, "settings.put_settings")
            .await?;
        self.setup_changed(user);
        Ok(())
    }

    /// Connected/enabled state of one provider; both false when never set.
    pub async fn get_integration(&self, user: &str, p: IntegrationProvider) -> Result<IntegrationState> {
        let row = "SELECT connected, enabled FROM integrations WHERE user_id = $1 AND provider = $2"
            .with_values((user, p.as_str()))
            .fetch_optional(&self.pool, "settings.get_integration")
            .await?;
        match row {
            Some(row) => Ok(IntegrationState {
                connected: row.flag(0)?,
                enabled: row.flag(1)?,
            }),
            None => Ok(IntegrationState::default()),
        }
    }

    /// Sets connected/enabled; leaves any stored secret alone.
    pub async fn put_integration(
        &self,
        user: &str,
        p: IntegrationProvider,
        s: IntegrationState,
    ) -> Result<()> {
        "INSERT INTO integrations (user_id, provider, connected, enabled, updated_at) \
         VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (user_id, provider) DO UPDATE SET connected = excluded.connected, \
         enabled = excluded.enabled, updated_at = excluded.updated_at"
            .with_values((
                user,
                p.as_str(),
                flag(s.connected),
                flag(s.enabled),
                self.now_ms(),
            ))
            .execute(&self.writer, "settings.put_integration")
            .await?;
        self.setup_changed(user);
        Ok(())
    }

    /// Both providers plus the do-not-ask flag from the settings.
    pub async fn integration_status(&self, user: &str) -> Result<IntegrationStatus> {
        Ok(self.settings_and_integrations(user).await?.1)
    }

    /// Settings and integration status in one round trip (a send needs both).
    pub(crate) async fn settings_and_integrations(
        &self,
        user: &str,
    ) -> Result<(UserSettings, IntegrationStatus)> {
        let rows = "SELECT provider, connected, enabled, NULL FROM integrations WHERE user_id = $1 \
                    UNION ALL SELECT 'settings', 0, 0, data FROM user_settings WHERE user_id = $1"
            .with_values((user,))
            .fetch_all(&self.pool, "settings.settings_and_integrations")
            .await?;
        let mut settings = UserSettings::default();
        let mut status = IntegrationStatus::default();
        for row in &rows {
            let state = IntegrationState {
                connected: row.flag(1)?,
                enabled: row.flag(2)?,
            };
            match IntegrationProvider::parse(&row.text(0)?) {
                Some(IntegrationProvider::Google) => status.google = state,
                Some(IntegrationProvider::Microsoft) => status.microsoft = state,
                None => {
                    if let Some(data) = row.opt_text(3)? {
                        settings = from_json("settings", &data)?;
                    }
                }
            }
        }
        status.do_not_ask = settings.integrations_do_not_ask;
        Ok((settings, status))
    }

    /// Stores the caller-encrypted OAuth token blob for a provider (replacing any previous one).
    pub async fn put_integration_secret(
        &self,
        user: &str,
        p: IntegrationProvider,
        sealed: &str,
    ) -> Result<()> {
        check_len("sealed secret", sealed, MAX_SEALED_SECRET)?;
        "INSERT INTO integrations (user_id, provider, sealed_secret, updated_at) \
         VALUES ($1, $2, $3, $4) \
         ON CONFLICT (user_id, provider) DO UPDATE SET sealed_secret = excluded.sealed_secret, \
         updated_at = excluded.updated_at"
            .with_values((user, p.as_str(), sealed, self.now_ms()))
            .execute(&self.writer, "settings.put_integration_secret")
            .await?;
        self.setup_changed(user);
        Ok(())
    }

    pub async fn get_integration_secret(&self, user: &str, p: IntegrationProvider) -> Result<Option<String>> {
        let row = "SELECT sealed_secret FROM integrations WHERE user_id = $1 AND provider = $2"
            .with_values((user, p.as_str()))
            .fetch_optional(&self.pool, "settings.get_integration_secret")
            .await?;
        match row {
            Some(row) => row.opt_text(0),
            None => Ok(None),
        }
    }

    /// Forgets the stored secret. Deleting a secret that is not there is not an error.
    pub async fn delete_integration_secret(&self, user: &str, p: IntegrationProvider) -> Result<()> {
        "UPDATE integrations SET sealed_secret = NULL, updated_at = $3 \
         WHERE user_id = $1 AND provider = $2"
            .with_values((user, p.as_str(), self.now_ms()))
            .execute(&self.writer, "settings.delete_integration_secret")
            .await?;
        self.setup_changed(user);
        Ok(())
    }
}

/// The integration tokens' vault is the sealed secret column of `integrations`.
#[async_trait]
impl TokenVault for Store {
    async fn load(&self, key: VaultKey<'_>) -> Result<Option<String>, StorageError> {
        Ok(self.get_integration_secret(key.user_id, key.provider).await?)
    }

    async fn store(&self, key: VaultKey<'_>, sealed: &str) -> Result<(), StorageError> {
        Ok(self
            .put_integration_secret(key.user_id, key.provider, sealed)
            .await?)
    }

    async fn delete(&self, key: VaultKey<'_>) -> Result<(), StorageError> {
        Ok(self.delete_integration_secret(key.user_id, key.provider).await?)
    }
}
