//! The pure heart of promptgate.
//!
//! Nothing in this crate performs I/O, reads the clock or draws randomness: time and identifiers are
//! passed in, so every prompt, toolset and budget decision is reproducible in a test.
//!
//! It is also where two crates that must not depend on each other meet: [`tools::ToolExecutor`] is
//! how the turn engine runs a tool, and the traits of [`storage`] are what the tool executors need
//! from the store (which implements them) and what the store needs from the token sealer.

#![deny(clippy::disallowed_methods)]

pub mod admission;
pub mod approval;
pub mod breaker;
pub mod budget;
pub mod citations;
pub mod compose;
pub mod elicitation;
pub mod error;
pub mod ids;
pub mod pricing;
pub mod prompt;
pub mod request_fields;
pub mod settings;
pub mod skills;
pub mod sources;
pub mod storage;
pub mod tools;

pub use error::Error;
