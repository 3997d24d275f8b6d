//! The mcp crate's integration tests, one binary: the hub against in-process rmcp servers and outside
//! peers, failure handling, the outbound address policy and OAuth.

mod bounds;
mod common;
mod failures;
mod hub;
mod liveness;
mod oauth;
mod peers;
mod ssrf;
