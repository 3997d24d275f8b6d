//! A send's view of its thread: the newest whole turns that fit the model's context window, after
//! what stands in for the older part (a summary, or a note that it is left out).
//!
//! How a long thread stays answerable and cheap:
//! - The room for the conversation is the model's window less the system prompt, the tools and a
//!   reserve for the answer, counted with the model's tokenizer ([`promptgate_llm::tokens`]).
//! - The thread is read backwards a page at a time ([`read`]) and only as far as that room, so a
//!   send costs what the model sees, not what the thread holds.
//! - When the conversation outgrows the room, the thread is compacted ([`compact`]): its older part
//!   is summarised by the configured summariser model ([`summarise`]), or left out with a note, and
//!   the result is stored with the thread. The kept part is cut well inside the room, so the next
//!   compaction is many sends away and the cached prompt prefix (system prompt, then the summary,
//!   then the kept turns) stays byte-identical until then.
//! - The thread's stored messages never change; the record says how far it reaches.

mod compact;
mod held;
mod read;
mod summarise;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use promptgate_core::prompt::{Earlier, earlier_block};
use promptgate_core::settings::Model;
use promptgate_core::tools::ToolSpec;
use promptgate_llm::ChatModel;
use promptgate_llm::tokens::{TokenCounter, TokenCounters, Tokenizer};
use promptgate_store::{Message, Role, ThreadContext, ThreadTail};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::{Service, ServiceError};
pub(crate) use held::HeldHistories;
pub(crate) use read::Costed;
use read::Pricing;

/// Tokens of a model's window when its definition names none.
pub const DEFAULT_WINDOW_TOKENS: u64 = 128_000;
/// Tokens kept free for the answer and the turn's own tool steps.
pub const DEFAULT_ANSWER_RESERVE_TOKENS: u64 = 4_096;
/// Share of the room the recent part keeps after a compaction, in percent.
pub const DEFAULT_KEPT_AFTER_COMPACTION: u8 = 50;
/// Longest summary, in tokens.
pub const DEFAULT_SUMMARY_MAX_TOKENS: u64 = 1_024;
/// How long a compacting send waits for its summary.
pub const DEFAULT_SUMMARY_TIMEOUT: Duration = Duration::from_secs(60);
/// Memory for the older part of long threads held between sends, in MiB.
pub const DEFAULT_HELD_HISTORY_MIB: u64 = 64;

/// How sends fit a thread to a model's window (the `[context]` settings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextSettings {
    pub default_window: u64,
    pub answer_reserve: u64,
    pub kept_after_compaction: u8,
    /// The id of the model that writes summaries (a configured model); `None` leaves the older part
    /// out with a note.
    pub summariser: Option<String>,
    pub summary_max_tokens: u64,
    pub summary_timeout: Duration,
    /// Bytes (an estimate) of long threads' older parts held between sends ([`held`]).
    pub held_history_bytes: usize,
}

impl Default for ContextSettings {
    fn default() -> Self {
        Self {
            default_window: DEFAULT_WINDOW_TOKENS,
            answer_reserve: DEFAULT_ANSWER_RESERVE_TOKENS,
            kept_after_compaction: DEFAULT_KEPT_AFTER_COMPACTION,
            summariser: None,
            summary_max_tokens: DEFAULT_SUMMARY_MAX_TOKENS,
            summary_timeout: DEFAULT_SUMMARY_TIMEOUT,
            held_history_bytes: usize::try_from(DEFAULT_HELD_HISTORY_MIB << 20).unwrap_or(usize::MAX),
        }
    }
}

/// The summariser model, resolved when the service starts.
#[derive(Clone)]
pub(crate) struct Summariser {
    pub model: Model,
    pub client: Arc<dyn ChatModel>,
}

/// A model's window and what of it is left for the conversation.
#[derive(Clone)]
pub(crate) struct Budget {
    pub window: usize,
    /// Tokens for the conversation (the block about its older part included).
    pub room: usize,
    /// Tokens the system prompt, the tools and the reserve take.
    pub fixed: usize,
    /// Tokens kept free for the answer.
    pub reserve: usize,
    pub counter: TokenCounter,
}

impl Budget {
    pub fn new(
        settings: &ContextSettings,
        counters: &TokenCounters,
        model: &Model,
        system: &str,
        tools: &[ToolSpec],
    ) -> Self {
        let counter = counters.counter(Tokenizer::for_model(&model.upstream_model));
        let window = window_of(settings, model);
        let reserve = usize_of(settings.answer_reserve).min(window / 4);
        let tools: usize = tools
            .iter()
            .map(|tool| counter.tool(&tool.name, &tool.description, &tool.parameters))
            .sum();
        let fixed = counter.text(system) + tools + reserve;
        Self {
            window,
            room: window.saturating_sub(fixed),
            fixed,
            reserve,
            counter,
        }
    }
}

/// A model's window in tokens.
pub(crate) fn window_of(settings: &ContextSettings, model: &Model) -> usize {
    let declared = model
        .context_window
        .and_then(|w| u64::try_from(w).ok())
        .filter(|w| *w > 0);
    usize_of(declared.unwrap_or(settings.default_window))
}

fn usize_of(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// What a send shows the model of its thread.
pub(crate) struct Window {
    /// The conversation's messages the model sees, in order, ending with the message to answer;
    /// each with its model messages.
    pub messages: Vec<(Arc<Message>, Costed)>,
    /// What stands in for the older part, if any of it is left out.
    pub earlier: Option<ThreadContext>,
    /// Whether this send compacted the thread (its cached prefix starts anew).
    pub compacted: bool,
    /// A compaction is due but was not made (a preview makes none).
    pub compaction_due: bool,
}

impl Window {
    /// Nothing of a thread (a completion has none).
    pub fn empty() -> Self {
        Self {
            messages: Vec::new(),
            earlier: None,
            compacted: false,
            compaction_due: false,
        }
    }

    /// The system prompt's block about the older part.
    pub fn earlier_block(&self) -> Option<String> {
        self.earlier
            .as_ref()
            .map(|record| earlier_block(&earlier_of(record)))
    }

    /// Tokens of the kept messages.
    pub fn message_tokens(&self) -> usize {
        self.messages.iter().map(|(_, costed)| costed.tokens).sum()
    }
}

fn earlier_of(record: &ThreadContext) -> Earlier<'_> {
    Earlier {
        covered: u64::try_from(record.covered).unwrap_or(0),
        summarised: u64::try_from(record.summarised).unwrap_or(0),
        summary: record.summary.as_deref(),
    }
}

// What a send of a thread showed its model: its answer's metadata (`metadata`) and the preview's
// `context` (the API's `PreviewContext`, whose descriptions the docs below are) are made from it.
/// How much of the thread the model would see: the newest turns that fit its context window, after
/// a summary of the older part or a note that it is left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename = "PreviewContext")]
pub struct ContextReport {
    /// How tokens are counted for this model: `o200k_base`, `cl100k_base` or `estimate`.
    pub tokenizer: &'static str,
    /// The model's context window, in tokens.
    pub window_tokens: u64,
    /// The prompt as counted: system prompt, tools, the older part's block and the messages.
    pub prompt_tokens: u64,
    /// Messages of the thread sent as they are.
    pub sent_messages: u64,
    /// Older messages the summary stands in for.
    pub summarised_messages: u64,
    /// Older messages the model sees nothing of.
    pub dropped_messages: u64,
    /// The summary of the older part, as the model reads it.
    pub summary: Option<String>,
    /// This send compacted the thread (the answer's metadata; the preview compacts nothing).
    #[serde(skip)]
    pub compacted: bool,
    /// The thread has outgrown the window: the next send compacts it (summarises or leaves out
    /// older turns) before it asks the model.
    pub compaction_due: bool,
}

impl ContextReport {
    /// What `window` shows, with `block` tokens for the older part's block.
    pub(crate) fn of(budget: &Budget, window: &Window, block: usize) -> Self {
        let earlier = window.earlier.as_ref();
        let (summarised, dropped) = match earlier {
            Some(record) => {
                let covered = u64::try_from(record.covered).unwrap_or(0);
                let summarised = if record.summary.is_some() {
                    u64::try_from(record.summarised).unwrap_or(0).min(covered)
                } else {
                    0
                };
                (summarised, covered - summarised)
            }
            None => (0, 0),
        };
        Self {
            tokenizer: budget.counter.tokenizer().name(),
            window_tokens: budget.window as u64,
            prompt_tokens: (budget.fixed - budget.reserve + block + window.message_tokens()) as u64,
            sent_messages: window.messages.len() as u64,
            summarised_messages: summarised,
            dropped_messages: dropped,
            summary: earlier.and_then(|r| r.summary.clone()),
            compacted: window.compacted,
            compaction_due: window.compaction_due,
        }
    }

    /// The answer's `context` metadata (the summary itself is in the preview and the thread's
    /// record, not repeated in every answer).
    pub(crate) fn metadata(&self) -> Map<String, Value> {
        let mut metadata = Map::new();
        metadata.insert(
            "context".to_owned(),
            json!({
                "tokenizer": self.tokenizer,
                "windowTokens": self.window_tokens,
                "promptTokens": self.prompt_tokens,
                "sentMessages": self.sent_messages,
                "summarisedMessages": self.summarised_messages,
                "droppedMessages": self.dropped_messages,
                "compacted": self.compacted,
            }),
        );
        metadata
    }
}

/// Whether a send may compact its thread: a preview only says that the next send will.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Send,
    Preview,
}

impl Service {
    /// What the send shows its model of the thread `ids` (user, thread), made at `born`, read from
    /// `tail` and further back as needed; compacts the thread when the conversation outgrew the room.
    pub(crate) async fn window(
        &self,
        ids: (&str, &str),
        born: i64,
        mut tail: ThreadTail,
        budget: &Budget,
        images: bool,
        mode: Mode,
    ) -> Result<Window, ServiceError> {
        let mut costs = HashMap::new();
        let pricing = Pricing {
            counter: &budget.counter,
            images,
            files: Some((&self.config.documents, ids.0)),
            room: budget.room,
        };
        let priced_by = pricing.priced_by();
        // What is held ends below the newest user message (a thread read whole holds nothing):
        // from there on every send reads the thread from the store (see `held`).
        let below = match tail.from_start {
            true => tail.oldest_seq(),
            false => tail
                .messages
                .iter()
                .rev()
                .find(|m| m.role == Role::User)
                .or(tail.messages.first())
                .map(|m| m.seq),
        };
        let joined = self
            .held
            .join(&self.store, (ids, born), &mut tail, &mut costs, priced_by)
            .await?;
        let reading = read::read(&self.store, ids, &mut tail, &mut costs, &pricing).await?;
        if let Some(below) = below {
            let floor = reading.record.as_ref().map_or(0, |r| r.through_seq);
            self.held
                .keep((ids, born), &tail, &costs, (below, floor), priced_by, joined);
        }
        let record = reading.record.clone().filter(|_| reading.whole);
        let block = record.as_ref().map_or(0, |r| pricing.block_tokens(r));
        let tokens: usize = reading
            .conversation
            .iter()
            .filter_map(|&at| costs.get(&tail.messages[at].seq))
            .map(|c| c.tokens)
            .sum();
        if reading.whole && tokens + block <= budget.room {
            let messages = compact::take(&mut tail, &reading.conversation, &mut costs);
            return Ok(Window {
                messages,
                earlier: record,
                compacted: false,
                compaction_due: false,
            });
        }
        match mode {
            Mode::Send => self.compact(ids, tail, costs, reading, budget).await,
            Mode::Preview => {
                // What the next send keeps as it is; the summary it writes is not known yet.
                let units = compact::units(&tail, &reading.conversation, &costs);
                let keep = compact::kept_start(&units, budget, self.config.context.kept_after_compaction);
                let kept = reading.conversation[keep..].to_vec();
                let messages = compact::take(&mut tail, &kept, &mut costs);
                Ok(Window {
                    messages,
                    earlier: record,
                    compacted: false,
                    compaction_due: true,
                })
            }
        }
    }
}

/// The system prompt with the block about the older part right after its stable half, and the new
/// stable length (the block changes only at a compaction, so it belongs to the cached prefix).
pub(crate) fn with_earlier(
    system: String,
    stable_len: Option<usize>,
    block: Option<&str>,
) -> (String, Option<usize>) {
    let Some(block) = block else {
        return (system, stable_len);
    };
    let at = stable_len
        .filter(|&len| system.is_char_boundary(len))
        .unwrap_or(system.len());
    let (head, rest) = system.split_at(at);
    let mut out = String::with_capacity(system.len() + block.len() + 2);
    out.push_str(head);
    if !head.is_empty() {
        out.push_str("\n\n");
    }
    out.push_str(block);
    let stable = out.len();
    out.push_str(rest);
    (out, stable_len.map(|_| stable))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_joins_the_stable_half_and_the_rest_follows() {
        let system = "Stable rules.\n\nToday is Monday.".to_owned();
        let (out, stable) = with_earlier(system.clone(), Some(13), Some("# Earlier\nSummary."));
        assert_eq!(out, "Stable rules.\n\n# Earlier\nSummary.\n\nToday is Monday.");
        assert_eq!(&out[..stable.unwrap()], "Stable rules.\n\n# Earlier\nSummary.");
        assert_eq!(with_earlier(system.clone(), Some(13), None), (system, Some(13)));
    }
}
