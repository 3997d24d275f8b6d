//! A compaction: when the conversation outgrows the room, its older part is replaced, once, by a
//! summary (or a note that it is left out) stored with the thread. The part kept as it is ends well
//! inside the room (`kept_after_compaction`), so the sends that follow add to it without moving
//! anything before it, until the room is full again.

use std::collections::HashMap;

use promptgate_store::{Role, ThreadContext, ThreadTail};
use promptgate_turn::window::{Unit, keep_from};

use super::read::{Costed, Reading, read_to_floor};
use super::summarise::{Written, summarise};
use super::{Budget, Window};
use crate::{Service, ServiceError};

/// The conversation read so far as fitting units: a user message opens a turn unless it follows
/// another (a resend after a failed turn belongs to the same turn).
pub(super) fn units(tail: &ThreadTail, conversation: &[usize], costs: &HashMap<i64, Costed>) -> Vec<Unit> {
    let mut previous_was_user = false;
    conversation
        .iter()
        .map(|&at| {
            let message = &tail.messages[at];
            let user = message.role == Role::User;
            let opens_turn = user && !previous_was_user;
            previous_was_user = user;
            Unit {
                opens_turn,
                tokens: costs.get(&message.seq).map_or(0, |c| c.tokens),
            }
        })
        .collect()
}

/// Where the kept part starts in `conversation` after a compaction: whole turns within the kept
/// share of the room, and at least one turn left to compact when there is more than one.
pub(super) fn kept_start(units: &[Unit], budget: &Budget, share: u8) -> usize {
    let target = budget.room / 100 * usize::from(share.min(100));
    let keep = keep_from(units, target);
    if keep > 0 {
        return keep;
    }
    // Everything read fits the share, yet not the room with the older part's block: compact the
    // oldest turn so that the block can change.
    units
        .iter()
        .skip(1)
        .position(|u| u.opens_turn)
        .map_or(0, |at| at + 1)
}

impl Service {
    /// Compacts the thread and returns what the send shows: the kept part, after the new record.
    pub(super) async fn compact(
        &self,
        ids: (&str, &str),
        mut tail: ThreadTail,
        mut costs: HashMap<i64, Costed>,
        reading: Reading,
        budget: &Budget,
    ) -> Result<Window, ServiceError> {
        let settings = &self.config.context;
        let units = units(&tail, &reading.conversation, &costs);
        let keep = kept_start(&units, budget, settings.kept_after_compaction);
        let Some(&first_kept) = reading.conversation.get(keep).filter(|_| keep > 0) else {
            // A single turn larger than the room: nothing older to compact.
            let messages = take(&mut tail, &reading.conversation, &mut costs);
            return Ok(Window {
                messages,
                earlier: reading.record.filter(|_| reading.whole),
                compacted: false,
                compaction_due: false,
            });
        };
        let kept_from_seq = tail.messages[first_kept].seq;
        let bodies_from = tail.oldest_seq().unwrap_or(0);
        let (conversation, record) = read_to_floor(&self.store, ids, &mut tail, reading.record).await?;
        let split = conversation.partition_point(|&at| tail.messages[at].seq < kept_from_seq);
        let older = &conversation[..split];
        let Some(&last_older) = older.last() else {
            let messages = take(&mut tail, &conversation, &mut costs);
            return Ok(Window {
                messages,
                earlier: record,
                compacted: false,
                compaction_due: false,
            });
        };
        let through_seq = tail.messages[last_older].seq;
        let before = record.as_ref().map_or(0, |r| r.covered);
        let covered = before + i64::try_from(older.len()).unwrap_or(i64::MAX);
        let previous_summary = record.as_ref().and_then(|r| r.summary.as_deref());
        // Messages the summary so far never saw: all a note stood in for, or what it lost.
        let lost_before = match &record {
            Some(r) if r.summary.is_some() => r.covered - r.summarised,
            Some(r) => r.covered,
            None => 0,
        };
        let written = match &self.summariser {
            Some(summariser) => {
                summarise(self, summariser, ids, &tail, older, bodies_from, previous_summary)
                    .await
                    .inspect_err(|reason| {
                        tracing::warn!(thread = %ids.1, %reason, "the summary could not be written; the older part is left out");
                    })
                    .ok()
            }
            None => None,
        };
        let compacted = match written {
            Some(Written { text, seen }) => {
                let unseen = i64::try_from(older.len() - seen).unwrap_or(0);
                ThreadContext {
                    through_seq,
                    covered,
                    summarised: covered - lost_before - unseen,
                    summary: Some(text),
                    created_at: 0,
                }
            }
            // Without a new summary the one so far (if any) still stands for what it covered.
            None => ThreadContext {
                through_seq,
                covered,
                summarised: record
                    .as_ref()
                    .filter(|r| r.summary.is_some())
                    .map_or(0, |r| r.summarised),
                summary: previous_summary.map(str::to_owned),
                created_at: 0,
            },
        };
        if let Err(err) = self.store.save_thread_context(ids.0, ids.1, &compacted).await {
            // The send goes on with it; the next one compacts again.
            tracing::warn!(thread = %ids.1, error = %err, "the thread's compacted part could not be stored");
        }
        let kept = conversation[split..].to_vec();
        let messages = take(&mut tail, &kept, &mut costs);
        Ok(Window {
            messages,
            earlier: Some(compacted),
            compacted: true,
            compaction_due: false,
        })
    }
}

/// The messages at `positions` (with bodies and priced), taken out of the tail.
pub(super) fn take(
    tail: &mut ThreadTail,
    positions: &[usize],
    costs: &mut HashMap<i64, Costed>,
) -> Vec<(std::sync::Arc<promptgate_store::Message>, Costed)> {
    let mut wanted = positions.iter().copied().peekable();
    let messages = std::mem::take(&mut tail.messages);
    messages
        .into_iter()
        .enumerate()
        .filter_map(|(at, message)| {
            wanted.next_if_eq(&at)?;
            let costed = costs.remove(&message.seq)?;
            Some((message, costed))
        })
        .collect()
}
