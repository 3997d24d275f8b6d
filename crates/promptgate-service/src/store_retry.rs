//! Writes that must land once the database is back: a turn's release and the frames a reader on
//! another instance waits for. A few quick tries are not enough for an outage of some seconds (a
//! Postgres restart), and giving up leaves a reader without its stream or a thread held by a claim
//! nobody releases; so these are tried again with a growing pause, within a bound.

use std::future::Future;
use std::time::Duration;

use promptgate_store::StoreError;
use tokio::time::Instant;

/// The first pause after a failed write; it doubles up to [`LONGEST_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const LONGEST_PAUSE: Duration = Duration::from_secs(2);

/// Runs `write` until it succeeds or `bound` has passed since the first try, pausing between tries;
/// the last error when it never succeeded. `what` names the write in the log, once per failure
/// streak and once when it gives up.
pub(crate) async fn until_stored<T, W, F>(
    bound: Duration,
    what: &str,
    turn_id: &str,
    mut write: W,
) -> Result<T, StoreError>
where
    W: FnMut() -> F,
    F: Future<Output = Result<T, StoreError>>,
{
    let deadline = Instant::now() + bound;
    let mut pause = FIRST_PAUSE;
    let mut failures = 0u32;
    loop {
        let err = match write().await {
            Ok(done) => {
                if failures > 0 {
                    tracing::info!(
                        turn = turn_id,
                        failures,
                        "{what}: stored after the store came back"
                    );
                }
                return Ok(done);
            }
            Err(err) => err,
        };
        failures += 1;
        if Instant::now() + pause > deadline {
            tracing::warn!(turn = turn_id, error = %err, failures, "{what}: giving up");
            return Err(err);
        }
        if failures == 1 {
            tracing::warn!(turn = turn_id, error = %err, retry_for_secs = bound.as_secs(), "{what} failed; retrying");
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(LONGEST_PAUSE);
    }
}
