//! Scale scenarios: what one send costs as what a user has stored or configured grows (MCP servers,
//! project chats). Each measures sends one at a time, at a human-like pace, against a gateway it
//! fills itself; one file per dimension.

pub mod mcp;

use std::time::Duration;

/// How the scale scenarios measure each point of a curve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScaleShape {
    /// Sends measured at each point (after two unmeasured ones).
    pub sends: usize,
    /// Wait between one send's end and the next one's start.
    pub pace: Duration,
    /// The largest project filled, in chats.
    pub max_threads: usize,
}

impl Default for ScaleShape {
    fn default() -> Self {
        Self {
            sends: 20,
            pace: Duration::from_millis(250),
            max_threads: 100_000,
        }
    }
}
