//! Scale scenarios: what one request costs as a user's data grows, each in a file of its own.

pub mod threads;
