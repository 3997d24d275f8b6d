//! The time limit of a call out that may stop to ask a person (an MCP server's elicitation, a tool
//! waiting on the user's approval or answer): the person's time does not count against the call.
//! Here, below both, because the MCP client and the engine each bound such calls and do not depend
//! on each other.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

/// Awaits `work` for `timeout` of its own time: the deadline moves by whatever `user_time` says
/// was spent waiting for a person. `None` when the time ran out.
pub async fn within<F: Future>(
    timeout: Duration,
    user_time: impl Fn() -> Duration,
    work: F,
) -> Option<F::Output> {
    let started = Instant::now();
    tokio::pin!(work);
    loop {
        let deadline = started + timeout + user_time();
        match tokio::time::timeout_at(deadline, work.as_mut()).await {
            Ok(output) => return Some(output),
            // A person was being asked meanwhile: the deadline moved on.
            Err(_) if started + timeout + user_time() > deadline => {}
            Err(_) => return None,
        }
    }
}
