//! The mcp crate's integration tests, one binary: the hub against in-process rmcp servers and outside
//! peers, failure handling and the outbound address policy.

mod common;
mod failures;
mod hub;
mod peers;
mod ssrf;
