//! Keys a user manages for themselves, and users an admin manages: the use cases behind
//! `/v1/keys` and `/v1/admin/users`. Whether the caller is an admin is decided from the key the
//! request came with, which the store reads on every request.

use promptgate_store::{Account, ApiKey, Budget, BudgetScope, Caller, IssuedKey};

use crate::{Database, Service, ServiceError};

impl Service {
    /// Who a bearer token acts for; `None` when it is unknown, revoked, expired or its user disabled.
    pub async fn caller_by_token(&self, token: &str) -> Result<Option<Caller>, ServiceError> {
        Ok(self.store.caller_by_token(token).await?)
    }

    /// Whether the user is an admin now (not when their key was read).
    pub async fn is_admin(&self, user_id: &str) -> Result<bool, ServiceError> {
        match self.store.account(user_id).await {
            Ok(account) => Ok(account.admin && account.disabled_at.is_none()),
            Err(promptgate_store::StoreError::NotFound) => Ok(false),
            Err(err) => Err(err.into()),
        }
    }

    pub async fn create_key(
        &self,
        user_id: &str,
        name: &str,
        expires_at: Option<i64>,
    ) -> Result<IssuedKey, ServiceError> {
        Ok(self.store.create_key(user_id, name, expires_at).await?)
    }

    pub async fn list_keys(&self, user_id: &str) -> Result<Vec<ApiKey>, ServiceError> {
        Ok(self.store.list_keys(user_id).await?)
    }

    pub async fn delete_key(&self, user_id: &str, key_id: &str) -> Result<(), ServiceError> {
        self.store
            .delete_key(user_id, key_id)
            .await
            .map_err(|err| not_found(err, "key", key_id))
    }

    pub async fn accounts_list(&self) -> Result<Vec<Account>, ServiceError> {
        Ok(self.store.list_accounts().await?)
    }

    pub async fn account(&self, user_id: &str) -> Result<Account, ServiceError> {
        self.store
            .account(user_id)
            .await
            .map_err(|err| not_found(err, "user", user_id))
    }

    /// Creates a user with one key, whose secret is returned this once.
    pub async fn create_account(
        &self,
        name: &str,
        admin: bool,
    ) -> Result<(Account, IssuedKey), ServiceError> {
        let user = self.store.create_user(name).await?;
        if admin {
            self.store.set_admin(&user.id, true).await?;
        }
        let key = self.store.create_key(&user.id, "first key", None).await?;
        Ok((self.store.account(&user.id).await?, key))
    }

    /// Changes a user's role or state; `None` leaves it as it is.
    pub async fn update_account(
        &self,
        user_id: &str,
        admin: Option<bool>,
        disabled: Option<bool>,
    ) -> Result<Account, ServiceError> {
        let missing = |err| not_found(err, "user", user_id);
        if let Some(admin) = admin {
            self.store.set_admin(user_id, admin).await.map_err(missing)?;
        }
        if let Some(disabled) = disabled {
            self.store
                .set_disabled(user_id, disabled)
                .await
                .map_err(missing)?;
        }
        self.account(user_id).await
    }

    /// Deletes the user and everything they keep.
    pub async fn delete_account(&self, user_id: &str) -> Result<(), ServiceError> {
        self.store
            .delete_user(user_id)
            .await
            .map_err(|err| not_found(err, "user", user_id))
    }

    /// The limits on a user, or on a key (of any user).
    pub async fn budget_of(&self, scope: BudgetScope, subject_id: &str) -> Result<Budget, ServiceError> {
        self.owner_of(scope, subject_id).await?;
        Ok(self.store.budget(scope, subject_id).await?)
    }

    /// Sets the limits on a user, or on a key (of any user); all off removes them.
    pub async fn set_budget(
        &self,
        scope: BudgetScope,
        subject_id: &str,
        budget: &Budget,
    ) -> Result<(), ServiceError> {
        let owner = self.owner_of(scope, subject_id).await?;
        Ok(self.store.set_budget(scope, &owner, subject_id, budget).await?)
    }

    async fn owner_of(&self, scope: BudgetScope, subject_id: &str) -> Result<String, ServiceError> {
        match scope {
            BudgetScope::User => Ok(self.account(subject_id).await?.user.id),
            BudgetScope::Key => self
                .store
                .key_owner(subject_id)
                .await
                .map_err(|err| not_found(err, "key", subject_id)),
        }
    }
}

impl Database {
    /// Makes the user an admin (the command line's way to the first one) or takes the role away.
    pub async fn set_admin(&self, user_id: &str, admin: bool) -> Result<(), ServiceError> {
        Ok(self.store.set_admin(user_id, admin).await?)
    }
}

fn not_found(err: promptgate_store::StoreError, what: &'static str, id: &str) -> ServiceError {
    match err {
        promptgate_store::StoreError::NotFound => ServiceError::NotFound {
            what,
            id: id.to_owned(),
        },
        other => other.into(),
    }
}
