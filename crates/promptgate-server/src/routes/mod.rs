//! HTTP routes, one module per resource.

pub mod admin;
pub mod approvals;
pub mod artifacts;
pub mod chat;
pub mod completions;
pub mod elicitations;
pub mod health;
pub mod integrations;
pub mod keys;
pub mod ledger;
pub mod library;
pub mod mcp_servers;
pub mod messages;
pub mod models;
mod pages;
pub mod prompt;
pub mod responses;
pub mod settings;
pub mod threads;
pub mod usage;
mod validate;

use aide::transform::TransformOperation;

/// The documentation of an operation that needs only its one-line summary, for `get_with` and
/// the other `_with` methods: `get_with(list, summary("Your threads"))`. Operations that also say
/// more (a description, a response) write their own closure.
pub(crate) fn summary(text: &'static str) -> impl FnOnce(TransformOperation<'_>) -> TransformOperation<'_> {
    move |op| op.summary(text)
}
