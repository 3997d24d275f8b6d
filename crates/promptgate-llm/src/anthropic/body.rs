//! The JSON body of a streamed Messages API request, built from the engine's request.
//!
//! Prompt caching: Anthropic caches a prefix only where a block carries `cache_control`, and a
//! cached prefix is only read back when every byte before the breakpoint is the same. The
//! breakpoints go at the end of the stable half of the system prompt (tools and the user's setup,
//! the same on every send of a thread), at the end of the conversation before the newest user
//! message (what the previous send already paid for), and on the newest tool result inside a
//! tool loop (so each step reads what the step before it wrote). Three of the four allowed.
//!
//! The rest of the system prompt (the clock, per-send notes) changes from send to send; left in
//! the system prompt it would sit before the conversation and spoil every cached prefix after it.
//! It opens the newest user message instead, where nothing cached follows it across sends.

use serde_json::{Map, Value, json};

use super::ThinkingMode;
use super::thinking::ThinkingMemory;
use crate::{ChatMessage, ChatRequest, ContentPart, LlmError, ToolChoice, UserContent};

/// Room left for the answer after a thinking budget, so thinking cannot starve it.
const ANSWER_ROOM_TOKENS: u64 = 4096;

/// What the body depends on beyond the request.
pub(crate) struct BodyOptions<'a> {
    pub max_tokens: u64,
    pub thinking: ThinkingMode,
    pub memory: &'a ThinkingMemory,
}

pub(crate) fn request_body(request: &ChatRequest, options: &BodyOptions<'_>) -> Result<Vec<u8>, LlmError> {
    let body = build(request, options);
    serde_json::to_vec(&body).map_err(|e| LlmError::Protocol(format!("could not encode the request: {e}")))
}

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// Messages in Anthropic's shape: consecutive messages of one role merged, system text set aside.
struct Conversation {
    system: Vec<Value>,
    messages: Vec<(&'static str, Vec<Value>)>,
    /// A message of the current turn made tool calls whose thinking is not remembered.
    missing_thinking: bool,
    /// Tool names the history uses, for a request that offers no tools.
    used_tools: Vec<String>,
}

impl Conversation {
    fn push(&mut self, role: &'static str, blocks: Vec<Value>) {
        if blocks.is_empty() {
            return;
        }
        match self.messages.last_mut() {
            Some((last, content)) if *last == role => content.extend(blocks),
            _ => self.messages.push((role, blocks)),
        }
    }

    fn mark_last_block(&mut self) -> bool {
        let Some(block) = self
            .messages
            .last_mut()
            .and_then(|(_, blocks)| blocks.last_mut())
            .and_then(Value::as_object_mut)
        else {
            return false;
        };
        block.insert("cache_control".into(), ephemeral());
        true
    }
}

fn convert(request: &ChatRequest, memory: &ThinkingMemory, thinking_on: bool) -> Conversation {
    let hints = request.cache;
    let current_turn_from = hints.conversation_prefix_end.map_or(0, |end| end + 1);
    // The newest user message: the one after the conversation prefix, or on a thread's first
    // send the first one (later user messages of a turn are the engine's nudges).
    let newest_user = hints.conversation_prefix_end.map(|end| end + 1).or_else(|| {
        request
            .messages
            .iter()
            .position(|m| matches!(m, ChatMessage::User { .. }))
    });
    let mut volatile: Option<String> = None;
    let mut out = Conversation {
        system: Vec::new(),
        messages: Vec::new(),
        missing_thinking: false,
        used_tools: Vec::new(),
    };
    let mut first_system = true;
    let mut prefix_marked = false;
    for (at, message) in request.messages.iter().enumerate() {
        match message {
            ChatMessage::System { content } => {
                let split = hints
                    .stable_system_len
                    .filter(|_| first_system)
                    .filter(|&len| len > 0 && len <= content.len() && content.is_char_boundary(len));
                first_system = false;
                match split {
                    Some(len) => {
                        let (stable, rest) = content.split_at(len);
                        out.system
                            .push(json!({"type": "text", "text": stable, "cache_control": ephemeral()}));
                        let rest = rest.trim_start_matches('\n');
                        if !rest.trim().is_empty() {
                            volatile = Some(rest.to_owned());
                        }
                    }
                    None if !content.trim().is_empty() => {
                        out.system.push(json!({"type": "text", "text": content}));
                    }
                    None => {}
                }
            }
            ChatMessage::User { content } => {
                let mut blocks = user_blocks(content);
                if newest_user == Some(at)
                    && let Some(text) = volatile.take()
                {
                    blocks.insert(0, json!({"type": "text", "text": text}));
                }
                out.push("user", blocks);
            }
            ChatMessage::Assistant { content, tool_calls } => {
                let mut blocks = Vec::new();
                if thinking_on
                    && at >= current_turn_from
                    && let Some(first) = tool_calls.first()
                {
                    match memory.recall(&first.id) {
                        Some(kept) => blocks.extend(kept.iter().cloned()),
                        None => out.missing_thinking = true,
                    }
                }
                if let Some(text) = content.as_deref().filter(|t| !t.trim().is_empty()) {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for call in tool_calls {
                    let input = serde_json::from_str::<Value>(&call.function.arguments)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({}));
                    if !out.used_tools.contains(&call.function.name) {
                        out.used_tools.push(call.function.name.clone());
                    }
                    blocks.push(json!({
                        "type": "tool_use",
                        "id": call.id,
                        "name": call.function.name,
                        "input": input,
                    }));
                }
                out.push("assistant", blocks);
            }
            ChatMessage::Tool {
                tool_call_id,
                content,
            } => out.push(
                "user",
                vec![json!({"type": "tool_result", "tool_use_id": tool_call_id, "content": content})],
            ),
        }
        if hints.conversation_prefix_end == Some(at) && !out.messages.is_empty() {
            prefix_marked = out.mark_last_block();
        }
    }
    if let Some(text) = volatile {
        // No user message to carry it: the system prompt keeps it, after the breakpoint.
        out.system.push(json!({"type": "text", "text": text}));
    }
    // Inside a tool loop the request ends with tool results: the next step starts from them.
    let ends_with_results = matches!(request.messages.last(), Some(ChatMessage::Tool { .. }));
    let prefix_is_last = prefix_marked && hints.conversation_prefix_end == Some(request.messages.len() - 1);
    if ends_with_results && !prefix_is_last {
        out.mark_last_block();
    }
    out
}

fn user_blocks(content: &UserContent) -> Vec<Value> {
    match content {
        UserContent::Text(text) if text.is_empty() => Vec::new(),
        UserContent::Text(text) => vec![json!({"type": "text", "text": text})],
        UserContent::Parts(parts) => parts
            .iter()
            .filter_map(|part| match part {
                ContentPart::Text { text } if text.is_empty() => None,
                ContentPart::Text { text } => Some(json!({"type": "text", "text": text})),
                ContentPart::ImageUrl { image_url } => Some(image_block(&image_url.url)),
            })
            .collect(),
    }
}

/// A `data:` URL becomes an inline image; an http(s) URL is fetched by the provider.
fn image_block(url: &str) -> Value {
    if let Some(rest) = url.strip_prefix("data:")
        && let Some((meta, data)) = rest.split_once(',')
        && let Some(media_type) = meta.strip_suffix(";base64")
    {
        return json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}});
    }
    if url.starts_with("https://") || url.starts_with("http://") {
        return json!({"type": "image", "source": {"type": "url", "url": url}});
    }
    json!({"type": "text", "text": "[An attached image could not be passed on]"})
}

/// The smallest thinking budget Anthropic accepts.
const MIN_THINKING_BUDGET: u64 = 1024;
/// The largest budget a numeric reasoning setting asks for: past any model's output, and a
/// setting a user wrote (up to 32 digits) stays far from overflowing the arithmetic below.
const MAX_THINKING_BUDGET: u64 = 128_000;

/// `thinking` (and `output_config`) for the model's reasoning setting, with the `max_tokens` it
/// needs. `None` when the setting is off, or when the client's cap leaves no room to think.
///
/// Without a client cap a budget raises `max_tokens` above the configured limit, so thinking
/// cannot starve the answer. A client's cap is a hard limit instead (Anthropic refuses a budget
/// that is not below `max_tokens`): the budget shrinks to leave room for the answer.
fn thinking_config(
    effort: Option<&str>,
    mode: ThinkingMode,
    max_tokens: u64,
    client_cap: Option<u64>,
) -> Option<(Value, Option<Value>, u64)> {
    let effort = effort.map(str::trim).filter(|e| !e.is_empty())?;
    if matches!(effort, "none" | "off" | "disabled") {
        return None;
    }
    match mode {
        ThinkingMode::Adaptive => Some((
            json!({"type": "adaptive"}),
            Some(json!({"effort": effort})),
            client_cap.map_or(max_tokens, |cap| cap.min(max_tokens)),
        )),
        ThinkingMode::Budget => {
            let wanted = match effort {
                "minimal" | "low" => 2048,
                "high" => 16_384,
                "max" | "xhigh" => 32_768,
                other => other
                    .parse::<u64>()
                    .ok()
                    .filter(|n| *n >= MIN_THINKING_BUDGET)
                    .map_or(8192, |n| n.min(MAX_THINKING_BUDGET)),
            };
            let total = max_tokens.max(wanted + ANSWER_ROOM_TOKENS);
            let total = client_cap.map_or(total, |cap| cap.min(total));
            let budget = wanted.min(total - ANSWER_ROOM_TOKENS.min(total / 2));
            if budget < MIN_THINKING_BUDGET {
                return None;
            }
            Some((json!({"type": "enabled", "budget_tokens": budget}), None, total))
        }
    }
}

fn build(request: &ChatRequest, options: &BodyOptions<'_>) -> Value {
    let mut thinking = thinking_config(
        request.reasoning_effort.as_deref(),
        options.thinking,
        options.max_tokens,
        request.max_output_tokens,
    );
    let mut conversation = convert(request, options.memory, thinking.is_some());
    if thinking.is_some() && conversation.missing_thinking {
        // Thinking blocks cannot be made up; without them a tool loop with thinking on is
        // refused, so this step goes without thinking instead.
        tracing::debug!("the thinking of an earlier step is not at hand; this step runs without thinking");
        thinking = None;
        conversation = convert(request, options.memory, false);
    }

    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    let plain_max_tokens = request
        .max_output_tokens
        .map_or(options.max_tokens, |cap| cap.min(options.max_tokens));
    let max_tokens = thinking.as_ref().map_or(plain_max_tokens, |(_, _, n)| *n);
    body.insert("max_tokens".into(), json!(max_tokens));
    body.insert("stream".into(), json!(true));
    if !conversation.system.is_empty() {
        body.insert("system".into(), Value::Array(conversation.system));
    }
    let messages: Vec<Value> = conversation
        .messages
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    body.insert("messages".into(), Value::Array(messages));

    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({"name": tool.name, "description": tool.description, "input_schema": &*tool.parameters})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        let forced = request.tool_choice == Some(ToolChoice::Required) && thinking.is_none();
        let mut choice = match request.tool_choice {
            Some(ToolChoice::None) => json!({"type": "none"}),
            _ if forced => json!({"type": "any"}),
            _ => json!({"type": "auto"}),
        };
        if request.parallel_tool_calls == Some(false) && request.tool_choice != Some(ToolChoice::None) {
            choice["disable_parallel_tool_use"] = json!(true);
        }
        body.insert("tool_choice".into(), choice);
    } else if !conversation.used_tools.is_empty() {
        // A history with tool calls needs the tools defined; offering them with `none` keeps the
        // model from calling any (the final step of a turn offers none).
        let tools: Vec<Value> = conversation
            .used_tools
            .iter()
            .map(|name| json!({"name": name, "description": "", "input_schema": {"type": "object"}}))
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        body.insert("tool_choice".into(), json!({"type": "none"}));
    }

    match thinking {
        Some((config, output_config, _)) => {
            body.insert("thinking".into(), config);
            if let Some(output_config) = output_config {
                body.insert("output_config".into(), output_config);
            }
        }
        // Anthropic accepts no temperature but the default while thinking.
        None => {
            if let Some(temperature) = request.temperature {
                body.insert("temperature".into(), json!(temperature));
            }
        }
    }
    for (key, value) in &request.extra {
        if key == "stream" {
            tracing::debug!("ignoring an extra `stream` field: the client always streams");
            continue;
        }
        body.insert(key.clone(), value.clone());
    }
    Value::Object(body)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{CacheHints, ToolCall, ToolDefinition};

    fn user(text: &str) -> ChatMessage {
        ChatMessage::User {
            content: UserContent::Text(text.to_owned()),
        }
    }

    fn options(memory: &ThinkingMemory) -> BodyOptions<'_> {
        BodyOptions {
            max_tokens: 1000,
            thinking: ThinkingMode::Budget,
            memory,
        }
    }

    /// [`second_send`] asking for `effort` of reasoning.
    fn second_send_at(effort: Option<&str>) -> ChatRequest {
        ChatRequest {
            reasoning_effort: effort.map(str::to_owned),
            ..second_send()
        }
    }

    fn second_send() -> ChatRequest {
        ChatRequest {
            model: "claude".into(),
            messages: vec![
                ChatMessage::System {
                    content: "Stable rules.\n\nToday is Monday.".into(),
                },
                user("Hi"),
                ChatMessage::Assistant {
                    content: Some("Hello.".into()),
                    tool_calls: Vec::new(),
                },
                user("And now?"),
            ],
            cache: CacheHints {
                stable_system_len: Some("Stable rules.".len()),
                conversation_prefix_end: Some(2),
            },
            ..ChatRequest::default()
        }
    }

    #[test]
    fn the_stable_prompt_and_the_conversation_prefix_end_in_breakpoints() {
        let memory = ThinkingMemory::default();
        let body = build(&second_send(), &options(&memory));
        assert_eq!(
            body["system"],
            json!([
                {"type": "text", "text": "Stable rules.", "cache_control": {"type": "ephemeral"}},
            ])
        );
        // The clock opens the newest question, after both breakpoints.
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Hello.", "cache_control": {"type": "ephemeral"}}]},
                {"role": "user", "content": [
                    {"type": "text", "text": "Today is Monday."},
                    {"type": "text", "text": "And now?"}]},
            ])
        );
        assert_eq!(body["max_tokens"], json!(1000));
        assert_eq!(body["stream"], json!(true));
    }

    #[test]
    fn on_a_first_send_the_clock_opens_the_only_question_and_without_one_stays_in_the_system() {
        let memory = ThinkingMemory::default();
        let mut request = second_send();
        request.messages.drain(1..3);
        request.cache.conversation_prefix_end = None;
        let body = build(&request, &options(&memory));
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [
                {"type": "text", "text": "Today is Monday."},
                {"type": "text", "text": "And now?"}]}])
        );

        request.messages.truncate(1);
        let body = build(&request, &options(&memory));
        assert_eq!(
            body["system"][1],
            json!({"type": "text", "text": "Today is Monday."})
        );
    }

    #[test]
    fn a_split_that_is_not_a_prefix_of_the_system_text_is_ignored() {
        let memory = ThinkingMemory::default();
        let mut request = second_send();
        request.cache.stable_system_len = Some(10_000);
        let body = build(&request, &options(&memory));
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "Stable rules.\n\nToday is Monday."}])
        );
    }

    fn tool_loop() -> ChatRequest {
        let mut request = second_send();
        request.messages.push(ChatMessage::Assistant {
            content: None,
            tool_calls: vec![ToolCall::new("toolu_1", "lookup", r#"{"q":"x"}"#)],
        });
        request.messages.push(ChatMessage::Tool {
            tool_call_id: "toolu_1".into(),
            content: "found".into(),
        });
        request.tools = vec![ToolDefinition {
            name: "lookup".into(),
            description: "Looks up.".into(),
            parameters: Arc::new(json!({"type": "object"})),
        }];
        request.parallel_tool_calls = Some(false);
        request.reasoning_effort = Some("low".into());
        request.temperature = Some(0.3);
        request
    }

    #[test]
    fn a_tool_loop_sends_back_its_thinking_and_caches_the_newest_result() {
        let memory = ThinkingMemory::default();
        let thinking = json!({"type": "thinking", "thinking": "Look it up.", "signature": "sig"});
        memory.remember(super::super::events::KeptThinking {
            first_tool_id: "toolu_1".into(),
            blocks: vec![thinking.clone()],
        });
        let body = build(&tool_loop(), &options(&memory));
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(
            messages[3],
            json!({"role": "assistant", "content": [
                thinking,
                {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "x"}},
            ]})
        );
        assert_eq!(
            messages[4],
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                "content": "found", "cache_control": {"type": "ephemeral"}}]})
        );
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 2048})
        );
        assert_eq!(body["max_tokens"], json!(2048 + ANSWER_ROOM_TOKENS));
        assert!(body.get("temperature").is_none(), "no temperature while thinking");
        assert_eq!(
            body["tool_choice"],
            json!({"type": "auto", "disable_parallel_tool_use": true})
        );
        assert_eq!(
            body["tools"],
            json!([{"name": "lookup", "description": "Looks up.", "input_schema": {"type": "object"}}])
        );
    }

    #[test]
    fn without_the_earlier_thinking_the_step_runs_without_thinking() {
        let memory = ThinkingMemory::default();
        let body = build(&tool_loop(), &options(&memory));
        assert!(body.get("thinking").is_none());
        assert_eq!(body["temperature"], json!(0.3));
        assert_eq!(body["messages"][3]["content"][0]["type"], json!("tool_use"));
    }

    #[test]
    fn adaptive_thinking_names_the_effort() {
        let memory = ThinkingMemory::default();
        let request = second_send_at(Some("medium"));
        let body = build(
            &request,
            &BodyOptions {
                thinking: ThinkingMode::Adaptive,
                ..options(&memory)
            },
        );
        assert_eq!(body["thinking"], json!({"type": "adaptive"}));
        assert_eq!(body["output_config"], json!({"effort": "medium"}));
    }

    #[test]
    fn a_client_cap_bounds_the_answer_but_not_above_the_configured_limit() {
        let memory = ThinkingMemory::default();
        let mut request = second_send_at(None);
        request.max_output_tokens = Some(300);
        assert_eq!(build(&request, &options(&memory))["max_tokens"], json!(300));
        // Claude Code asks for more than the model is configured to give.
        request.max_output_tokens = Some(32_000);
        assert_eq!(build(&request, &options(&memory))["max_tokens"], json!(1000));
    }

    #[test]
    fn under_a_client_cap_the_thinking_budget_stays_below_it_or_thinking_is_left_out() {
        let memory = ThinkingMemory::default();
        let mut request = second_send_at(Some("high"));
        request.temperature = Some(0.3);
        let limits = BodyOptions {
            max_tokens: 32_000,
            ..options(&memory)
        };
        request.max_output_tokens = Some(10_000);
        let body = build(&request, &limits);
        assert_eq!(body["max_tokens"], json!(10_000));
        let budget = body["thinking"]["budget_tokens"].as_u64().unwrap();
        assert!(
            (MIN_THINKING_BUDGET..10_000).contains(&budget),
            "a budget Anthropic accepts under the cap: {budget}"
        );
        assert_eq!(budget, 10_000 - ANSWER_ROOM_TOKENS);

        // Half of a small cap stays for the answer.
        request.max_output_tokens = Some(3000);
        let body = build(&request, &limits);
        assert_eq!(body["max_tokens"], json!(3000));
        assert_eq!(body["thinking"]["budget_tokens"], json!(1500));

        // A budget written as a huge number asks for the most any model gives, no more.
        let mut huge = second_send_at(Some("18446744073709551615"));
        huge.max_output_tokens = None;
        let body = build(&huge, &limits);
        assert_eq!(body["thinking"]["budget_tokens"], json!(MAX_THINKING_BUDGET));
        assert_eq!(
            body["max_tokens"],
            json!(MAX_THINKING_BUDGET + ANSWER_ROOM_TOKENS)
        );

        // Too small to think at all: no thinking, and the sampling settings are sent again.
        request.max_output_tokens = Some(1500);
        let body = build(&request, &limits);
        assert_eq!(body["max_tokens"], json!(1500));
        assert!(body.get("thinking").is_none(), "{body}");
        assert!(body.get("temperature").is_some(), "{body}");
    }

    #[test]
    fn an_adaptive_model_takes_the_client_cap_as_it_is() {
        let memory = ThinkingMemory::default();
        let mut request = second_send_at(Some("medium"));
        request.max_output_tokens = Some(700);
        let body = build(
            &request,
            &BodyOptions {
                thinking: ThinkingMode::Adaptive,
                ..options(&memory)
            },
        );
        assert_eq!(body["max_tokens"], json!(700));
        assert_eq!(body["thinking"], json!({"type": "adaptive"}));
    }

    #[test]
    fn a_final_step_without_tools_still_defines_the_tools_its_history_used() {
        let memory = ThinkingMemory::default();
        let mut request = tool_loop();
        request.tools.clear();
        request.reasoning_effort = None;
        let body = build(&request, &options(&memory));
        assert_eq!(body["tool_choice"], json!({"type": "none"}));
        assert_eq!(body["tools"][0]["name"], json!("lookup"));
    }

    #[test]
    fn images_and_extras_reach_the_provider() {
        let memory = ThinkingMemory::default();
        let mut request = second_send();
        request.messages.push(ChatMessage::User {
            content: UserContent::Parts(vec![
                ContentPart::ImageUrl {
                    image_url: crate::ImageUrl {
                        url: "data:image/png;base64,AAAA".into(),
                    },
                },
                ContentPart::Text {
                    text: "What is it?".into(),
                },
            ]),
        });
        request.extra = json!({"max_tokens": 64, "top_k": 5, "stream": false})
            .as_object()
            .cloned()
            .unwrap();
        let body = build(&request, &options(&memory));
        let last = body["messages"].as_array().unwrap().last().unwrap().clone();
        // Consecutive user messages merge into one: the clock, the question, then the image's.
        assert_eq!(
            last["content"][2],
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}})
        );
        assert_eq!(body["max_tokens"], json!(64));
        assert_eq!(body["top_k"], json!(5));
        assert_eq!(body["stream"], json!(true));
    }
}
