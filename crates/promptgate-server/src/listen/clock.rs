//! The watchdog of one connection: which of its limits it broke, if any, while no request is in
//! progress on it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::ConnectionLimits;
use crate::memory::Activity;

/// Which limit a connection broke, or that it may give back its buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Limit {
    /// Idle for `park_after`: it may keep only its socket.
    Park,
    /// Idle for its idle timeout (or, before any request, its first-request timeout).
    Idle,
    HeadTooSlow,
    /// Chosen to make room for a new connection at the cap.
    Evicted,
}

/// What a connection is doing, as eviction ranks it: the first kind goes first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Standing {
    /// Open without a byte of a request: it has shown nothing yet.
    NeverAsked,
    /// Between requests of a keep-alive connection.
    BetweenRequests,
    /// Part of a request head has arrived; a real client sends a head in one go.
    HeadArriving,
}

/// What the watchdog of one connection needs to know, in milliseconds since the connection opened.
pub(super) struct Clock {
    opened: Instant,
    /// Requests whose response has not been fully written.
    busy: AtomicUsize,
    /// Whether any request has started on this connection.
    asked: AtomicBool,
    /// When the connection last became idle.
    idle_since: AtomicU64,
    /// Whether bytes of a new request head have arrived while idle, and when the first did.
    head_started: AtomicBool,
    head_started_at: AtomicU64,
    /// Part of a response hyper wrote is not yet taken by the socket (a slow reader).
    pub(super) unsent: AtomicBool,
    /// Set to ask an idle connection to close and give its slot to a new one.
    evicted: AtomicBool,
    /// Wakes the watchdog when a head starts or an eviction is asked, the changes that can bring
    /// its deadline forward (starting or ending a request only ever moves it later, which it
    /// notices when it wakes).
    changed: Notify,
}

impl Clock {
    pub(super) fn new() -> Self {
        Self {
            opened: Instant::now(),
            busy: AtomicUsize::new(0),
            asked: AtomicBool::new(false),
            idle_since: AtomicU64::new(0),
            head_started: AtomicBool::new(false),
            head_started_at: AtomicU64::new(0),
            unsent: AtomicBool::new(false),
            evicted: AtomicBool::new(false),
            changed: Notify::new(),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn at(&self, ms: u64) -> Instant {
        self.opened + Duration::from_millis(ms)
    }

    pub(super) fn bytes_read(&self) {
        if self.busy.load(Ordering::Acquire) == 0 && !self.head_started.load(Ordering::Acquire) {
            self.head_started_at.store(self.now(), Ordering::Release);
            self.head_started.store(true, Ordering::Release);
            self.changed.notify_one();
        }
    }

    /// Whether no request is in progress on the connection.
    pub(super) fn is_idle(&self) -> bool {
        self.busy.load(Ordering::Acquire) == 0
    }

    /// How this connection ranks for eviction, and since when it has been so; `None` while a
    /// request is in progress or an eviction is already asked.
    pub(super) fn standing(&self) -> Option<(Standing, Instant)> {
        if !self.is_idle() || self.evicted.load(Ordering::Acquire) {
            return None;
        }
        if self.head_started.load(Ordering::Acquire) {
            return Some((
                Standing::HeadArriving,
                self.at(self.head_started_at.load(Ordering::Acquire)),
            ));
        }
        let since = self.at(self.idle_since.load(Ordering::Acquire));
        if self.asked.load(Ordering::Acquire) {
            Some((Standing::BetweenRequests, since))
        } else {
            Some((Standing::NeverAsked, since))
        }
    }

    /// Asks the connection to close if it is still without a request when its watchdog looks.
    pub(super) fn evict(&self) {
        self.evicted.store(true, Ordering::Release);
        self.changed.notify_one();
    }

    /// Whether an eviction asked of this connection is still to happen.
    pub(super) fn eviction_pending(&self) -> bool {
        self.evicted.load(Ordering::Acquire)
    }

    /// Resolves when the connection broke one of `limits` (or, with `park`, may park); pending while
    /// a request runs. An eviction that finds a request in progress is refused: the connection
    /// stays, and whoever asked finds another.
    pub(super) async fn broken(&self, limits: &ConnectionLimits, park: bool) -> Limit {
        loop {
            if let Some(limit) = self.limit_now(limits, park) {
                return limit;
            }
            let deadline = self.next_deadline(limits, park);
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => {},
                () = self.changed.notified() => {},
            }
        }
    }

    /// When the watchdog should look again.
    fn next_deadline(&self, limits: &ConnectionLimits, park: bool) -> Instant {
        if !self.is_idle() {
            // Nothing expires while a request runs; look again later.
            return Instant::now() + limits.idle_timeout;
        }
        if self.head_started.load(Ordering::Acquire) {
            return self.at(self.head_started_at.load(Ordering::Acquire)) + limits.header_read_timeout;
        }
        let (close_at, park_at) = self.idle_deadlines(limits);
        if park { close_at.min(park_at) } else { close_at }
    }

    /// When an idle connection closes, and when it may park.
    fn idle_deadlines(&self, limits: &ConnectionLimits) -> (Instant, Instant) {
        let since = self.at(self.idle_since.load(Ordering::Acquire));
        let idle = if self.asked.load(Ordering::Acquire) {
            limits.idle_timeout
        } else {
            limits.first_request_timeout.min(limits.idle_timeout)
        };
        (since + idle, since + limits.park_after)
    }

    fn limit_now(&self, limits: &ConnectionLimits, park: bool) -> Option<Limit> {
        if !self.is_idle() {
            self.evicted.store(false, Ordering::Release);
            return None;
        }
        if self.evicted.load(Ordering::Acquire) {
            return Some(Limit::Evicted);
        }
        let now = Instant::now();
        if self.head_started.load(Ordering::Acquire) {
            let late =
                now >= self.at(self.head_started_at.load(Ordering::Acquire)) + limits.header_read_timeout;
            return late.then_some(Limit::HeadTooSlow);
        }
        let (close_at, park_at) = self.idle_deadlines(limits);
        if now >= close_at {
            Some(Limit::Idle)
        } else if park && now >= park_at {
            Some(Limit::Park)
        } else {
            None
        }
    }
}

/// Marks a request in progress from the moment its head was parsed until its response body is done,
/// on its connection and across the server.
pub(super) struct Busy(Arc<Clock>, Arc<Activity>);

impl Busy {
    pub(super) fn start(clock: Arc<Clock>, activity: Arc<Activity>) -> Self {
        clock.busy.fetch_add(1, Ordering::AcqRel);
        clock.asked.store(true, Ordering::Release);
        clock.head_started.store(false, Ordering::Release);
        activity.request_started();
        Self(clock, activity)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let clock = &self.0;
        clock.idle_since.store(clock.now(), Ordering::Release);
        clock.busy.fetch_sub(1, Ordering::AcqRel);
        self.1.request_ended();
    }
}
