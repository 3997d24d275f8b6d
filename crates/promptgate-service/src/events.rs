//! What a started turn hands its transport: the engine's events, re-exported by name so a transport
//! encodes them (UI message stream, OpenAI chunks) without depending on the engine.

pub use promptgate_turn::TurnError;
pub use promptgate_turn::client_tools::ClientToolCall;
pub use promptgate_turn::engine::{
    CONTEXT_TOO_LONG, EMPTY_ANSWER_TEXT, NOT_STORED_TEXT, PROVIDER_OVERLOADED, PROVIDER_RATE_LIMITED,
    REQUEST_REFUSED,
};
pub use promptgate_turn::ui::{TurnEvent, UiChunk, UiFinishReason, UiStreamVersion};
