//! Trace spans of the store calls a send is made of (the thread's claim, the history window, the
//! user's message, the answer's final save, the budget check, a search of the user's chats), as
//! the OpenTelemetry database conventions describe a client call: `db.system.name`, the query's
//! summary as the span's name, `db.operation.name` and `db.collection.name` where one statement
//! on one table says what the call does. Never a query's text, its parameters or what it read.
//!
//! A span covers one call of the store's API, which may be a few statements (a transaction, a read
//! of several tables), not each round trip: the round trips have their metrics (see `observed`).
//! The spans use the `promptgate::otel` target like the turn's: when the trace export is off the
//! log filter disables their callsite, so a call pays one check and its work runs as it is.

use std::future::Future;

use tracing::Instrument;
use tracing::field::Empty;

use crate::connect::{Backend, Store};
use crate::error::{Result, StoreError};

/// A store call a trace shows, named for what it does in the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreCall {
    /// Taking the thread for a turn, which keeps other instances out of it.
    ClaimTurn,
    /// A send's first read: the thread, its project and its newest messages.
    LoadHistory,
    /// An older page of a long thread's history, for the model's window.
    LoadOlderHistory,
    /// A first send's new thread with its first messages.
    CreateThread,
    /// The user's message (and the answer's opening row) added to the thread.
    AppendMessages,
    /// The answer's final state.
    SaveAnswer,
    /// The answer's final state with its row in the usage ledger, in one transaction.
    SaveAnswerWithUsage,
    /// The limits in force on the request and what their windows have spent.
    CheckBudget,
    /// A full-text search of the user's other chats.
    SearchChats,
}

/// How the conventions describe a call: the query summary, and the operation and collection when
/// one of each says it.
struct Described {
    summary: &'static str,
    operation: Option<&'static str>,
    collection: Option<&'static str>,
}

impl StoreCall {
    fn describe(self) -> Described {
        let (summary, operation, collection) = match self {
            Self::ClaimTurn => ("INSERT turn_claims", Some("INSERT"), Some("turn_claims")),
            Self::LoadHistory => ("SELECT threads messages", Some("SELECT"), None),
            Self::LoadOlderHistory => ("SELECT messages", Some("SELECT"), Some("messages")),
            Self::CreateThread => ("INSERT threads messages", Some("INSERT"), None),
            Self::AppendMessages => ("INSERT messages", Some("INSERT"), Some("messages")),
            Self::SaveAnswer => ("UPDATE messages", Some("UPDATE"), Some("messages")),
            Self::SaveAnswerWithUsage => ("UPDATE messages INSERT usage_ledger", None, None),
            Self::CheckBudget => ("SELECT budgets budget_spend", Some("SELECT"), None),
            Self::SearchChats => ("SELECT messages", Some("SELECT"), Some("messages")),
        };
        Described {
            summary,
            operation,
            collection,
        }
    }
}

impl Backend {
    /// The database's name in `db.system.name`.
    fn system_name(self) -> &'static str {
        match self {
            Backend::Postgres => "postgresql",
            Backend::Sqlite => "sqlite",
        }
    }
}

impl Store {
    /// Runs `work`, one call of this store's API, in a client span describing `call` when traces
    /// are exported; a failure of the database (not an answer such as "not found") marks it.
    pub async fn traced<T>(&self, call: StoreCall, work: impl Future<Output = Result<T>>) -> Result<T> {
        let span = self.span(call);
        if span.is_disabled() {
            return work.await;
        }
        let result = work.instrument(span.clone()).await;
        if let Err(err) = &result
            && let Some(kind) = failure(err)
        {
            span.record("error.type", kind);
            span.record("otel.status_code", "error");
        }
        result
    }

    fn span(&self, call: StoreCall) -> tracing::Span {
        let described = call.describe();
        tracing::info_span!(
            target: "promptgate::otel",
            "db",
            otel.name = described.summary,
            otel.kind = "client",
            "db.system.name" = self.backend().system_name(),
            "db.query.summary" = described.summary,
            "db.operation.name" = described.operation,
            "db.collection.name" = described.collection,
            "error.type" = Empty,
            otel.status_code = Empty,
        )
    }
}

/// What `error.type` says of a failed call; `None` for the store's answers (missing, taken,
/// refused input), which are not failures of the database.
fn failure(err: &StoreError) -> Option<&'static str> {
    match err {
        StoreError::Unavailable(_) => Some("unavailable"),
        StoreError::Database(_) => Some("database"),
        StoreError::NotFound | StoreError::Conflict(_) | StoreError::ReadOnly(_) | StoreError::Invalid(_) => {
            None
        }
    }
}
