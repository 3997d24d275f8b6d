//! The turn seen through a facade: a client request's conversation and tools in the engine's terms.
//! The OpenAI chat-completions request's messages → the turn's history ([`request`]), and the tools
//! a client defines, checked the same way for every API ([`tools`]). Encoding the turn's events
//! as each API's response is the server's, which speaks HTTP to the client.

pub mod request;
pub mod tools;

pub use request::{FacadeHistory, facade_history};
pub use tools::{ToolInput, client_tools};
