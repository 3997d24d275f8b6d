//! The model side of a turn: an OpenAI-compatible chat-completions client that tolerates the
//! deviations real servers make, and the offline `demo` model. Both implement [`ChatModel`].

mod assembler;
mod demo;
mod openai;
mod parser;
mod provider_error;
#[cfg(feature = "scripted-upstream")]
pub mod scripted;
mod types;

pub use assembler::ToolCallAssembler;
pub use demo::DemoModel;
pub use openai::{OpenAiCompatible, ProviderConfig, Timeouts};
pub use parser::{ChunkParser, ParserOptions};
pub use types::*;
