//! The turn seen through `POST /v1/chat/completions`: the OpenAI request's messages → the turn's
//! history ([`request`]). Encoding the turn's events as a completion is the server's, which speaks
//! HTTP to the client.

pub mod request;

pub use request::{FacadeHistory, facade_history};
