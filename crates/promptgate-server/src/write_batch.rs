//! When a response's later writes wait one turn of the scheduler, so that frames that are about to
//! be produced leave in the same system call.
//!
//! A streamed answer is produced a frame at a time: the upstream client's connection task hands over
//! one decoded piece, the connection serving our client turns it into a frame, and hyper flushes as
//! soon as the body has nothing more ready. When the upstream sent a burst, that is one socket write
//! (and one wake-up of the reader on the other end) per frame, the largest cost of an unpaced stream.
//! Reporting a write as "not yet" and having the connection polled again once its worker has run
//! the other ready tasks and read its sockets (the upstream's next frames among them) lets those
//! frames be produced first; hyper keeps the bytes, adds the frames that arrived meanwhile, and
//! writes them together. The wait wakes no other worker (see `listen::wake_once_idle`).
//!
//! The first write after a request was read goes out at once (a JSON answer, a stream's head), so
//! only a stream's later frames can wait, each by one scheduler turn. A wait that gained nothing (a
//! paced stream whose frames come one at a time) makes the next writes go out at once for a while, so
//! paced streams do not pay an extra wake-up per frame. On a busy server one turn can take long, so a
//! write is never held for more than [`HOLD_AT_MOST`] in all.

use std::time::{Duration, Instant};

/// Enough for one system call; waiting longer would only add latency.
const ENOUGH_BYTES: usize = 16 * 1024;
/// Turns one write may wait while each still brings more bytes.
const MAX_WAITS: u8 = 16;
/// The longest a write is held, however many turns that is.
const HOLD_AT_MOST: Duration = Duration::from_millis(1);
/// Writes that go out at once after a wait that gained nothing, at first and at most.
const FIRST_BACKOFF: u8 = 2;
const MAX_BACKOFF: u8 = 64;

/// One connection's write batching.
#[derive(Debug)]
pub(crate) struct WriteBatch {
    /// A request was read and nothing has been written since.
    answer_pending: bool,
    /// The bytes offered when this write last waited, how many times it has, and since when.
    waiting: Option<(usize, u8, Instant)>,
    /// Writes still to let through before waiting again, and the next such count.
    let_through: u8,
    backoff: u8,
}

impl Default for WriteBatch {
    fn default() -> Self {
        Self {
            answer_pending: true,
            waiting: None,
            let_through: 0,
            backoff: FIRST_BACKOFF,
        }
    }
}

impl WriteBatch {
    /// Bytes of a request arrived.
    pub(crate) fn request_read(&mut self) {
        self.answer_pending = true;
    }

    /// Whether a write of `offered` bytes should wait one scheduler turn instead of going out now.
    pub(crate) fn should_wait(&mut self, offered: usize, now: Instant) -> bool {
        // Whether the wait in progress, if any, has brought more bytes.
        let gained = self
            .waiting
            .is_some_and(|(before, waits, _)| offered > before || waits > 1);
        if self.answer_pending || offered >= ENOUGH_BYTES {
            return self.go(gained);
        }
        match self.waiting {
            None if self.let_through > 0 => {
                self.let_through -= 1;
                false
            }
            None => {
                self.waiting = Some((offered, 1, now));
                true
            }
            Some((before, waits, since))
                if offered > before && waits < MAX_WAITS && now.duration_since(since) < HOLD_AT_MOST =>
            {
                self.waiting = Some((offered, waits + 1, since));
                true
            }
            Some(_) => self.go(gained),
        }
    }

    /// The write goes out now; `gained` says whether the wait before it was worth it.
    fn go(&mut self, gained: bool) -> bool {
        if self.waiting.take().is_some() {
            if gained {
                self.backoff = FIRST_BACKOFF;
            } else {
                self.let_through = self.backoff;
                self.backoff = self.backoff.saturating_mul(2).min(MAX_BACKOFF);
            }
        }
        self.answer_pending = false;
        false
    }

    /// The socket took only part of a write, or none of it yet: the rest must follow without waiting.
    pub(crate) fn next_at_once(&mut self) {
        self.let_through = self.let_through.max(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The writes of these tests all come at one instant, unless a test says otherwise.
    static AT: std::sync::LazyLock<Instant> = std::sync::LazyLock::new(Instant::now);

    trait AtOneInstant {
        fn should_wait_now(&mut self, offered: usize) -> bool;
    }

    impl AtOneInstant for WriteBatch {
        fn should_wait_now(&mut self, offered: usize) -> bool {
            self.should_wait(offered, *AT)
        }
    }

    fn answered() -> WriteBatch {
        let mut batch = WriteBatch::default();
        assert!(
            !batch.should_wait_now(300),
            "the first write of an answer goes out at once"
        );
        batch
    }

    #[test]
    fn an_answers_first_write_goes_out_at_once_every_time() {
        let mut batch = answered();
        batch.request_read();
        assert!(!batch.should_wait_now(100));
        batch.request_read();
        assert!(!batch.should_wait_now(100));
    }

    #[test]
    fn later_writes_wait_while_each_turn_brings_more() {
        let mut batch = answered();
        assert!(batch.should_wait_now(100));
        assert!(batch.should_wait_now(200));
        assert!(batch.should_wait_now(300));
        assert!(
            !batch.should_wait_now(300),
            "a turn that brought nothing sends what there is"
        );
        // It was worth it: the next frame waits again.
        assert!(batch.should_wait_now(100));
    }

    #[test]
    fn a_wait_that_gains_nothing_lets_the_next_writes_through() {
        let mut batch = answered();
        assert!(batch.should_wait_now(100));
        assert!(!batch.should_wait_now(100));
        assert!(!batch.should_wait_now(100));
        assert!(!batch.should_wait_now(100));
        assert!(batch.should_wait_now(100), "after the back-off it tries again");
        assert!(!batch.should_wait_now(100));
        // Twice unproductive: twice as many go through before the next try.
        for _ in 0..4 {
            assert!(!batch.should_wait_now(100));
        }
        assert!(batch.should_wait_now(100));
    }

    #[test]
    fn a_full_buffer_or_many_turns_end_the_wait() {
        let mut batch = answered();
        assert!(!batch.should_wait_now(ENOUGH_BYTES));
        let mut offered = 10;
        let mut waits = 0;
        while batch.should_wait_now(offered) {
            waits += 1;
            offered += 10;
        }
        assert_eq!(waits, usize::from(MAX_WAITS));
    }

    #[test]
    fn a_wait_that_filled_a_write_was_worth_it() {
        let mut batch = answered();
        assert!(batch.should_wait_now(100));
        assert!(!batch.should_wait_now(ENOUGH_BYTES), "enough for one system call");
        assert!(batch.should_wait_now(100), "no back-off after a wait that gained");
    }

    #[test]
    fn a_write_is_not_held_longer_than_the_bound_however_much_arrives() {
        let mut batch = answered();
        let start = Instant::now();
        assert!(batch.should_wait(100, start));
        assert!(batch.should_wait(200, start + HOLD_AT_MOST / 2));
        assert!(!batch.should_wait(300, start + HOLD_AT_MOST));
    }

    #[test]
    fn the_rest_of_a_partial_write_goes_out_at_once() {
        let mut batch = answered();
        batch.next_at_once();
        assert!(!batch.should_wait_now(100));
    }
}
