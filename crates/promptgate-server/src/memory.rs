//! Giving memory back after a burst.
//!
//! glibc's malloc keeps what a burst of requests freed inside its arenas: the pages stay resident,
//! ready for the next burst, and a server that lived through one burst keeps its peak for good (in
//! the load driver's burst of 500 sends, about 30 MiB). `malloc_trim` hands the free pages back. It
//! walks every arena under its lock, so it runs only once the server is quiet (no request in
//! progress, and none started for a whole [`TICK`]) after something ended (requests or
//! connections), and at most every [`MIN_GAP`]. A busy server often has no request in progress
//! for an instant; a trim then would stall the requests right behind it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How often the server looks whether it went quiet.
const TICK: Duration = Duration::from_secs(1);
/// The shortest time between two trims, so a server that is busy in bursts trims rarely.
const MIN_GAP: Duration = Duration::from_secs(5);

/// Requests in progress, and how many requests have started and how many requests and
/// connections have ended so far.
#[derive(Debug, Default)]
pub struct Activity {
    in_progress: AtomicUsize,
    started: AtomicU64,
    ended: AtomicU64,
}

impl Activity {
    pub(crate) fn request_started(&self) {
        self.in_progress.fetch_add(1, Ordering::AcqRel);
        self.started.fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn request_ended(&self) {
        self.in_progress.fetch_sub(1, Ordering::AcqRel);
        self.ended.fetch_add(1, Ordering::AcqRel);
    }

    /// A connection closed, or gave back its buffers while keeping its socket (parked).
    pub(crate) fn connection_released(&self) {
        self.ended.fetch_add(1, Ordering::AcqRel);
    }

    fn reading(&self) -> Reading {
        Reading {
            idle: self.in_progress.load(Ordering::Acquire) == 0,
            started: self.started.load(Ordering::Acquire),
            ended: self.ended.load(Ordering::Acquire),
        }
    }
}

/// What [`Activity`] says at one look.
#[derive(Debug, Clone, Copy)]
struct Reading {
    idle: bool,
    started: u64,
    ended: u64,
}

/// When to trim: once the server is quiet after something ended since the last trim, and not
/// within [`MIN_GAP`] of it. Quiet is a look that finds no request in progress and none started
/// since the previous look.
struct Policy {
    trimmed_at: u64,
    last_trim: Option<Instant>,
    started_at_last_look: u64,
}

impl Policy {
    fn new(first: Reading) -> Self {
        Self {
            trimmed_at: first.ended,
            last_trim: None,
            started_at_last_look: first.started,
        }
    }

    fn trim_now(&mut self, reading: Reading, now: Instant) -> bool {
        let Reading { idle, started, ended } = reading;
        let quiet = idle && started == self.started_at_last_look;
        self.started_at_last_look = started;
        let due = self.last_trim.is_none_or(|at| now.duration_since(at) >= MIN_GAP);
        if ended == self.trimmed_at || !due || !quiet {
            return false;
        }
        self.trimmed_at = ended;
        self.last_trim = Some(now);
        true
    }
}

/// Trims the allocator whenever the server went quiet after something ended, until `stop`.
pub(crate) async fn release_after_bursts(activity: Arc<Activity>, stop: CancellationToken) {
    let mut policy = Policy::new(activity.reading());
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(TICK) => {}
        }
        if policy.trim_now(activity.reading(), Instant::now()) {
            // A trim of a large heap takes milliseconds; it must not hold up the runtime's workers.
            let _ = tokio::task::spawn_blocking(trim).await;
        }
    }
}

/// Returns the allocator's free pages to the system.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    // SAFETY: malloc_trim takes no pointer and touches only glibc's own arenas, under their locks;
    // it may be called from any thread at any time.
    #[expect(unsafe_code, reason = "the one call into glibc: it has no safe binding")]
    let released = unsafe { libc::malloc_trim(0) };
    tracing::debug!(released = released == 1, "allocator trimmed after a burst");
}

/// Other allocators (musl, macOS) are not glibc's; they manage their free pages themselves.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trim_follows_a_burst_once_the_server_is_quiet_and_not_again_until_more_ends() {
        let activity = Activity::default();
        let start = Instant::now();
        let mut policy = Policy::new(activity.reading());
        assert!(!policy.trim_now(activity.reading(), start), "nothing ended yet");

        activity.request_started();
        activity.request_started();
        activity.request_ended();
        assert!(
            !policy.trim_now(activity.reading(), start),
            "a request is still in progress"
        );
        activity.request_ended();
        activity.request_started();
        activity.request_ended();
        assert!(
            !policy.trim_now(activity.reading(), start),
            "a request started since the last look: the server may be busy between looks"
        );
        assert!(policy.trim_now(activity.reading(), start));
        assert!(
            !policy.trim_now(activity.reading(), start + MIN_GAP * 10),
            "nothing ended since"
        );

        activity.connection_released();
        assert!(
            !policy.trim_now(activity.reading(), start + MIN_GAP / 2),
            "too soon after the last trim"
        );
        assert!(policy.trim_now(activity.reading(), start + MIN_GAP));
    }

    /// Under steady load there are instants with no request in progress; none of them is quiet.
    #[test]
    fn a_busy_server_is_not_trimmed_at_an_instant_between_its_requests() {
        let activity = Activity::default();
        let start = Instant::now();
        let mut policy = Policy::new(activity.reading());
        for tick in 1..=30u32 {
            activity.request_started();
            activity.request_ended();
            assert!(
                !policy.trim_now(activity.reading(), start + TICK * tick),
                "tick {tick}: requests came and went since the last look"
            );
        }
        assert!(
            policy.trim_now(activity.reading(), start + TICK * 31),
            "a whole tick without requests is quiet"
        );
    }

    #[tokio::test]
    async fn trimming_runs_on_any_platform_and_the_release_loop_ends_when_told() {
        tokio::task::spawn_blocking(trim).await.unwrap();
        let stop = CancellationToken::new();
        stop.cancel();
        release_after_bursts(Arc::new(Activity::default()), stop).await;
    }
}
