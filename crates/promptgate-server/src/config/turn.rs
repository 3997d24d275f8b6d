//! The `[turn]` section: the bounds of one turn, its claim on its thread and how its answer is saved.

use serde::Deserialize;

use super::millis;

/// Bounds on one turn.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TurnConfig {
    /// Upstream attempts per logical turn (the first answer and empty-response retries).
    pub max_upstream_requests: u32,
    /// A turn's whole life; past it the turn is cut wherever it is.
    pub wall_clock_secs: u64,
    /// The most model steps of one attempt, whatever a model's profile asks for.
    pub max_steps: u32,
    pub tool_timeout_secs: u64,
    /// A `: keep-alive` comment is written when nothing else was sent for this long.
    pub keep_alive_secs: u64,
    /// Turns (sends and facade completions) running at once on this server; past it, 503 `overloaded`.
    pub max_in_flight: usize,
    /// The end of a stream waits this long for its answer to be stored; past it the stream says the
    /// answer is not stored yet (the save goes on in the background).
    pub save_grace_secs: u64,
    /// How long a failed save of an answer keeps being retried while the database is unavailable.
    pub save_retry_secs: u64,
    /// While text streams, the answer so far is stored at most this often (and at every step end).
    pub checkpoint_interval_ms: u64,
    /// `stop`: a client that goes away stops its turn. `continue`: the turn runs to its end and is
    /// stored, and `GET /v1/chat/{id}/stream` resumes it.
    pub on_disconnect: promptgate_service::deployment::OnDisconnect,
    /// A running turn's claim on its thread holds this long without renewal; past it, the instance
    /// running the turn is taken for dead: the thread is freed and the answer marked `interrupted`.
    pub lease_secs: u64,
    /// How often an instance renews the leases of its running turns (well under `lease_secs`).
    pub heartbeat_secs: u64,
    /// How long after a turn ended an automatic retry of it (`retry_of`) is accepted.
    pub retry_window_secs: u64,
    /// Threads whose harness transcript (harness models) this instance keeps in memory.
    pub kept_harnesses: usize,
    /// Bytes of those transcripts kept in memory, all threads together.
    pub kept_harness_bytes: usize,
}

impl Default for TurnConfig {
    // The engine's and the service's own defaults, in the units of the file.
    fn default() -> Self {
        let limits = promptgate_service::deployment::TurnLimits::default();
        Self {
            max_upstream_requests: limits.max_upstream_requests,
            wall_clock_secs: limits.wall_clock.as_secs(),
            max_steps: limits.max_steps,
            tool_timeout_secs: limits.tool_timeout.as_secs(),
            keep_alive_secs: limits.keep_alive.as_secs(),
            max_in_flight: promptgate_service::deployment::DEFAULT_TURNS_IN_FLIGHT,
            save_grace_secs: limits.save_grace.as_secs(),
            save_retry_secs: promptgate_service::deployment::DEFAULT_SAVE_RETRY.as_secs(),
            checkpoint_interval_ms: millis(limits.checkpoint_every),
            on_disconnect: promptgate_service::deployment::OnDisconnect::default(),
            lease_secs: promptgate_service::deployment::DEFAULT_LEASE.as_secs(),
            heartbeat_secs: promptgate_service::deployment::DEFAULT_HEARTBEAT.as_secs(),
            retry_window_secs: promptgate_service::deployment::DEFAULT_RETRY_WINDOW.as_secs(),
            kept_harnesses: promptgate_service::deployment::DEFAULT_KEPT_HARNESSES,
            kept_harness_bytes: promptgate_service::deployment::DEFAULT_KEPT_HARNESS_BYTES,
        }
    }
}
