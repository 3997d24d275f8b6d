//! The driver's own HTTP/1.1 on loopback: a lean client and the fixed-answer upstream.

mod chunked;
pub mod client;
mod stamped;
pub mod upstream;

pub use client::{Answer, WireClient, hold_open};
pub use upstream::{BenchUpstream, Pacing};
