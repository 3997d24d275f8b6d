//! The turn seen through the OpenAI-compatible facades: a chat-completions request's messages
//! ([`request`]) and a Responses request's input items ([`items`]) → the turn's history. Encoding the
//! turn's events for a client is the server's, which speaks HTTP to it.

pub mod items;
pub mod request;

pub use items::{check_call_results, responses_history};
pub use request::{FacadeHistory, facade_history};
