//! Integration authorizations between the authorize redirect and the provider's callback, kept in
//! the store so that the callback may land on any instance.

use std::time::Duration;

use crate::connect::Store;
use crate::error::Result;
use crate::observed::Observed;
use crate::statement::Sql;
use crate::util::{Cols, count_of_user, expiry, per_user_cap};

/// Who started an authorization, for which provider, and the PKCE verifier to finish it with.
#[derive(Clone, PartialEq, Eq)]
pub struct OAuthPending {
    pub user_id: String,
    pub provider: String,
    pub code_verifier: String,
    /// What else the callback needs (an MCP server's authorization server and client), kept sealed
    /// with the store's secret box; `None` for the integrations.
    pub details: Option<String>,
}

impl std::fmt::Debug for OAuthPending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthPending")
            .field("user_id", &self.user_id)
            .field("provider", &self.provider)
            .finish_non_exhaustive()
    }
}

/// Why an authorization was not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PendingRefused {
    /// As many authorizations as the server allows are in flight.
    TooMany,
}

/// Bounds on authorizations in flight.
#[derive(Debug, Clone, Copy)]
pub struct PendingLimits {
    pub ttl: Duration,
    /// Starting one more drops the user's oldest, so one account cannot crowd out everyone else.
    pub per_user: usize,
    pub total: usize,
}

impl Store {
    /// Keeps an authorization under `state` until the callback takes it or `limits.ttl` passes.
    pub async fn put_oauth_pending(
        &self,
        state: &str,
        pending: &OAuthPending,
        limits: PendingLimits,
    ) -> Result<std::result::Result<(), PendingRefused>> {
        let now = self.now_ms();
        let mut tx = self.begin_writing_first().await?;
        "DELETE FROM oauth_pending WHERE user_id = $1 AND expires_at <= $2"
            .with_values((&pending.user_id, now))
            .execute(&mut *tx, "oauth_pending.put_oauth_pending")
            .await?;
        let mine = count_of_user(
            &mut *tx,
            "oauth_pending",
            &pending.user_id,
            "oauth_pending.put_oauth_pending",
        )
        .await?;
        let per_user = per_user_cap(limits.per_user);
        if mine >= per_user {
            "DELETE FROM oauth_pending WHERE state IN \
             (SELECT state FROM oauth_pending WHERE user_id = $1 ORDER BY created_at LIMIT $2)"
                .with_values((&pending.user_id, mine - per_user + 1))
                .execute(&mut *tx, "oauth_pending.put_oauth_pending")
                .await?;
        }
        let all = "SELECT COUNT(*) FROM oauth_pending WHERE expires_at > $1"
            .with_values((now,))
            .fetch_one(&mut *tx, "oauth_pending.put_oauth_pending")
            .await?
            .int(0)?;
        if all >= i64::try_from(limits.total).unwrap_or(i64::MAX) {
            return Ok(Err(PendingRefused::TooMany));
        }
        let details = pending
            .details
            .as_deref()
            .map(|d| self.seal_secret(d))
            .transpose()?;
        "INSERT INTO oauth_pending (state, user_id, provider, code_verifier, expires_at, created_at, details) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)".with_values((state, &pending.user_id, &pending.provider, &pending.code_verifier, expiry(now, limits.ttl), now, details)).execute(&mut *tx, "oauth_pending.put_oauth_pending")
        .await?;
        tx.commit().observed("transaction.commit").await?;
        Ok(Ok(()))
    }

    /// The authorization kept under `state`, at most once, and only while it is fresh.
    pub async fn take_oauth_pending(&self, state: &str) -> Result<Option<OAuthPending>> {
        let row = "DELETE FROM oauth_pending WHERE state = $1 \
                   RETURNING user_id, provider, code_verifier, expires_at, details"
            .with_values((state,))
            .fetch_optional(&self.writer, "oauth_pending.take_oauth_pending")
            .await?;
        let Some(row) = row else { return Ok(None) };
        if row.int(3)? <= self.now_ms() {
            return Ok(None);
        }
        Ok(Some(OAuthPending {
            user_id: row.text(0)?,
            provider: row.text(1)?,
            code_verifier: row.text(2)?,
            details: row.opt_text(4)?.map(|d| self.open_secret(&d)).transpose()?,
        }))
    }
}
