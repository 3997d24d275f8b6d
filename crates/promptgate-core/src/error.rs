//! The crate's error for input it was handed: tool arguments a model produced, settings an operator
//! wrote and identifiers a client chose. (Failures of the storage traits are the implementor's and
//! have their own type, [`crate::storage::StorageError`].)

/// What went wrong while interpreting outside input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A model called a tool with arguments its schema does not allow. The message is meant to be shown
    /// to the model so it can correct the call.
    #[error("invalid arguments for tool `{tool}`: {reason}")]
    InvalidToolArguments { tool: String, reason: String },
    /// An identifier a client chose that breaks its kind's rule ([`crate::ids`]).
    #[error("{what} must be {rule}")]
    InvalidId { what: String, rule: String },
    /// A configuration value outside the accepted set.
    #[error("invalid value {value:?} for setting {setting}: expected {expected}")]
    InvalidSetting {
        setting: &'static str,
        value: String,
        expected: &'static str,
    },
}
