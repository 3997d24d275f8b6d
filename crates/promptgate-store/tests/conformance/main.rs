//! One suite, two backends: every test here runs against SQLite (a temp file) and Postgres (a fresh
//! database on the cluster from scripts/with-postgres.sh), as `<area>::<test>::sqlite` and
//! `<area>::<test>::postgres`.
// Helpers outside #[test] functions unwrap too: a failed setup step is a failed test.
#![allow(clippy::unwrap_used, clippy::field_reassign_with_default)]

/// Every conformance test runs with the test cipher sealing MCP secrets, as the gateway's store would.
macro_rules! conformance {
    ($($tests:tt)+) => {
        promptgate_store::on_both_backends! { wrap = promptgate_store::testing::with_test_box; $($tests)+ }
    };
}

mod approvals;
mod budgets;
mod common;
mod context;
mod handoffs;
mod keys;
mod ledger;
mod mcp_grants;
mod messages;
mod models;
mod pages;
mod postgres_only;
mod projects;
mod questions;
mod responses;
mod search;
mod secrets;
mod skills;
mod sqlite_only;
mod storage;
mod tail;
mod tasks;
mod thread_search;
mod turn_claims;
mod usage;
mod users;
mod workspace;
