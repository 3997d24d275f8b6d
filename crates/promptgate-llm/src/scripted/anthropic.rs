//! Scripts that answer in Anthropic's Messages API stream format (`event:` + `data:` pairs), for
//! the `/v1/messages` route of the scripted upstream.

use serde_json::{Value, json};

use super::{Script, Step};

/// One SSE event as Anthropic frames it.
pub fn event(kind: &str, data: &Value) -> Step {
    Step::Raw(format!("event: {kind}\ndata: {data}\n\n").into())
}

/// A recorded stream replayed byte for byte (a fixture file's text).
pub fn transcript(sse: &str) -> Script {
    Script::new().raw(sse.to_owned())
}

/// A refusal with Anthropic's error body, e.g. `(529, "overloaded_error", "Overloaded")`.
pub fn refusal(status: u16, error_type: &str, message: &str) -> Script {
    let body = json!({"type": "error", "error": {"type": error_type, "message": message}});
    Script::new().step(Step::Status(status, body.to_string()))
}

/// The token counts an answer reports in `message_start`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PromptCounts {
    /// Tokens read neither from nor into the cache.
    pub input: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

enum Block {
    Thinking {
        text: String,
        signature: String,
    },
    Text(Vec<String>),
    Tool {
        id: String,
        name: String,
        fragments: Vec<String>,
    },
}

/// Builds one streamed answer: its blocks in order, then `message_delta` and `message_stop`.
pub struct Answer {
    counts: PromptCounts,
    output_tokens: u64,
    blocks: Vec<Block>,
    stop_reason: Option<String>,
}

impl Default for Answer {
    fn default() -> Self {
        Self::new()
    }
}

impl Answer {
    pub fn new() -> Self {
        Self {
            counts: PromptCounts {
                input: 10,
                ..PromptCounts::default()
            },
            output_tokens: 5,
            blocks: Vec::new(),
            stop_reason: None,
        }
    }

    pub fn counts(mut self, counts: PromptCounts) -> Self {
        self.counts = counts;
        self
    }

    pub fn output_tokens(mut self, tokens: u64) -> Self {
        self.output_tokens = tokens;
        self
    }

    pub fn thinking(mut self, text: &str, signature: &str) -> Self {
        self.blocks.push(Block::Thinking {
            text: text.to_owned(),
            signature: signature.to_owned(),
        });
        self
    }

    /// A text block streamed in these pieces.
    pub fn text<I, S>(mut self, pieces: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.blocks.push(Block::Text(
            pieces.into_iter().map(|p| p.as_ref().to_owned()).collect(),
        ));
        self
    }

    /// A tool call whose input JSON arrives in these fragments.
    pub fn tool_use(mut self, id: &str, name: &str, fragments: &[&str]) -> Self {
        self.blocks.push(Block::Tool {
            id: id.to_owned(),
            name: name.to_owned(),
            fragments: fragments.iter().map(|f| (*f).to_owned()).collect(),
        });
        self
    }

    /// Overrides the stop reason (`end_turn`, or `tool_use` when the answer calls a tool).
    pub fn stop_reason(mut self, reason: &str) -> Self {
        self.stop_reason = Some(reason.to_owned());
        self
    }

    /// The events up to and including the last content block, without the message's end.
    pub fn opening(&self) -> Script {
        let counts = self.counts;
        let mut script = Script::new().step(event(
            "message_start",
            &json!({"type": "message_start", "message": {
                "id": "msg_scripted", "type": "message", "role": "assistant", "model": "claude-scripted",
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {
                    "input_tokens": counts.input,
                    "cache_creation_input_tokens": counts.cache_write,
                    "cache_read_input_tokens": counts.cache_read,
                    "output_tokens": 1,
                },
            }}),
        ));
        script = script.step(event("ping", &json!({"type": "ping"})));
        for (index, block) in self.blocks.iter().enumerate() {
            let (start, deltas): (Value, Vec<Value>) = match block {
                Block::Thinking { text, signature } => (
                    json!({"type": "thinking", "thinking": "", "signature": ""}),
                    vec![
                        json!({"type": "thinking_delta", "thinking": text}),
                        json!({"type": "signature_delta", "signature": signature}),
                    ],
                ),
                Block::Text(pieces) => (
                    json!({"type": "text", "text": ""}),
                    pieces
                        .iter()
                        .map(|p| json!({"type": "text_delta", "text": p}))
                        .collect(),
                ),
                Block::Tool { id, name, fragments } => (
                    json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                    fragments
                        .iter()
                        .map(|f| json!({"type": "input_json_delta", "partial_json": f}))
                        .collect(),
                ),
            };
            script = script.step(event(
                "content_block_start",
                &json!({"type": "content_block_start", "index": index, "content_block": start}),
            ));
            for delta in deltas {
                script = script.step(event(
                    "content_block_delta",
                    &json!({"type": "content_block_delta", "index": index, "delta": delta}),
                ));
            }
            script = script.step(event(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": index}),
            ));
        }
        script
    }

    pub fn script(self) -> Script {
        let calls_tools = self.blocks.iter().any(|b| matches!(b, Block::Tool { .. }));
        let reason = self
            .stop_reason
            .clone()
            .unwrap_or_else(|| if calls_tools { "tool_use" } else { "end_turn" }.to_owned());
        let counts = self.counts;
        self.opening()
            .step(event(
                "message_delta",
                &json!({"type": "message_delta",
                "delta": {"stop_reason": reason, "stop_sequence": null},
                "usage": {
                    "input_tokens": counts.input,
                    "cache_creation_input_tokens": counts.cache_write,
                    "cache_read_input_tokens": counts.cache_read,
                    "output_tokens": self.output_tokens,
                }}),
            ))
            .step(event("message_stop", &json!({"type": "message_stop"})))
    }
}

impl From<Answer> for Script {
    fn from(answer: Answer) -> Self {
        answer.script()
    }
}

/// A plain text answer in these pieces.
pub fn text<I, S>(pieces: I) -> Script
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    Answer::new().text(pieces).script()
}

/// One tool call, its input in these fragments.
pub fn tool_use(id: &str, name: &str, fragments: &[&str]) -> Script {
    Answer::new().tool_use(id, name, fragments).script()
}

/// Blocks before a breakpoint that Anthropic also checks for an earlier cache entry.
const LOOKBACK_BLOCKS: usize = 20;

/// A model of Anthropic's prompt cache, to check what a request layout would read back. The
/// prompt is the sequence of tool definitions, system blocks and message blocks, in that order;
/// a block with `cache_control` writes the prefix that ends with it, and a later request reads
/// the longest written prefix that it repeats byte for byte, found at one of its own breakpoints
/// or up to 20 blocks before one. The counts are in blocks, not tokens.
#[derive(Debug, Default)]
pub struct PromptCache {
    written: std::collections::HashSet<u64>,
}

impl PromptCache {
    /// Serves one request body: returns how many of its leading blocks came from the cache
    /// (0 for a miss), and writes its breakpoints.
    pub fn serve(&mut self, request: &Value) -> usize {
        let (prefixes, breakpoints) = prefix_hashes(request);
        let mut read = 0;
        for &breakpoint in &breakpoints {
            let earliest = breakpoint.saturating_sub(LOOKBACK_BLOCKS);
            if let Some(hit) = (earliest..=breakpoint)
                .rev()
                .find(|&end| self.written.contains(&prefixes[end]))
            {
                read = read.max(hit + 1);
            }
        }
        for breakpoint in breakpoints {
            self.written.insert(prefixes[breakpoint]);
        }
        read
    }
}

/// The hash of every prefix (index `i`: blocks `0..=i`) and the indexes of the blocks that carry
/// a breakpoint. Block text leaves `cache_control` out: marking a block changes no prompt byte.
fn prefix_hashes(request: &Value) -> (Vec<u64>, Vec<usize>) {
    use std::hash::{Hash, Hasher};

    let list = |value: &Value| value.as_array().cloned().unwrap_or_default();
    let mut blocks: Vec<(String, Value)> = Vec::new();
    for tool in list(&request["tools"]) {
        blocks.push(("tool".to_owned(), tool));
    }
    for block in list(&request["system"]) {
        blocks.push(("system".to_owned(), block));
    }
    for message in list(&request["messages"]) {
        let role = message["role"].as_str().unwrap_or_default().to_owned();
        for block in list(&message["content"]) {
            blocks.push((role.clone(), block));
        }
    }
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let mut prefixes = Vec::with_capacity(blocks.len());
    let mut breakpoints = Vec::new();
    for (at, (role, mut block)) in blocks.into_iter().enumerate() {
        if let Some(object) = block.as_object_mut()
            && object.remove("cache_control").is_some()
        {
            breakpoints.push(at);
        }
        role.hash(&mut hasher);
        block.to_string().hash(&mut hasher);
        prefixes.push(hasher.finish());
    }
    (prefixes, breakpoints)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(system: &str, messages: Value) -> Value {
        json!({
            "tools": [{"name": "lookup", "input_schema": {"type": "object"}}],
            "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
            "messages": messages,
        })
    }

    #[test]
    fn a_repeated_prefix_is_read_back_and_a_changed_one_is_not() {
        let mut cache = PromptCache::default();
        let first = request(
            "Rules.",
            json!([{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]),
        );
        assert_eq!(cache.serve(&first), 0, "nothing written yet");
        let second = request(
            "Rules.",
            json!([
                {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "Hello.",
                    "cache_control": {"type": "ephemeral"}}]},
                {"role": "user", "content": [{"type": "text", "text": "More"}]},
            ]),
        );
        assert_eq!(cache.serve(&second), 2, "the tool and the system prompt");
        let mut third = second.clone();
        third["messages"][2]["content"][0]["text"] = json!("Else");
        assert_eq!(cache.serve(&third), 4, "through the earlier answer");
        let changed = request(
            "Other rules.",
            json!([{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]),
        );
        assert_eq!(cache.serve(&changed), 0);
    }
}
