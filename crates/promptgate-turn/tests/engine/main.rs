//! The turn loop, driven by a scripted model.

// Helpers outside `#[test]` functions are test code too.
#![allow(clippy::unwrap_used, clippy::panic)]

mod answers;
mod approvals;
mod citations;
mod client_tools;
mod control;
mod facade;
mod golden;
mod hooks;
mod support;
mod tools;
