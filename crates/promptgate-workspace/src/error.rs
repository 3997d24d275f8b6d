//! Why a workspace operation failed (a path the tree refuses is its own `PathError`, in `tree.rs`).

/// Why a workspace operation failed. Tool-level failures (a missing file, an ambiguous edit) are not
/// errors here: they go back to the model as a failed tool result it can act on.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// The storage behind the workspace refused or failed a load or save.
    #[error(transparent)]
    Store(#[from] promptgate_core::storage::StorageError),
    /// The stored workspace breaks the current limits or holds an unusable path.
    #[error("stored workspace is not usable: {0}")]
    Corrupt(String),
    /// A call named a tool the workspace does not have.
    #[error("{0} is not a workspace tool")]
    UnknownTool(String),
}
