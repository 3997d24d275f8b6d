//! Users and their API tokens (tokens are stored hashed; a new one is shown once), and the checks a
//! server makes of its database.

use promptgate_store::{Backend, User, UserTokens};

use crate::{Database, Service, ServiceError};

impl Database {
    /// Creates a user; [`Database::issue_token`] gives it a token.
    pub async fn create_user(&self, name: &str) -> Result<User, ServiceError> {
        Ok(self.store.create_user(name).await?)
    }

    /// The user with `id`, created with `name` when missing.
    pub async fn ensure_user(&self, id: &str, name: &str) -> Result<User, ServiceError> {
        Ok(self.store.ensure_user(id, name).await?)
    }

    /// A new bearer token for the user, returned this once.
    pub async fn issue_token(&self, user_id: &str) -> Result<String, ServiceError> {
        Ok(self.store.issue_token(user_id).await?)
    }

    /// Every user with how many tokens each holds.
    pub async fn users(&self) -> Result<Vec<UserTokens>, ServiceError> {
        Ok(self.store.list_users().await?)
    }

    /// Revokes every token of the user; returns how many there were.
    pub async fn revoke_tokens(&self, user_id: &str) -> Result<u64, ServiceError> {
        Ok(self.store.revoke_tokens(user_id).await?)
    }

    /// Replaces the user's tokens with a new one, returned this once.
    pub async fn rotate_token(&self, user_id: &str) -> Result<String, ServiceError> {
        Ok(self.store.rotate_token(user_id).await?)
    }
}

impl Service {
    /// The accounts on this service's database.
    pub fn accounts(&self) -> Database {
        Database {
            store: self.store.clone(),
        }
    }

    /// The user a bearer token belongs to; `None` when it is unknown or revoked.
    pub async fn user_by_token(&self, token: &str) -> Result<Option<User>, ServiceError> {
        Ok(self.store.user_by_token(token).await?)
    }

    /// Whether the database answers.
    pub async fn ping(&self) -> Result<(), ServiceError> {
        Ok(self.store.ping().await?)
    }

    pub fn backend(&self) -> Backend {
        self.store.backend()
    }

    /// Marks as interrupted the answers left streaming that no live claim covers: their turns'
    /// instance died (a previous run of this one, or another instance past its lease). SQLite
    /// serves one instance, so every claim found there is a previous run's; on Postgres other
    /// instances' live turns are kept. Returns how many answers it marked.
    pub async fn interrupt_unclaimed_answers(&self) -> Result<u64, ServiceError> {
        let only_instance = self.store.backend() == Backend::Sqlite;
        Ok(self.store.interrupt_unclaimed_answers(only_instance).await?)
    }
}
