//! The workspace crate's integration tests, one binary: the tools through the bashkit shell, the
//! sandbox's limits and persistence on both store backends.

mod common;
mod persist;
mod pool;
mod sandbox;
mod tools;
