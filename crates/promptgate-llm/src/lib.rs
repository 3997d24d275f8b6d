//! The model side of a turn: an OpenAI-compatible chat-completions client that tolerates the
//! deviations real servers make, and the offline `demo` model. Both implement [`ChatModel`].

mod types;

pub use types::*;
