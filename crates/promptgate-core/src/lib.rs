//! The pure heart of promptgate.
//!
//! Nothing in this crate performs I/O, reads the clock or draws randomness: time and identifiers are
//! passed in, so every prompt, toolset and budget decision is reproducible in a test.

#![deny(clippy::disallowed_methods)]

pub mod budget;
pub mod citations;
pub mod error;
pub mod plan;
pub mod prompt;
pub mod settings;
pub mod skills;
pub mod sources;
pub mod tools;

pub use error::Error;
