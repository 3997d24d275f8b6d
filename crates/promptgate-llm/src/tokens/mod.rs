//! What a request costs in tokens, before it is sent: with the model's own encoding where it is
//! public (OpenAI's model families, whose BPE encodings are embedded), else with an estimate that
//! errs on the high side. A send fits its history to the model's context window with these counts.
//!
//! Encoding is CPU work (about 20 MB of text a second), so counts are kept by a hash of the text:
//! the history of a thread is counted once and its next send only counts what is new. The
//! encodings are loaded on first use (tens of MiB), so a deployment without OpenAI models never
//! holds them.

mod cache;

use std::sync::{Arc, LazyLock};

use tiktoken_rs::CoreBPE;
use tiktoken_rs::tokenizer::{Tokenizer as Encoding, get_tokenizer};

use crate::{ChatMessage, ContentPart, ToolDefinition, UserContent};
use cache::CountCache;

/// Bytes per token of the estimate. English prose runs at about four bytes a token and code and
/// other scripts at fewer, so three overstates most text: a fitted history errs towards leaving
/// room unused rather than being refused.
const ESTIMATE_BYTES_PER_TOKEN: usize = 3;
/// What a message costs besides its text (role markers and separators of the chat format).
const MESSAGE_OVERHEAD: usize = 4;
/// What an image costs: about the most a provider charges for one (Anthropic: ~1,600 tokens for
/// a full-size image), since the size is not known here.
pub const IMAGE_TOKENS: usize = 1_600;
/// Texts shorter than this are counted afresh each time: hashing them costs about as much.
const CACHED_FROM_BYTES: usize = 64;

static O200K: LazyLock<Option<CoreBPE>> = LazyLock::new(|| tiktoken_rs::o200k_base().ok());
static CL100K: LazyLock<Option<CoreBPE>> = LazyLock::new(|| tiktoken_rs::cl100k_base().ok());

/// How tokens are counted for one model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tokenizer {
    /// OpenAI's `o200k_base` (GPT-4o, 4.1, 5, the o-series, gpt-oss).
    O200k,
    /// OpenAI's `cl100k_base` (GPT-4, GPT-3.5).
    Cl100k,
    /// Every other model: bytes divided by [`ESTIMATE_BYTES_PER_TOKEN`], rounded up.
    Estimate,
}

impl Tokenizer {
    /// The tokenizer of an upstream model name, as an OpenAI-compatible provider names it
    /// (`gpt-4.1-mini`, or with a router's vendor prefix, `openai/gpt-4o`).
    pub fn for_model(upstream_model: &str) -> Self {
        let name = upstream_model.trim();
        let name = name.strip_prefix("openai/").unwrap_or(name);
        match get_tokenizer(name) {
            Some(Encoding::O200kBase | Encoding::O200kHarmony) => Self::O200k,
            Some(Encoding::Cl100kBase) => Self::Cl100k,
            _ => Self::Estimate,
        }
    }

    /// How the inspector names it.
    pub fn name(self) -> &'static str {
        match self {
            Self::O200k => "o200k_base",
            Self::Cl100k => "cl100k_base",
            Self::Estimate => "estimate",
        }
    }

    fn encoding(self) -> Option<&'static CoreBPE> {
        match self {
            Self::O200k => O200K.as_ref(),
            Self::Cl100k => CL100K.as_ref(),
            Self::Estimate => None,
        }
    }

    /// Tokens of `text`, counted afresh.
    pub fn count(self, text: &str) -> usize {
        match self.encoding() {
            Some(bpe) => bpe.encode_ordinary(text).len(),
            None => text.len().div_ceil(ESTIMATE_BYTES_PER_TOKEN),
        }
    }
}

/// Counts tokens for one tokenizer, remembering the counts of longer texts. Cheap to clone; clones
/// share what they remember.
#[derive(Clone)]
pub struct TokenCounter {
    tokenizer: Tokenizer,
    cache: Arc<CountCache>,
}

impl TokenCounter {
    /// A counter with its own memory of counts.
    pub fn new(tokenizer: Tokenizer) -> Self {
        Self::with_cache(tokenizer, Arc::new(CountCache::default()))
    }

    fn with_cache(tokenizer: Tokenizer, cache: Arc<CountCache>) -> Self {
        Self { tokenizer, cache }
    }

    pub fn tokenizer(&self) -> Tokenizer {
        self.tokenizer
    }

    /// Tokens of `text`.
    pub fn text(&self, text: &str) -> usize {
        if self.tokenizer == Tokenizer::Estimate || text.len() < CACHED_FROM_BYTES {
            return self.tokenizer.count(text);
        }
        let key = self.cache.key(self.tokenizer, text);
        if let Some(count) = self.cache.get(key) {
            return count;
        }
        let count = self.tokenizer.count(text);
        self.cache.put(key, count);
        count
    }

    /// Tokens one message costs in a request.
    pub fn message(&self, message: &ChatMessage) -> usize {
        MESSAGE_OVERHEAD
            + match message {
                ChatMessage::System { content } => self.text(content),
                ChatMessage::User { content } => match content {
                    UserContent::Text(text) => self.text(text),
                    UserContent::Parts(parts) => parts
                        .iter()
                        .map(|part| match part {
                            ContentPart::Text { text } => self.text(text),
                            ContentPart::ImageUrl { .. } => IMAGE_TOKENS,
                        })
                        .sum(),
                },
                ChatMessage::Assistant { content, tool_calls } => {
                    content.as_deref().map_or(0, |text| self.text(text))
                        + tool_calls
                            .iter()
                            .map(|call| {
                                MESSAGE_OVERHEAD
                                    + self.text(&call.function.name)
                                    + self.text(&call.function.arguments)
                            })
                            .sum::<usize>()
                }
                ChatMessage::Tool { content, .. } => self.text(content),
            }
    }

    /// Tokens of several messages.
    pub fn messages(&self, messages: &[ChatMessage]) -> usize {
        messages.iter().map(|m| self.message(m)).sum()
    }

    /// Tokens the definitions of the offered tools cost (providers put them in front of the prompt).
    pub fn tools(&self, tools: &[ToolDefinition]) -> usize {
        tools
            .iter()
            .map(|tool| self.tool(&tool.name, &tool.description, &tool.parameters))
            .sum()
    }

    /// Tokens one tool's definition costs. The schema's text is rendered once per shared schema
    /// (every request offering the tool counted it again).
    pub fn tool(&self, name: &str, description: &str, parameters: &Arc<serde_json::Value>) -> usize {
        MESSAGE_OVERHEAD
            + self.text(name)
            + self.text(description)
            + self.text(&crate::json_text::schema_text(parameters))
    }
}

/// One memory of counts for every tokenizer of a process: a thread's history is counted once,
/// whichever of its sends comes next. Cheap to clone.
#[derive(Clone, Default)]
pub struct TokenCounters {
    cache: Arc<CountCache>,
}

impl TokenCounters {
    /// The counter for `tokenizer`, sharing this memory.
    pub fn counter(&self, tokenizer: Tokenizer) -> TokenCounter {
        TokenCounter::with_cache(tokenizer, Arc::clone(&self.cache))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolCall;

    #[test]
    fn openai_families_get_their_encoding_and_everything_else_an_estimate() {
        assert_eq!(Tokenizer::for_model("gpt-4.1-mini"), Tokenizer::O200k);
        assert_eq!(Tokenizer::for_model("openai/gpt-4o"), Tokenizer::O200k);
        assert_eq!(Tokenizer::for_model("o3-mini"), Tokenizer::O200k);
        assert_eq!(Tokenizer::for_model("gpt-5"), Tokenizer::O200k);
        assert_eq!(Tokenizer::for_model("gpt-4"), Tokenizer::Cl100k);
        assert_eq!(Tokenizer::for_model("gpt-3.5-turbo"), Tokenizer::Cl100k);
        assert_eq!(Tokenizer::for_model("claude-sonnet-4-5"), Tokenizer::Estimate);
        assert_eq!(Tokenizer::for_model("llama-3.1-8b"), Tokenizer::Estimate);
    }

    #[test]
    fn the_encodings_count_as_openai_does() {
        // Counts from OpenAI's own tiktoken for these strings.
        assert_eq!(Tokenizer::O200k.count("hello world"), 2);
        assert_eq!(Tokenizer::Cl100k.count("tiktoken is great!"), 6);
        assert_eq!(Tokenizer::Estimate.count("hello world"), 4);
        assert_eq!(Tokenizer::Estimate.count(""), 0);
    }

    #[test]
    fn a_message_counts_its_text_calls_and_images() {
        let counter = TokenCounter::new(Tokenizer::Estimate);
        let call = ChatMessage::Assistant {
            content: Some("abcdef".into()),
            tool_calls: vec![ToolCall::new("c1", "abc", "{}")],
        };
        assert_eq!(counter.message(&call), 4 + 2 + 4 + 1 + 1);
        let picture = ChatMessage::User {
            content: UserContent::Parts(vec![ContentPart::ImageUrl {
                image_url: crate::ImageUrl {
                    url: "data:image/png;base64,".to_owned() + &"A".repeat(100_000),
                },
            }]),
        };
        assert_eq!(counter.message(&picture), 4 + IMAGE_TOKENS);
    }

    #[test]
    fn a_remembered_count_is_the_same_as_a_fresh_one() {
        let counters = TokenCounters::default();
        let counter = counters.counter(Tokenizer::O200k);
        let text = "The tide comes in at 06:40 and goes out again at noon. ".repeat(20);
        let fresh = counter.text(&text);
        assert_eq!(counter.text(&text), fresh);
        assert_eq!(counters.counter(Tokenizer::O200k).text(&text), fresh);
        // Another encoding does not read this one's counts.
        assert_eq!(
            counters.counter(Tokenizer::Cl100k).text(&text),
            Tokenizer::Cl100k.count(&text)
        );
    }
}
