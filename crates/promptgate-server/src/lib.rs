//! The promptgate server: configuration, HTTP routes and the CLI behind the `promptgate` binary.

#![deny(clippy::disallowed_methods)]

/// Every process that links the server (the `promptgate` binary, the load driver's gateway, the tests)
/// allocates through mimalloc: a turn makes thousands of small, short-lived allocations, and
/// glibc's malloc spent about a tenth of the gateway's CPU on them (docs/benchmarks.md). Built
/// without transparent huge pages, which would otherwise add ~15 MiB of resident memory at idle.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod api_doc;
pub mod app;
pub mod auth;
pub mod boundary;
pub mod cli;
pub mod config;
#[cfg(test)]
mod config_keys;
pub mod deploy;
pub mod error;
pub mod eval;
pub mod extract;
pub mod facade;
pub mod listen;
mod memory;
pub mod nul;
pub mod observe;
pub mod routes;
pub mod runtime;
pub mod secrets;
pub mod state;
pub mod ui;
pub mod user_limits;
pub mod users;
