//! The promptgate server: configuration, HTTP routes and the CLI behind the `promptgate` binary.
//!
//! `server → service → {turn, store, mcp, tools, llm, workspace} → core`: the server depends on
//! `promptgate-service` and `promptgate-core` only. It turns its configuration (file and
//! environment) into the service's settings ([`runtime::settings`]), and its routes turn HTTP into
//! calls of the service's use cases and the service's results and errors back into HTTP
//! ([`error`]); the rules about records live in the service.

#![deny(clippy::disallowed_methods)]

pub mod admission;
pub mod api_doc;
pub mod app;
pub mod auth;
mod body_time;
pub mod boundary;
pub mod cli;
pub mod completions_api;
pub mod config;
pub mod deploy;
pub mod documents;
pub mod error;
pub mod extract;
mod facade_stream;
pub mod listen;
pub mod logging;
mod memory;
pub mod messages_api;
pub mod nul;
pub mod observe;
pub mod responses;
pub mod routes;
pub mod runtime;
pub mod secrets;
pub mod sse;
pub mod state;
pub mod telemetry;
mod telemetry_export;
mod telemetry_polls;
pub mod ui;
pub mod ui_stream;
pub mod user_limits;
pub mod users;
mod write_batch;
