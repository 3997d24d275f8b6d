//! Scale scenarios: how the gateway's costs grow with what users have stored (many threads, long
//! threads, many MCP servers), measured on filled databases rather than under request load, each in
//! a file of its own.

pub mod lists;
pub mod threads;
