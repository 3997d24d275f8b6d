//! The store's one error type, and how a driver error is classed (missing, conflict, unavailable or
//! ours) for the caller and for the failure metrics.

use promptgate_core::storage::StorageError;
use sqlx::error::ErrorKind;

/// Everything a store call can fail with. The server maps these to HTTP statuses; `Database` keeps the
/// driver's message for logs only and must never reach a client.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("not found")]
    NotFound,
    #[error("conflict: {0}")]
    Conflict(String),
    #[error("read-only: {0}")]
    ReadOnly(String),
    #[error("invalid: {0}")]
    Invalid(String),
    /// The database cannot be reached right now (down, restarting, no connection free in time).
    /// Worth retrying; the message is for logs.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    #[error("database error: {0}")]
    Database(String),
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// What a driver error means for the caller. One classification serves both the error a call returns and
/// the failure metrics ([`crate::observed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ErrorClass {
    NotFound,
    Conflict,
    Unavailable,
    Database,
}

impl ErrorClass {
    pub(crate) fn of(err: &sqlx::Error) -> ErrorClass {
        match err {
            sqlx::Error::RowNotFound => ErrorClass::NotFound,
            sqlx::Error::Database(db) => match db.kind() {
                ErrorKind::UniqueViolation => ErrorClass::Conflict,
                // A dangling reference means the row it points at does not exist (for this user).
                ErrorKind::ForeignKeyViolation => ErrorClass::NotFound,
                _ if db.code().is_some_and(|code| is_unavailable_sqlstate(&code)) => ErrorClass::Unavailable,
                _ => ErrorClass::Database,
            },
            sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::WorkerCrashed => ErrorClass::Unavailable,
            _ => ErrorClass::Database,
        }
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(err: sqlx::Error) -> Self {
        match ErrorClass::of(&err) {
            ErrorClass::NotFound => StoreError::NotFound,
            ErrorClass::Conflict => StoreError::Conflict("already exists".to_owned()),
            ErrorClass::Unavailable => StoreError::Unavailable(err.to_string()),
            ErrorClass::Database => StoreError::Database(err.to_string()),
        }
    }
}

/// Postgres's classes for a lost connection (08) and a server shutting down or starting (57P).
fn is_unavailable_sqlstate(code: &str) -> bool {
    code.starts_with("08") || code.starts_with("57P")
}

/// The degree of detail core's storage traits pass on: a refusal's reason and a missing row, with
/// every other failure kept as text for the log.
impl From<StoreError> for StorageError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::Invalid(reason) => StorageError::Invalid(reason),
            StoreError::NotFound => StorageError::NotFound,
            other => StorageError::Failed(other.to_string()),
        }
    }
}

impl From<sqlx::migrate::MigrateError> for StoreError {
    fn from(err: sqlx::migrate::MigrateError) -> Self {
        StoreError::Database(format!("migration failed: {err}"))
    }
}

impl StoreError {
    /// True when the same call may succeed once the database is back.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, StoreError::Unavailable(_))
    }

    /// A JSON column that does not parse means the database was written by something else.
    pub(crate) fn corrupt(what: &str, err: impl std::fmt::Display) -> Self {
        StoreError::Database(format!("stored {what} is not valid: {err}"))
    }
}
