//! What a facade reads from its request, in the engine's terms, re-exported by name so a transport
//! turns its API's conversation and tools into a [`CompletionRequest`](crate::CompletionRequest)
//! without depending on the engine.

pub use promptgate_llm::json_text::write_str as write_json_str;
pub use promptgate_llm::{ChatMessage, ContentPart, ImageUrl, ToolCall, ToolDefinition, UserContent};
pub use promptgate_turn::client_tools::ClientToolChoice;
pub use promptgate_turn::documents::FileTexts;
pub use promptgate_turn::facade::{
    FacadeHistory, ToolInput, client_tools, facade_history, messages_documents, messages_history,
    messages_tools, responses_history,
};
