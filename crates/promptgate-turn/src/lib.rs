//! The turn engine: one send's model/tool loop, emitted as AI SDK UI message chunks.
//!
//! - [`ui`]: the chunk vocabulary of the UI message stream.
//! - [`message`]: folding chunks into the assistant message that gets stored.
//! - [`history`]: stored or client-sent UI messages back into upstream chat messages.
//! - [`engine`]: the loop itself ([`run_turn`]).
//! - [`facade`]: the same turn seen as an OpenAI chat completion (request and response).

pub mod engine;
pub mod facade;
pub mod history;
pub mod message;
pub mod ui;

pub use engine::{
    Gate, NoHooks, Nudges, PreparedTool, RequestBudget, SourceRef, StepPolicy, ToolCache, TurnHooks,
    TurnLimits, TurnOutcome, TurnPlan, TurnRun, TurnStatus, TurnStream, VerbRenderer, render_verb, run_turn,
};
pub use facade::{CompletionChunks, CompletionIdentity, CompletionResponse, FacadeHistory, facade_history};
pub use history::{HistoryOptions, last_user_text, to_model_messages};
pub use message::UiMessageBuilder;
pub use ui::{SSE_DONE, TurnEvent, UiChunk, UiFinishReason};

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
}
