//! Scale scenarios: what one request costs as what a user has stored or configured grows (many
//! threads, long threads, MCP servers, project chats), measured on databases each fills itself
//! rather than under request load; one file per dimension.

pub mod lists;
pub mod mcp;
pub mod threads;

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
