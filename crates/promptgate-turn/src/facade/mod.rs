//! The turn seen through `POST /v1/chat/completions`.
//!
//! - [`request`]: the OpenAI request's messages → the turn's history.
//! - [`response`]: the turn's events → one clean completion, streamed or whole.

pub mod request;
pub mod response;

pub use request::{FacadeHistory, facade_history};
pub use response::{CompletionChunks, CompletionIdentity, CompletionResponse};
