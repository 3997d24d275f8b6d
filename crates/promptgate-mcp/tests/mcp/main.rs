//! The mcp crate's integration tests, one binary: the hub against in-process rmcp servers and outside
//! peers, failure handling and the outbound address policy.

mod bounds;
mod common;
mod failures;
mod hub;
mod liveness;
mod peers;
mod ssrf;
