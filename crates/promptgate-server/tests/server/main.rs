//! The server's integration tests, one binary: a real gateway on loopback over real stores, scripted
//! upstreams and MCP servers, the `promptgate` binary itself, and the outside clients (AI SDK, OpenAI,
//! browser) driving it.

mod anthropic_clients;
mod anthropic_turn;
mod architecture;
mod attachment_bomb;
mod binary_cli;
mod browser_app;
mod busy_shell;
mod chat_stream;
mod client_ids;
mod client_tools;
mod common;
mod completions;
mod context_window;
mod eval_cli;
mod eval_scoring;
mod exposure;
mod harness_thread;
mod harness_workspace;
mod integrations_turn;
mod js_clients;
mod list_pages;
mod mcp_bounds;
mod mcp_outbound;
mod mcp_secrets;
mod mcp_turn;
mod messages_api;
mod nothing_lost;
mod openapi_spec;
mod project_chats_turn;
mod prompt_preview;
mod py_clients;
mod regenerate;
mod resources_api;
mod responses;
mod responses_clients;
mod settings_api;
mod storage_quota;
mod turn_deadline;
mod two_instances;
mod ui_stream_versions;
mod upstream_request;
mod web_app_support;
mod web_site;
mod web_turn;
