//! The built-in tool executors against real parts: the SQLite and Postgres stores, a SearXNG-speaking
//! search server and a small web site, both on loopback.
// Helpers outside #[test] functions unwrap too: a failed setup step is a failed test.
#![allow(clippy::unwrap_used, clippy::panic)]

mod artifacts;
mod common;
mod project_chats;
mod skill;
mod tasks;
mod web_tools;
