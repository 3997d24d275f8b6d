//! The turn engine: one send's model/tool loop, emitted as AI SDK UI message chunks. It depends on
//! promptgate-core and promptgate-llm only: storage, MCP, tool implementations and transports reach
//! it as parts of a [`TurnPlan`] (the `promptgate-service` crate builds one per send).
//!
//! - [`ui`]: the chunk vocabulary of the UI message stream.
//! - [`message`]: folding chunks into the assistant message that gets stored.
//! - [`history`]: stored or client-sent UI messages back into upstream chat messages.
//! - [`documents`]: the text of attached files, read within bounds off the async workers.
//! - [`engine`]: the loop itself ([`run_turn`]).
//! - [`client_tools`]: tools the client runs, and the steps kept across a hand-off to it.
//! - [`facade`]: an OpenAI chat-completions request's messages as the turn's history.
//! - [`window`]: the newest whole turns of a conversation that fit a context window.
//! - [`trace`]: the request's, the turn's and the model calls' trace spans, and the context work
//!   under them runs in.
//!
//! # Running a turn
//!
//! 1. Rebuild the conversation with [`to_model_messages`] (stored or `useChat` messages) or
//!    [`facade_history`] (an OpenAI request), ending with the new user message.
//! 2. Fill a [`TurnPlan`]: tools with their executors (`promptgate_core::tools::ToolExecutor`), the
//!    step policy, nudge texts, [`TurnHooks`] for a web budget and source registry, and an
//!    [`AnswerRecorder`] where the answer should be kept. An automatic retry of the same turn passes
//!    the same [`RequestBudget`] and [`ToolCache`] so the retry cannot start over.
//! 3. [`run_turn`] returns the events and the outcome. The transport encodes each [`TurnEvent`]
//!    (the service frames them as the UI message stream, the server as an OpenAI completion for
//!    the facade); this crate knows no wire format. Dropping the event stream stops the turn.
//! 4. Await the outcome, which arrives however the turn ended, with its `parts` and
//!    [`TurnOutcome::stored_metadata`].

#![deny(clippy::disallowed_methods)]

mod attachments;
pub mod client_tools;
pub mod documents;
pub mod engine;
pub mod facade;
pub mod harness;
pub mod history;
pub mod message;
mod pdf;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod trace;
pub mod ui;
pub mod window;

pub use client_tools::{ClientToolCall, ClientToolChoice, ClientTools, Handoff, HandoffKeeper};
pub use engine::{
    AnswerRecorder, ApprovalAnswer, CitationReview, EMPTY_ANSWER_TEXT, Gate, NOT_STORED_TEXT, NoHooks,
    Nudges, PendingApproval, RequestBudget, Resume, RunnableTool, SourceRef, StepPolicy, ToolCache,
    TurnHooks, TurnLimits, TurnOutcome, TurnPlan, TurnRun, TurnStatus, TurnStream, run_turn,
    run_turn_in_reader,
};
pub use facade::{FacadeHistory, facade_history};
pub use history::{HistoryOptions, last_user_text, to_model_messages};
pub use message::UiMessageBuilder;
pub use ui::{TurnEvent, UiChunk, UiFinishReason, UiStreamVersion};

/// Errors of the turn crate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TurnError {
    /// A chunk that the AI SDK client would reject at this point of the stream.
    #[error("invalid UI chunk: {0}")]
    InvalidChunk(String),
    /// A client request that cannot be turned into a conversation; the text says why.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The turn failed; the text is safe to show to the user.
    #[error("{0}")]
    Failed(String),
    /// The turn failed because the conversation does not fit the model's context window
    /// (`context_too_long`); the text is safe to show to the user.
    #[error("{0}")]
    ContextTooLong(String),
    /// The turn failed because the provider refused the request as invalid (`request_refused`):
    /// the same request would be refused again. The text is safe to show to the user.
    #[error("{0}")]
    RequestRefused(String),
    /// The provider was rate limiting requests (`provider_rate_limited`) and no fallback answered;
    /// asking again later can succeed, after `retry_after` seconds when the provider said.
    #[error("{message}")]
    ProviderRateLimited {
        message: String,
        retry_after: Option<u64>,
    },
    /// The provider was overloaded (`provider_overloaded`), as with a rate limit.
    #[error("{message}")]
    ProviderOverloaded {
        message: String,
        retry_after: Option<u64>,
    },
}

impl TurnError {
    /// Seconds after which the provider said the same request may succeed.
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            Self::ProviderRateLimited { retry_after, .. } | Self::ProviderOverloaded { retry_after, .. } => {
                *retry_after
            }
            _ => None,
        }
    }
}
