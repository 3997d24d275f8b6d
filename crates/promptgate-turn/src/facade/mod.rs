//! The turn seen through a facade: a client request's conversation and tools in the engine's terms.
//! The OpenAI chat-completions request's messages ([`request`]) and a Responses request's input
//! items ([`items`]) → the turn's history, and the tools a client defines, checked the same way for
//! every API ([`tools`]). Encoding the turn's events as each API's response is the server's, which
//! speaks HTTP to the client.

pub mod items;
pub mod request;
pub mod tools;

pub use items::{check_call_results, responses_history};
pub use request::{FacadeHistory, facade_history};
pub use tools::{ToolInput, client_tools};
