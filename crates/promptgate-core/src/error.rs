//! The crate's error for input it was handed: tool arguments a model produced and settings an
//! operator wrote. (Failures of the storage traits are the implementor's and have their own type,
//! [`crate::storage::StorageError`].)

/// What went wrong while interpreting outside input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A model called a tool with arguments its schema does not allow. The message is meant to be shown
    /// to the model so it can correct the call.
    #[error("invalid arguments for tool `{tool}`: {reason}")]
    InvalidToolArguments { tool: String, reason: String },
    /// A configuration value outside the accepted set.
    #[error("invalid value {value:?} for setting {setting}: expected {expected}")]
    InvalidSetting {
        setting: &'static str,
        value: String,
        expected: &'static str,
    },
}
