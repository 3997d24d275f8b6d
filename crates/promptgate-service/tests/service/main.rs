//! The service's integration tests, one binary: its rules exercised without HTTP, through the use
//! cases a transport calls, over real SQLite and Postgres databases and a scripted model upstream on
//! loopback. One turn per thread whichever instance is asked; a question sent again or edited; what
//! an automatic retry may carry over, and for how long.

mod claims;
mod common;
mod conversation;
mod failover;
mod ledger;
mod retries;
