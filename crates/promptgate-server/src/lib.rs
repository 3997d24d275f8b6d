//! The promptgate server: configuration, HTTP routes and the CLI behind the `promptgate` binary.

pub mod app;
pub mod auth;
pub mod cli;
pub mod config;
pub mod error;
pub mod eval;
pub mod extract;
pub mod routes;
pub mod runtime;
pub mod state;
pub mod ui;
