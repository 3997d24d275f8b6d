//! The turn seen through a facade: a client request's conversation and tools in the engine's terms.
//! Each API's request reads into the same [`FacadeHistory`]: OpenAI chat completions' messages
//! ([`request`]), a Responses request's input items ([`items`]), the Anthropic Messages API's
//! ([`messages`]); the tools a client defines are checked the same way for every API ([`tools`]).
//! Encoding the turn's events as each API's response is the server's, which speaks HTTP to the
//! client.

pub mod items;
pub mod messages;
pub mod request;
pub mod tools;

pub use items::{check_call_results, responses_history};
pub use messages::{messages_documents, messages_history, messages_tools};
pub use request::{FacadeHistory, facade_history};
pub use tools::{ToolInput, client_tools};
