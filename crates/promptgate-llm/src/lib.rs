//! The model side of a turn: an OpenAI-compatible chat-completions client that tolerates the
//! deviations real servers make, and the offline `demo` model. Both implement [`ChatModel`].
//!
//! - [`OpenAiCompatible`] streams from `{base_url}/chat/completions` ([`ProviderConfig`]); one
//!   instance per provider, cloned per model with [`OpenAiCompatible::with_parser_options`] when a
//!   model writes its reasoning in `<think>` tags.
//! - [`Anthropic`] streams from Anthropic's `{base_url}/messages` ([`AnthropicConfig`]), with prompt
//!   caching placed from the request's [`CacheHints`].
//! - [`DemoModel`] needs no network and no key; it makes one real tool call when tools are offered
//!   and answers from the result.
//! - [`tokens`] counts what a request costs in tokens, with OpenAI's encodings where they apply.
//! - [`ChunkParser`] is the pure stream parser behind the client; [`ToolCallAssembler`] turns a
//!   step's events into complete [`ToolCall`]s.
//! - With the `scripted-upstream` feature, [`scripted::ScriptedUpstream`] is an OpenAI-compatible
//!   server on loopback that replays scripted streams, for tests and load runs.
//!
//! Every stream ends with [`StreamEvent::Finished`] (after the last [`StreamEvent::Usage`]) or with
//! an error; dropping it closes the upstream request.

mod anthropic;
mod assembler;
mod connection;
mod demo;
mod endpoint;
pub mod json_text;
mod openai;
mod parser;
mod provider_error;
#[cfg(feature = "scripted-upstream")]
pub mod scripted;
mod sse;
pub mod tokens;
mod transport;
mod types;

pub use anthropic::{
    ANTHROPIC_VERSION, Anthropic, AnthropicConfig, DEFAULT_BASE_URL as ANTHROPIC_BASE_URL,
    DEFAULT_MAX_TOKENS as ANTHROPIC_MAX_TOKENS, ThinkingMode,
};
pub use assembler::ToolCallAssembler;
pub use demo::DemoModel;
pub use endpoint::Timeouts;
pub use openai::{OpenAiCompatible, ProviderConfig};
pub use parser::{ChunkParser, ParserOptions};
pub use types::*;
