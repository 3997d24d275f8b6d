//! API keys as records a user manages (name, expiry, last use) and users as records an admin
//! manages (role, disabled, deleted). A key's secret is stored only as its SHA-256 hash.
//!
//! Every request looks its key up here, so a key revoked or a user disabled on one instance is
//! refused by every instance from its next request on; the only memory is `recent_tokens`, which
//! answers only while the database cannot.

use sqlx::any::AnyRow;

use crate::connect::Store;
use crate::error::{Result, StoreError};
use crate::observed::Observed;
use crate::statement::Sql;
use crate::types::User;
use crate::users::{TOKEN_PREFIX, new_secret, token_hash};
use crate::util::{Cols, check_name, one_row};

/// A key's last use is written at most this often, so a busy key costs one write a minute, not
/// one per request.
pub const LAST_USED_EVERY_MS: i64 = 60_000;
/// The most keys one user may hold.
pub const MAX_KEYS_PER_USER: i64 = 100;

/// An API key as its owner sees it; never its secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKey {
    pub id: String,
    pub name: String,
    /// Epoch milliseconds, as every time below.
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub last_used_at: Option<i64>,
}

/// A key just created, with the secret shown this once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedKey {
    pub key: ApiKey,
    pub secret: String,
}

/// Who a request's key acts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub user: User,
    pub key_id: String,
    pub admin: bool,
}

/// A user as an admin sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub user: User,
    pub admin: bool,
    pub disabled_at: Option<i64>,
    pub keys: i64,
}

const KEY_COLUMNS: &str = "id, name, created_at, expires_at, last_used_at";

fn key_from(row: &AnyRow) -> Result<ApiKey> {
    Ok(ApiKey {
        id: row.text(0)?,
        name: row.text(1)?,
        created_at: row.int(2)?,
        expires_at: row.opt_int(3)?,
        last_used_at: row.opt_int(4)?,
    })
}

fn account_from(row: &AnyRow) -> Result<Account> {
    Ok(Account {
        user: User {
            id: row.text(0)?,
            name: row.text(1)?,
            created_at: row.int(2)?,
        },
        admin: row.text(3)? == "admin",
        disabled_at: row.opt_int(4)?,
        keys: row.int(5)?,
    })
}

fn role(admin: bool) -> &'static str {
    if admin { "admin" } else { "user" }
}

/// Tables keyed by user without a foreign key to `users`; deleting a user empties them by hand.
const UNLINKED_USER_TABLES: &[&str] = &[
    "messages",
    "turn_claims",
    "turn_retry_states",
    "oauth_pending",
    "workspace_files",
    "thread_contexts",
    "client_handoffs",
];

impl Store {
    /// The caller a bearer secret stands for, with its key's expiry: its key is known and not
    /// expired, its user not disabled. Writes the key's last use when the stored one is older than
    /// [`LAST_USED_EVERY_MS`].
    pub(crate) async fn caller_in_store(&self, hash: &str) -> Result<Option<(Caller, Option<i64>)>> {
        let now = self.now_ms();
        let row = "SELECT u.id, u.name, u.created_at, t.id, u.role, t.last_used_at, t.expires_at \
                   FROM api_tokens t JOIN users u ON u.id = t.user_id \
                   WHERE t.token_hash = $1 AND u.disabled_at IS NULL \
                   AND (t.expires_at IS NULL OR t.expires_at > $2)"
            .with_values((hash, now))
            .fetch_optional(&self.pool, "keys.caller")
            .await?;
        let Some(row) = row else { return Ok(None) };
        let caller = Caller {
            user: User {
                id: row.text(0)?,
                name: row.text(1)?,
                created_at: row.int(2)?,
            },
            key_id: row.text(3)?,
            admin: row.text(4)? == "admin",
        };
        if row.opt_int(5)?.is_none_or(|at| at <= now - LAST_USED_EVERY_MS) {
            self.touch_key(&caller.key_id, now).await;
        }
        Ok(Some((caller, row.opt_int(6)?)))
    }

    /// Records a key's use. Instances racing for the same minute write once: the condition holds
    /// for the first only. A failure costs only the time shown, so it is logged, not returned.
    async fn touch_key(&self, key_id: &str, now: i64) {
        let done = "UPDATE api_tokens SET last_used_at = $1 WHERE id = $2 \
                    AND (last_used_at IS NULL OR last_used_at <= $3)"
            .with_values((now, key_id, now - LAST_USED_EVERY_MS))
            .execute(&self.writer, "keys.touch")
            .await;
        if let Err(err) = done {
            tracing::debug!(error = %err, "a key's last use was not recorded");
        }
    }

    /// Creates a key for the user. `expires_at` must lie in the future.
    pub async fn create_key(&self, user_id: &str, name: &str, expires_at: Option<i64>) -> Result<IssuedKey> {
        check_name("key name", name, 200)?;
        let now = self.now_ms();
        if expires_at.is_some_and(|at| at <= now) {
            return Err(StoreError::Invalid("expires_at must lie in the future".into()));
        }
        // It reads before it writes: on SQLite the lock is taken at the start (see `begin_write`).
        let mut tx = self.begin_write().await?;
        let held = "SELECT COUNT(*) FROM api_tokens WHERE user_id = $1"
            .with_values((user_id,))
            .fetch_one(&mut *tx, "keys.create")
            .await?
            .int(0)?;
        if held >= MAX_KEYS_PER_USER {
            return Err(StoreError::Conflict(format!(
                "a user holds at most {MAX_KEYS_PER_USER} keys; delete one first"
            )));
        }
        let secret = new_secret();
        let key = ApiKey {
            id: format!("key_{}", uuid::Uuid::now_v7().simple()),
            name: name.to_owned(),
            created_at: now,
            expires_at,
            last_used_at: None,
        };
        let inserted = "INSERT INTO api_tokens (token_hash, user_id, created_at, id, name, expires_at) \
                        SELECT $1, id, $2, $3, $4, $5 FROM users WHERE id = $6"
            .with_values((token_hash(&secret), now, &key.id, &key.name, expires_at, user_id))
            .execute(&mut *tx, "keys.create")
            .await?;
        one_row(inserted.rows_affected())?;
        tx.commit().observed("transaction.commit").await?;
        debug_assert!(secret.starts_with(TOKEN_PREFIX));
        Ok(IssuedKey { key, secret })
    }

    /// The user's keys, oldest first.
    pub async fn list_keys(&self, user_id: &str) -> Result<Vec<ApiKey>> {
        let rows = sqlx::AssertSqlSafe(format!(
            "SELECT {KEY_COLUMNS} FROM api_tokens WHERE user_id = $1 ORDER BY created_at, id"
        ))
        .with_values((user_id,))
        .fetch_all(&self.pool, "keys.list")
        .await?;
        rows.iter().map(key_from).collect()
    }

    /// Deletes one of the user's keys, and the limits set on it; another user's key is NotFound.
    pub async fn delete_key(&self, user_id: &str, key_id: &str) -> Result<()> {
        let mut tx = self.begin_writing_first().await?;
        let gone = "DELETE FROM api_tokens WHERE user_id = $1 AND id = $2"
            .with_values((user_id, key_id))
            .execute(&mut *tx, "keys.delete")
            .await?;
        one_row(gone.rows_affected())?;
        for table in ["budgets", "budget_spend"] {
            sqlx::AssertSqlSafe(format!(
                "DELETE FROM {table} WHERE scope = 'key' AND subject_id = $1"
            ))
            .with_values((key_id,))
            .execute(&mut *tx, "keys.delete")
            .await?;
        }
        tx.commit().observed("transaction.commit").await?;
        Ok(())
    }

    /// The owner of a key, for an admin naming the key alone.
    pub async fn key_owner(&self, key_id: &str) -> Result<String> {
        "SELECT user_id FROM api_tokens WHERE id = $1"
            .with_values((key_id,))
            .fetch_optional(&self.pool, "keys.owner")
            .await?
            .ok_or(StoreError::NotFound)?
            .text(0)
    }

    /// Every user with role, state and key count, oldest first.
    pub async fn list_accounts(&self) -> Result<Vec<Account>> {
        let rows = "SELECT u.id, u.name, u.created_at, u.role, u.disabled_at, \
                    (SELECT COUNT(*) FROM api_tokens t WHERE t.user_id = u.id) \
                    FROM users u ORDER BY u.created_at, u.id"
            .with_values(())
            .fetch_all(&self.pool, "keys.list_accounts")
            .await?;
        rows.iter().map(account_from).collect()
    }

    /// One user as an admin sees it.
    pub async fn account(&self, user_id: &str) -> Result<Account> {
        let row = "SELECT u.id, u.name, u.created_at, u.role, u.disabled_at, \
                   (SELECT COUNT(*) FROM api_tokens t WHERE t.user_id = u.id) \
                   FROM users u WHERE u.id = $1"
            .with_values((user_id,))
            .fetch_optional(&self.pool, "keys.account")
            .await?
            .ok_or(StoreError::NotFound)?;
        account_from(&row)
    }

    /// Makes the user an admin or takes the role away.
    pub async fn set_admin(&self, user_id: &str, admin: bool) -> Result<()> {
        let done = "UPDATE users SET role = $1 WHERE id = $2"
            .with_values((role(admin), user_id))
            .execute(&self.writer, "keys.set_admin")
            .await?;
        one_row(done.rows_affected())
    }

    /// Disables the user (their keys are refused from the next request on) or enables them again.
    /// Disabling a disabled user keeps the first time.
    pub async fn set_disabled(&self, user_id: &str, disabled: bool) -> Result<()> {
        let done = if disabled {
            "UPDATE users SET disabled_at = COALESCE(disabled_at, $1) WHERE id = $2"
                .with_values((self.now_ms(), user_id))
                .execute(&self.writer, "keys.set_disabled")
                .await?
        } else {
            "UPDATE users SET disabled_at = NULL WHERE id = $1"
                .with_values((user_id,))
                .execute(&self.writer, "keys.set_disabled")
                .await?
        };
        one_row(done.rows_affected())
    }

    /// Deletes the user and everything they keep, at once.
    pub async fn delete_user(&self, user_id: &str) -> Result<()> {
        let mut tx = self.begin_writing_first().await?;
        for table in UNLINKED_USER_TABLES {
            sqlx::AssertSqlSafe(format!("DELETE FROM {table} WHERE user_id = $1"))
                .with_values((user_id,))
                .execute(&mut *tx, "keys.delete_user")
                .await?;
        }
        let gone = "DELETE FROM users WHERE id = $1"
            .with_values((user_id,))
            .execute(&mut *tx, "keys.delete_user")
            .await?;
        one_row(gone.rows_affected())?;
        tx.commit().observed("transaction.commit").await?;
        Ok(())
    }
}
