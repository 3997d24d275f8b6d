//! Reading a thread backwards until what the model can be shown is known: page after page of its
//! newest messages, each page twice as long as the one before (so the work stays linear), until
//! the conversation read so far fills the room, or reaches the thread's start or the record that
//! stands in for its older part. An edit or a regenerate whose effect reaches below what was read
//! makes the reader go further back; one that reaches below the record makes the record void.

use std::collections::HashMap;
use std::sync::Arc;

use promptgate_llm::ChatMessage;
use promptgate_llm::tokens::TokenCounter;
use promptgate_store::{Message, Role, Store, StoreCall, ThreadContext, ThreadTail, resolve};
use promptgate_turn::documents::{DocumentReader, FileTexts};
use promptgate_turn::history::{HistoryOptions, to_model_messages};
use serde_json::{Value, json};

use crate::ServiceError;

/// A stored message as the model sees it, and what it costs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Costed {
    pub model: Vec<ChatMessage>,
    pub tokens: usize,
}

/// Largest page of a backward read.
pub(super) const MAX_PAGE: usize = 1024;
/// Messages converted and counted on the async worker; a larger batch goes to a blocking thread.
const INLINE_BATCH: usize = 32;

/// What a backward read found.
pub(super) struct Reading {
    /// The conversation as far back as it was read and settled: positions in the tail's messages,
    /// oldest first.
    pub conversation: Vec<usize>,
    /// It reaches back to the thread's start, or to the record in force.
    pub whole: bool,
    /// The record, unless what was read makes it void.
    pub record: Option<ThreadContext>,
}

/// Reads `tail` further back until the settled conversation costs more than `room` (less the
/// record's block) or is whole. Costs of the messages it settles land in `costs`, by position.
pub(super) async fn read(
    store: &Store,
    (user, thread): (&str, &str),
    tail: &mut ThreadTail,
    costs: &mut HashMap<i64, Costed>,
    pricing: &Pricing<'_>,
) -> Result<Reading, ServiceError> {
    let mut record = tail.context.clone();
    let mut page = MAX_PAGE.min(promptgate_store::FIRST_PAGE * 2);
    loop {
        let floor = record.as_ref().map_or(0, |r| r.through_seq);
        let start = tail.messages.partition_point(|m| m.seq <= floor);
        let reached = tail.from_start || tail.oldest_seq().is_some_and(|oldest| oldest <= floor + 1);
        let resolution = resolve(&tail.messages[start..], tail.from_start && floor == 0);
        if floor > 0 && reached && resolution.reaches_below {
            // An edit or a regenerate changed the part the record stands in for.
            record = None;
            continue;
        }
        let whole = if floor == 0 { tail.from_start } else { reached };
        let settled_from = if whole { 0 } else { resolution.settled_from };
        let conversation: Vec<usize> = resolution.kept[settled_from..]
            .iter()
            .map(|&at| start + at)
            .collect();
        cost(tail, &conversation, costs, pricing).await?;
        let tokens: usize = conversation
            .iter()
            .filter_map(|&at| costs.get(&tail.messages[at].seq))
            .map(|c| c.tokens)
            .sum();
        let block = record.as_ref().map_or(0, |r| pricing.block_tokens(r));
        if whole || tokens > pricing.room.saturating_sub(block) {
            return Ok(Reading {
                conversation,
                whole,
                record,
            });
        }
        let Some(oldest) = tail.oldest_seq() else {
            return Ok(Reading {
                conversation,
                whole: true,
                record,
            });
        };
        // Above a record the conversation is about a window long (the record moves when it
        // outgrows the room): it is read in one page that stops at the record, not in doubling
        // pages whose last one reads bodies far below it.
        let limit = match floor {
            0 => page,
            _ => usize::try_from(oldest - floor - 1)
                .unwrap_or(MAX_PAGE)
                .clamp(1, MAX_PAGE),
        };
        let older = store.thread_messages_before(user, thread, oldest, limit, true);
        let older = store.traced(StoreCall::LoadOlderHistory, older).await?;
        let from_start = older.len() < limit && floor == 0;
        tail.prepend(shared(older), from_start);
        page = (page * 2).min(MAX_PAGE);
    }
}

/// How messages are priced for one send.
pub(crate) struct Pricing<'a> {
    pub counter: &'a TokenCounter,
    /// The model takes images.
    pub images: bool,
    /// Reads the files of the messages priced, for their owner; without it files are labels.
    pub files: Option<(&'a DocumentReader, &'a str)>,
    /// Tokens for the conversation.
    pub room: usize,
}

impl Pricing<'_> {
    /// What the costs it gives depend on, for reusing them in a later send.
    pub(super) fn priced_by(&self) -> super::held::PricedBy {
        super::held::PricedBy {
            tokenizer: self.counter.tokenizer(),
            images: self.images,
        }
    }

    /// The texts of the files in the messages at `positions`, read off the async workers.
    async fn read_files(&self, messages: &[Arc<Message>], positions: &[usize]) -> FileTexts {
        let Some((reader, owner)) = self.files else {
            return FileTexts::default();
        };
        let asked: Vec<Value> = positions
            .iter()
            .map(|&at| &messages[at])
            .filter(|m| m.role == Role::User)
            .map(|m| json!({"role": "user", "parts": m.parts}))
            .collect();
        reader.read(owner, &asked).await
    }

    pub fn block_tokens(&self, record: &ThreadContext) -> usize {
        let block = promptgate_core::prompt::earlier_block(&super::earlier_of(record));
        self.counter.text(&block) + 2
    }
}

/// The model messages of one stored message.
pub(crate) fn model_messages(message: &Message, options: HistoryOptions<'_>) -> Vec<ChatMessage> {
    let role = match message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    to_model_messages(&[json!({"role": role, "parts": message.parts})], options)
}

/// Converts and counts the messages at `positions` not priced yet; a large batch on a blocking
/// thread, since encoding text is CPU work.
async fn cost(
    tail: &mut ThreadTail,
    positions: &[usize],
    costs: &mut HashMap<i64, Costed>,
    pricing: &Pricing<'_>,
) -> Result<(), ServiceError> {
    let missing: Vec<usize> = positions
        .iter()
        .copied()
        .filter(|&at| !costs.contains_key(&tail.messages[at].seq))
        .collect();
    let files = pricing.read_files(&tail.messages, &missing).await;
    if missing.len() <= INLINE_BATCH {
        let options = HistoryOptions {
            images: pricing.images,
            files: &files,
        };
        costs.extend(price(&tail.messages, &missing, pricing.counter, options));
        return Ok(());
    }
    let messages = std::mem::take(&mut tail.messages);
    let counter = pricing.counter.clone();
    let images = pricing.images;
    let (messages, priced) = tokio::task::spawn_blocking(move || {
        let options = HistoryOptions {
            images,
            files: &files,
        };
        let priced = price(&messages, &missing, &counter, options);
        (messages, priced)
    })
    .await
    .map_err(|err| {
        tracing::error!(error = %err, "pricing the thread's messages failed");
        ServiceError::Internal
    })?;
    tail.messages = messages;
    costs.extend(priced);
    Ok(())
}

fn price(
    messages: &[Arc<Message>],
    positions: &[usize],
    counter: &TokenCounter,
    options: HistoryOptions<'_>,
) -> Vec<(i64, Costed)> {
    positions
        .iter()
        .map(|&at| {
            let model = model_messages(&messages[at], options);
            let tokens = counter.messages(&model);
            (messages[at].seq, Costed { model, tokens })
        })
        .collect()
}

/// Messages read from the store, to go in a tail.
pub(super) fn shared(messages: Vec<Message>) -> Vec<Arc<Message>> {
    messages.into_iter().map(Arc::new).collect()
}

/// Pages of message heads (no bodies) read when the whole older part must be known.
const HEAD_PAGE: usize = 4096;

/// Reads the rest of the thread down to the record (or the thread's start), as heads where
/// nothing was read yet, and returns the whole conversation above the record, with the record
/// unless what was read makes it void. Used by a compaction, which must know how many messages it
/// leaves out.
pub(super) async fn read_to_floor(
    store: &Store,
    (user, thread): (&str, &str),
    tail: &mut ThreadTail,
    mut record: Option<ThreadContext>,
) -> Result<(Vec<usize>, Option<ThreadContext>), ServiceError> {
    loop {
        let floor = record.as_ref().map_or(0, |r| r.through_seq);
        let reached = tail.from_start || tail.oldest_seq().is_some_and(|oldest| oldest <= floor + 1);
        if reached {
            let start = tail.messages.partition_point(|m| m.seq <= floor);
            let resolution = resolve(&tail.messages[start..], tail.from_start && floor == 0);
            if floor > 0 && resolution.reaches_below {
                record = None;
                continue;
            }
            let conversation = resolution.kept.iter().map(|&at| start + at).collect();
            return Ok((conversation, record));
        }
        let Some(oldest) = tail.oldest_seq() else {
            return Ok((Vec::new(), record));
        };
        let limit = HEAD_PAGE.min(usize::try_from(oldest - floor).unwrap_or(HEAD_PAGE));
        let older = store
            .thread_messages_before(user, thread, oldest, limit, false)
            .await?;
        let from_start = older.len() < limit && floor == 0;
        let done = older.is_empty();
        tail.prepend(shared(older), from_start || (done && floor == 0));
        if done && floor > 0 {
            // The record points past what the thread holds: it is void.
            record = None;
        }
    }
}
