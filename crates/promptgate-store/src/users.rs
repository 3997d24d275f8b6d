//! Users and their API tokens: a token is shown once and stored only as its SHA-256 hash.

use sha2::{Digest, Sha256};
use sqlx::any::AnyRow;

use crate::connect::Store;
use crate::error::{Result, StoreError};
use crate::keys::Caller;
use crate::observed::Observed;
use crate::statement::Sql;
use crate::types::{User, UserTokens};
use crate::util::{Cols, check_client_id, check_name, new_id};

pub(crate) const TOKEN_PREFIX: &str = "pg_";
/// "pg_" plus 64 hex digits; anything longer cannot be ours and is not worth hashing.
const MAX_TOKEN_LEN: usize = 128;

pub(crate) fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// A fresh bearer secret: the prefix and 32 random bytes in hex.
pub(crate) fn new_secret() -> String {
    #[expect(
        clippy::disallowed_methods,
        reason = "a secret must come from the system's randomness, never a seed"
    )]
    let secret: [u8; 32] = rand::random();
    format!("{TOKEN_PREFIX}{}", hex::encode(secret))
}

/// The public id of a key issued from the command line.
fn new_key_id() -> String {
    format!("key_{}", uuid::Uuid::now_v7().simple())
}

fn user_from(row: &AnyRow) -> Result<User> {
    Ok(User {
        id: row.text(0)?,
        name: row.text(1)?,
        created_at: row.int(2)?,
    })
}

impl Store {
    pub async fn create_user(&self, name: &str) -> Result<User> {
        check_name("user name", name, 200)?;
        let user = User {
            id: new_id(),
            name: name.to_owned(),
            created_at: self.now_ms(),
        };
        "INSERT INTO users (id, name, created_at) VALUES ($1, $2, $3)"
            .with_values((&user.id, &user.name, user.created_at))
            .execute(&self.writer, "users.create_user")
            .await?;
        Ok(user)
    }

    /// Creates the user with this id unless it exists; either way returns the stored user (an
    /// existing user keeps its name). Used for the fixed user of single-user mode.
    pub async fn ensure_user(&self, id: &str, name: &str) -> Result<User> {
        check_client_id("user", id)?;
        check_name("user name", name, 200)?;
        "INSERT INTO users (id, name, created_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING"
            .with_values((id, name, self.now_ms()))
            .execute(&self.writer, "users.ensure_user")
            .await?;
        let row = "SELECT id, name, created_at FROM users WHERE id = $1"
            .with_values((id,))
            .fetch_one(&self.pool, "users.ensure_user")
            .await?;
        user_from(&row)
    }

    /// Issues a new API token for the user and returns its plaintext; only its SHA-256 is stored, so
    /// this is the one moment it can be shown.
    pub async fn issue_token(&self, user_id: &str) -> Result<String> {
        insert_token(&self.writer, user_id, self.now_ms(), "users.issue_token").await
    }

    /// The user a bearer token belongs to; `None` for any token we did not issue, an expired one,
    /// or one of a disabled user. See [`Store::caller_by_token`].
    pub async fn user_by_token(&self, token: &str) -> Result<Option<User>> {
        Ok(self.caller_by_token(token).await?.map(|caller| caller.user))
    }

    /// Who a bearer token acts for. While the database cannot be reached, a token seen valid
    /// recently is honoured (see `recent_tokens`), without waiting for the database again when it
    /// failed to answer a moment ago (see `reach`).
    pub async fn caller_by_token(&self, token: &str) -> Result<Option<Caller>> {
        if !token.starts_with(TOKEN_PREFIX) || token.len() > MAX_TOKEN_LEN {
            return Ok(None);
        }
        let hash = token_hash(token);
        if self.reach.known_unreachable()
            && let Some(caller) = self.recent_tokens.recall(&hash, self.now_ms())
        {
            return Ok(Some(caller));
        }
        let found = self.caller_in_store(&hash).await;
        self.reach.saw(&found);
        match found {
            Ok(Some((caller, expires_at))) => {
                self.recent_tokens.remember(&hash, &caller, expires_at);
                Ok(Some(caller))
            }
            Ok(None) => {
                self.recent_tokens.forget_hash(&hash);
                Ok(None)
            }
            Err(err) => match self.recent_tokens.recall(&hash, self.now_ms()) {
                Some(caller) if err.is_unavailable() => Ok(Some(caller)),
                _ => Err(err),
            },
        }
    }

    /// Every user, oldest first, with how many tokens each holds.
    pub async fn list_users(&self) -> Result<Vec<UserTokens>> {
        let rows = "SELECT u.id, u.name, u.created_at, \
                    (SELECT COUNT(*) FROM api_tokens t WHERE t.user_id = u.id) \
                    FROM users u ORDER BY u.created_at, u.id"
            .with_values(())
            .fetch_all(&self.pool, "users.list_users")
            .await?;
        rows.iter()
            .map(|row| {
                Ok(UserTokens {
                    user: user_from(row)?,
                    tokens: row.int(3)?,
                })
            })
            .collect()
    }

    /// Deletes every token of the user; returns how many there were. NotFound for an unknown user.
    pub async fn revoke_tokens(&self, user_id: &str) -> Result<u64> {
        // It reads before it writes: on SQLite the lock is taken at the start (see `begin_write`).
        let mut tx = self.begin_write().await?;
        let exists = "SELECT id FROM users WHERE id = $1"
            .with_values((user_id,))
            .fetch_optional(&mut *tx, "users.revoke_tokens")
            .await?;
        if exists.is_none() {
            return Err(StoreError::NotFound);
        }
        forget_key_budgets(&mut tx, user_id).await?;
        let gone = "DELETE FROM api_tokens WHERE user_id = $1"
            .with_values((user_id,))
            .execute(&mut *tx, "users.revoke_tokens")
            .await?;
        tx.commit().observed("transaction.commit").await?;
        Ok(gone.rows_affected())
    }

    /// Replaces every token of the user with one new token, at once: no moment with both or neither.
    pub async fn rotate_token(&self, user_id: &str) -> Result<String> {
        let mut tx = self.begin_writing_first().await?;
        forget_key_budgets(&mut tx, user_id).await?;
        "DELETE FROM api_tokens WHERE user_id = $1"
            .with_values((user_id,))
            .execute(&mut *tx, "users.rotate_token")
            .await?;
        let token = insert_token(&mut *tx, user_id, self.now_ms(), "users.rotate_token").await?;
        tx.commit().observed("transaction.commit").await?;
        Ok(token)
    }
}

/// Stores a new token of `user_id` (its hash) and returns its plaintext; `NotFound` when there is
/// no such user.
async fn insert_token<'e, E>(executor: E, user_id: &str, now: i64, label: &'static str) -> Result<String>
where
    E: sqlx::Executor<'e, Database = sqlx::Any>,
{
    let token = new_secret();
    let inserted = "INSERT INTO api_tokens (token_hash, user_id, created_at, id) \
                    SELECT $1, id, $2, $4 FROM users WHERE id = $3"
        .with_values((token_hash(&token), now, user_id, new_key_id()))
        .execute(executor, label)
        .await?;
    if inserted.rows_affected() == 0 {
        return Err(StoreError::NotFound);
    }
    Ok(token)
}

/// Drops the limits and spending of every key of the user, whose keys are about to go.
async fn forget_key_budgets(tx: &mut sqlx::Transaction<'_, sqlx::Any>, user_id: &str) -> Result<()> {
    for table in ["budgets", "budget_spend"] {
        sqlx::AssertSqlSafe(format!(
            "DELETE FROM {table} WHERE scope = 'key' AND subject_id IN \
             (SELECT id FROM api_tokens WHERE user_id = $1)"
        ))
        .with_values((user_id,))
        .execute(&mut **tx, "users.forget_key_budgets")
        .await?;
    }
    Ok(())
}
