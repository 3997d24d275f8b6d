//! The older part of long threads, held between sends on this instance.
//!
//! A send on a long thread needs hundreds of messages below the newest page, and reading and
//! converting them again for every send cost more than everything else a send does. A message is
//! rewritten only while its answer streams or while a tool call in it waits for an approval (a
//! Stop denies the calls of an approval that expired, however far back); every other message is
//! settled for good, so what one send read of them can serve the next. What is held ends below the
//! newest question the send read (a regenerate or a retry answers that question again, so it and
//! what follows it are always read from the store), and the next send's first read takes only the
//! newest held message and what is newer ([`HeldHistories::newest`]); the store reads the newest
//! page instead when that message is not there as it was. A send joins what is held to what it
//! read, with the newest held message among it to prove that the thread is the same one (a thread
//! deleted and made again under its id has other message ids); had the thread moved on past that
//! first read, the messages in between are read first.
//!
//! The held messages are shared (`Arc`) with the sends that join them, not copied into each: a
//! send on a long thread takes hundreds of them.
//!
//! Held bytes are bounded per instance (`[context] held_history_mib`); the threads used least
//! recently go first. Nothing held is needed for correctness: a miss reads the store as before.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use promptgate_llm::tokens::Tokenizer;
use promptgate_store::{Message, MessageStatus, Store, StoreCall, ThreadTail};

use super::read::{Costed, MAX_PAGE};
use crate::ServiceError;

/// How the held costs were priced; costs priced otherwise are not reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PricedBy {
    pub tokenizer: Tokenizer,
    pub images: bool,
}

/// One held message (shared with the sends that join it: none copies it) and, where the send
/// priced it, its cost.
struct HeldMessage {
    message: Arc<Message>,
    cost: Option<Costed>,
}

/// A thread as held: its user, its id, and when it was made (a thread deleted and made again under
/// the same id is another thread, whatever its messages are called).
pub(super) type ThreadKey<'a> = ((&'a str, &'a str), i64);

/// The newest message held of a thread, for the send's first read (see [`HeldHistories::newest`]).
pub(crate) struct HeldNewest {
    pub seq: i64,
    pub id: String,
    /// When the thread was made.
    pub born: i64,
}

/// What is held of one thread: settled messages at consecutive positions, oldest first.
#[derive(Clone)]
pub(super) struct Held {
    born: i64,
    run: Arc<[Arc<HeldMessage>]>,
    /// The run starts at the thread's first message.
    from_start: bool,
    priced_by: PricedBy,
    bytes: usize,
}

/// Held threads of every user on this instance.
pub(crate) struct HeldHistories {
    limit: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    threads: HashMap<(String, String), (Held, u64)>,
    bytes: usize,
    clock: u64,
}

impl HeldHistories {
    /// Holds at most `limit` bytes (an estimate); 0 holds nothing.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit,
            inner: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What is held of the thread, or `Err` when what is held is of an earlier thread of that id.
    fn get(&self, (ids, born): ThreadKey<'_>) -> Option<Result<Held, ()>> {
        if self.limit == 0 {
            return None;
        }
        let mut inner = self.lock();
        inner.clock += 1;
        let now = inner.clock;
        let (held, used) = inner.threads.get_mut(&(ids.0.to_owned(), ids.1.to_owned()))?;
        *used = now;
        Some(if held.born == born {
            Ok(held.clone())
        } else {
            Err(())
        })
    }

    /// The newest message held of the thread `ids`, if any: a send reads only it and what is newer
    /// (the store reads the newest page instead when it is not there as it was).
    pub(crate) fn newest(&self, ids: (&str, &str)) -> Option<HeldNewest> {
        if self.limit == 0 {
            return None;
        }
        let inner = self.lock();
        let (held, _) = inner.threads.get(&(ids.0.to_owned(), ids.1.to_owned()))?;
        let newest = &held.run.last()?.message;
        Some(HeldNewest {
            seq: newest.seq,
            id: newest.id.clone(),
            born: held.born,
        })
    }

    fn forget(&self, ids: (&str, &str)) {
        let mut inner = self.lock();
        if let Some((held, _)) = inner.threads.remove(&(ids.0.to_owned(), ids.1.to_owned())) {
            inner.bytes -= held.bytes;
        }
    }

    fn put(&self, ids: (&str, &str), held: Held) {
        if held.bytes > self.limit || held.run.is_empty() {
            self.forget(ids);
            return;
        }
        let mut inner = self.lock();
        inner.clock += 1;
        let now = inner.clock;
        let bytes = held.bytes;
        if let Some((old, _)) = inner
            .threads
            .insert((ids.0.to_owned(), ids.1.to_owned()), (held, now))
        {
            inner.bytes -= old.bytes;
        }
        inner.bytes += bytes;
        while inner.bytes > self.limit {
            let Some(oldest) = inner
                .threads
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(key, _)| key.clone())
            else {
                break;
            };
            if let Some((gone, _)) = inner.threads.remove(&oldest) {
                inner.bytes -= gone.bytes;
            }
        }
    }

    /// Puts what is held of the thread under `tail`'s messages (which must be the newest page
    /// read, nothing older yet) and its costs into `costs`; returns it, for [`Self::keep`]. Reads
    /// the messages stored between the two; anything that does not join forgets the thread.
    pub(super) async fn join(
        &self,
        store: &Store,
        key: ThreadKey<'_>,
        tail: &mut ThreadTail,
        costs: &mut HashMap<i64, Costed>,
        priced_by: PricedBy,
    ) -> Result<Option<Held>, ServiceError> {
        let Some(oldest) = tail.oldest_seq().filter(|_| !tail.from_start) else {
            return Ok(None);
        };
        let ids = key.0;
        let held = match self.get(key) {
            None => {
                joined("missed");
                return Ok(None);
            }
            Some(Err(())) => {
                joined("stale");
                self.forget(ids);
                return Ok(None);
            }
            Some(Ok(held)) => held,
        };
        let Some(newest) = held.run.last() else {
            joined("missed");
            return Ok(None);
        };
        let newest_seq = newest.message.seq;
        let between = if newest_seq >= oldest {
            // The thread is no longer than it was: the held run must meet the page on a message.
            let same = tail
                .messages
                .iter()
                .find(|m| m.seq == newest_seq)
                .is_some_and(|m| m.id == newest.message.id);
            if !same {
                joined("stale");
                self.forget(ids);
                return Ok(None);
            }
            Vec::new()
        } else {
            let gap = usize::try_from(oldest - newest_seq).unwrap_or(usize::MAX);
            if gap > MAX_PAGE {
                joined("stale");
                self.forget(ids);
                return Ok(None);
            }
            let read = store.thread_messages_before(ids.0, ids.1, oldest, gap, true);
            let mut between = store.traced(StoreCall::LoadOlderHistory, read).await?;
            let joins = between
                .first()
                .is_some_and(|m| m.seq == newest_seq && m.id == newest.message.id);
            if !joins {
                joined("stale");
                self.forget(ids);
                return Ok(None);
            }
            between.remove(0);
            super::read::shared(between)
        };
        let below = between.first().map_or(oldest, |m| m.seq);
        let reuse_costs = held.priced_by == priced_by;
        let mut older = Vec::with_capacity(held.run.len() + between.len());
        for one in held.run.iter().filter(|h| h.message.seq < below) {
            if reuse_costs && let Some(cost) = &one.cost {
                costs.insert(one.message.seq, cost.clone());
            }
            older.push(one.message.clone());
        }
        older.extend(between);
        tail.prepend(older, held.from_start);
        joined("joined");
        Ok(Some(held))
    }

    /// Holds the settled messages `tail` read below position `below` and above `floor` (the
    /// compacted part's end), with their costs, reusing what `joined` held. `below` is the
    /// newest user message the send read (or its first read's oldest message, for a thread read
    /// whole): what the thread holds from there on is read from the store by every send, since a
    /// regenerate or a retry answers that message again.
    pub(super) fn keep(
        &self,
        (ids, born): ThreadKey<'_>,
        tail: &ThreadTail,
        costs: &HashMap<i64, Costed>,
        (below, floor): (i64, i64),
        priced_by: PricedBy,
        joined: Option<Held>,
    ) {
        if self.limit == 0 {
            return;
        }
        let older: Vec<&Arc<Message>> = tail
            .messages
            .iter()
            .filter(|m| m.seq > floor && m.seq < below)
            .collect();
        // The consecutive settled run that ends at the newest settled message: messages above it
        // that may still change are read again by the next send, which reads from the run's end.
        let mut end = older.len();
        while end > 0 && may_change(older[end - 1]) {
            end -= 1;
        }
        let mut start = end;
        while start > 0 {
            let m = older[start - 1];
            let apart = start < end && m.seq != older[start].seq - 1;
            if apart || may_change(m) {
                break;
            }
            start -= 1;
        }
        let run = &older[start..end];
        let Some(first) = run.first() else {
            self.forget(ids);
            return;
        };
        let from_start = tail.from_start && start == 0 && first.seq == floor + 1;
        let reusable = joined.filter(|held| held.priced_by == priced_by);
        let mut bytes = 0;
        let kept: Vec<Arc<HeldMessage>> = run
            .iter()
            .map(|&m| {
                let held = reusable
                    .as_ref()
                    .and_then(|held| same_in(held, m))
                    .unwrap_or_else(|| {
                        Arc::new(HeldMessage {
                            message: m.clone(),
                            cost: costs.get(&m.seq).cloned(),
                        })
                    });
                bytes += estimated_bytes(&held);
                held
            })
            .collect();
        self.put(
            ids,
            Held {
                born,
                run: kept.into(),
                from_start,
                priced_by,
                bytes,
            },
        );
    }
}

/// Counts what a send on a thread longer than its first page found held: `joined`, `missed` (nothing
/// held) or `stale` (held, but the thread moved on too far or is another one now).
fn joined(outcome: &'static str) {
    metrics::counter!("promptgate_held_history_total", "outcome" => outcome).increment(1);
}

/// The message may still be rewritten: its answer streams, or a call in it waits for an approval.
fn may_change(m: &Message) -> bool {
    m.status == Some(MessageStatus::Streaming)
        || m.parts.as_array().is_some_and(|parts| {
            parts
                .iter()
                .any(|part| part.get("state").and_then(|s| s.as_str()) == Some("approval-requested"))
        })
}

/// The held copy of `m`, when `held` has it with the same id (its cost may be missing where the
/// send that held it did not price it; then the copy is made anew).
fn same_in(held: &Held, m: &Message) -> Option<Arc<HeldMessage>> {
    let first = held.run.first()?.message.seq;
    let at = usize::try_from(m.seq - first).ok()?;
    let one = held.run.get(at)?;
    (one.message.id == m.id && one.cost.is_some()).then(|| one.clone())
}

/// What a held message takes, roughly: its text (about four bytes a token) twice, as parts and as
/// model messages, and the fixed parts of both.
fn estimated_bytes(held: &HeldMessage) -> usize {
    let tokens = held.cost.as_ref().map_or(256, |c| c.tokens);
    512 + tokens * 8
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn message(seq: i64) -> Message {
        Message {
            id: format!("m{seq}"),
            thread_id: "t".to_owned(),
            role: promptgate_store::Role::User,
            parts: json!([{"type": "text", "text": "hello"}]),
            metadata: json!({}),
            status: None,
            created_at: seq,
            seq,
            edit_of: None,
        }
    }

    fn costed() -> Costed {
        Costed {
            model: Vec::new(),
            tokens: 10,
        }
    }

    const PRICED: PricedBy = PricedBy {
        tokenizer: Tokenizer::Estimate,
        images: false,
    };

    fn tail_of(seqs: std::ops::RangeInclusive<i64>, from_start: bool) -> ThreadTail {
        ThreadTail {
            messages: seqs.map(|seq| Arc::new(message(seq))).collect(),
            from_start,
            context: None,
        }
    }

    fn costs_of(tail: &ThreadTail) -> HashMap<i64, Costed> {
        tail.messages.iter().map(|m| (m.seq, costed())).collect()
    }

    /// Messages 1 to 10 read from the thread's start, the one at index `at` changed by `change`,
    /// kept with the page from `below`: the cache, the seqs of the run it holds, and whether that
    /// run starts the thread.
    fn held_with(
        at: usize,
        change: impl FnOnce(&mut Message),
        below: i64,
    ) -> (HeldHistories, Vec<i64>, bool) {
        let held = HeldHistories::new(1 << 20);
        let mut tail = tail_of(1..=10, true);
        change(Arc::make_mut(&mut tail.messages[at]));
        held.keep((("u", "t"), 1), &tail, &costs_of(&tail), (below, 0), PRICED, None);
        let kept = held.get((("u", "t"), 1)).unwrap().unwrap();
        let seqs = kept.run.iter().map(|h| h.message.seq).collect();
        let from_start = kept.from_start;
        (held, seqs, from_start)
    }

    fn streaming(message: &mut Message) {
        message.status = Some(MessageStatus::Streaming);
    }

    #[test]
    fn the_settled_run_under_the_page_is_held_and_a_streaming_answer_cuts_it() {
        let (_, seqs, from_start) = held_with(3, streaming, 8);
        assert_eq!(seqs, vec![5, 6, 7]);
        assert!(!from_start);
    }

    #[test]
    fn an_answer_streaming_above_the_run_is_left_for_the_next_read() {
        let (held, seqs, from_start) = held_with(8, streaming, 10);
        assert_eq!(seqs, (1..=8).collect::<Vec<_>>());
        assert!(from_start);
        let newest = held.newest(("u", "t")).unwrap();
        assert_eq!((newest.seq, newest.id.as_str(), newest.born), (8, "m8", 1));
    }

    #[test]
    fn a_call_waiting_for_its_approval_cuts_the_run_too() {
        let waiting = |message: &mut Message| {
            message.parts = json!([
                {"type": "tool-bash", "toolCallId": "c1", "state": "approval-requested", "input": {}}
            ]);
        };
        let (_, seqs, _) = held_with(5, waiting, 10);
        assert_eq!(seqs, vec![7, 8, 9]);
    }

    #[test]
    fn the_least_recently_used_thread_goes_when_the_bound_is_passed() {
        let held = HeldHistories::new(3 * (512 + 80));
        let tail = tail_of(1..=3, true);
        held.keep((("u", "a"), 1), &tail, &costs_of(&tail), (3, 0), PRICED, None);
        held.keep((("u", "b"), 1), &tail, &costs_of(&tail), (2, 0), PRICED, None);
        assert!(held.get((("u", "a"), 1)).is_some());
        held.keep((("u", "c"), 1), &tail, &costs_of(&tail), (2, 0), PRICED, None);
        assert!(held.get((("u", "a"), 1)).is_some());
        assert!(held.get((("u", "b"), 1)).is_none());
        assert!(held.get((("u", "c"), 1)).is_some());
    }

    #[test]
    fn a_thread_made_again_under_its_id_is_not_the_one_held() {
        let held = HeldHistories::new(1 << 20);
        let tail = tail_of(1..=5, true);
        held.keep((("u", "t"), 1), &tail, &costs_of(&tail), (5, 0), PRICED, None);
        assert!(held.get((("u", "t"), 2)).unwrap().is_err());
        assert!(held.get((("u", "t"), 1)).unwrap().is_ok());
    }

    #[test]
    fn nothing_is_held_with_a_bound_of_zero() {
        let held = HeldHistories::new(0);
        let tail = tail_of(1..=5, true);
        held.keep((("u", "t"), 1), &tail, &costs_of(&tail), (5, 0), PRICED, None);
        assert!(held.get((("u", "t"), 1)).is_none());
    }
}
