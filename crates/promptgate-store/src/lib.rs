//! Persistence for promptgate: one repository API over Postgres (production) and SQLite (the embedded
//! default), through sqlx's `Any` driver with portable SQL.
//!
//! Conventions every method follows:
//! - Every row belongs to a user and every query filters by the caller's user id: another user's row
//!   answers [`StoreError::NotFound`] (or is absent from lists), never "forbidden".
//! - Times are epoch milliseconds taken from the system clock inside the store, made strictly
//!   increasing per [`Store`] so that "newest first" holds even within one millisecond, as long as
//!   that keeps them within a second of the wall clock (under a sustained load they repeat instead
//!   of running further ahead, and lists break the tie by id).
//! - Generated ids are UUID v7 strings; thread and message ids may be chosen by the client.
//! - A statement that writes runs on `self.writer` or in a transaction from `begin_write` /
//!   `begin_writing_first` (which take it); `self.pool` is for reads. On a SQLite file the two are
//!   different pools, and a write on the readers' pool still succeeds but waits in SQLite's busy
//!   handler whenever it meets another write (see `connect`).
//!
//! [`Store`] also implements the storage traits of `promptgate_core::storage` (task list, artifacts,
//! chat search, token vault, workspace files), through which the tool executors and the harness
//! workspace use it without depending on this crate; their errors carry [`StoreError`]'s detail only as far as `StorageError` allows.

#![deny(clippy::disallowed_methods)]

mod approvals;
mod artifacts;
mod budgets;
mod connect;
mod context;
mod conversation;
mod error;
mod first_message;
mod handoffs;
mod keys;
mod ledger;
mod listener;
mod mcp;
mod mcp_grants;
mod messages;
mod models;
mod oauth_pending;
mod observed;
mod pages;
mod projects;
mod questions;
mod reach;
mod recent_tokens;
mod responses;
mod search;
mod secrets;
mod settings;
mod setup;
mod skills;
mod spans;
mod statement;
mod tail;
mod tasks;
mod thread_search;
mod turn_claims;
mod types;
mod usage;
mod users;
mod util;
mod workspace;
mod write_waits;

#[cfg(feature = "testing")]
pub mod testing;

pub use approvals::{NewApproval, StoredApproval};
pub use budgets::{
    Budget, BudgetScope, BudgetSpend, BudgetedSubjects, LimitKind, LimitState, MAX_PERIOD_SECS,
};
pub use connect::{Backend, Store};
pub use context::{FIRST_PAGE, ReadFrom};
pub use conversation::{Resolution, ThreadTail, current_conversation, resolve};
pub use error::{Result, StoreError};
pub use handoffs::HandoffLimits;
pub use keys::{Account, ApiKey, Caller, IssuedKey, LAST_USED_EVERY_MS, MAX_KEYS_PER_USER};
pub use ledger::{
    TokenCounts, USAGE_UNFINISHED, UsageGroup, UsageGrouping, UsageKind, UsageQuery, UsageRecord,
};
pub use listener::{APPLICATION_NAME as LISTENER_APPLICATION_NAME, CHANNEL as CHANGES_CHANNEL};
pub use oauth_pending::{OAuthPending, PendingLimits, PendingRefused};
pub use questions::{NewQuestion, QuestionState, StoredQuestion};
pub use responses::MAX_RESPONSE_BYTES;
pub use secrets::SealingReport;
pub use setup::{LISTENED_RECHECK, SQLITE_RECHECK, UserSetup};
pub use spans::StoreCall;
pub use turn_claims::{
    ClaimOutcome, ClaimRequests, ExpiredTurn, FrameBatch, NewTurnClaim, RetryLookup, RetrySave, RunningTurn,
    TURNS_CHANNEL, TurnSignal,
};
pub use types::*;
pub use workspace::MAX_WORKSPACE_FILE_BYTES;
pub use write_waits::WriteWaits;

/// The owner under which seeded system models are stored. Not a valid user id, so it cannot collide.
pub const SYSTEM_OWNER: &str = "~system";
