//! A scripted model, a few tools and helpers to run a turn to its end.
//!
//! The model is in-memory on purpose: the upstream wire format is tested in the llm crate, and
//! what matters here is how the loop reacts to each event sequence.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use promptgate_core::tools::{McpOrigin, ToolSpec};
use promptgate_core::tools::{ToolError, ToolExecutor, ToolOutput};
use promptgate_llm::{
    ChatMessage, ChatModel, ChatRequest, EventStream, FinishReason, LlmError, StreamEvent, Usage, UserContent,
};
use promptgate_turn::{
    Nudges, RunnableTool, TurnEvent, TurnOutcome, TurnPlan, UiChunk, UiMessageBuilder, run_turn,
};
use serde_json::{Value, json};

pub enum Script {
    Events(Vec<Result<StreamEvent, LlmError>>),
    /// The events, then silence until the request is dropped.
    EventsThenHang(Vec<Result<StreamEvent, LlmError>>),
    Refuse(LlmError),
    /// The events, each after this pause (the tests run on a paused clock, so it is exact).
    Paced(Duration, Vec<Result<StreamEvent, LlmError>>),
}

#[derive(Default)]
pub struct ScriptedModel {
    scripts: Mutex<VecDeque<Script>>,
    requests: Mutex<Vec<ChatRequest>>,
}

impl ScriptedModel {
    pub fn new(scripts: Vec<Script>) -> Arc<Self> {
        Arc::new(Self {
            scripts: Mutex::new(scripts.into()),
            requests: Mutex::default(),
        })
    }

    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().unwrap().clone()
    }
}

#[async_trait]
impl ChatModel for ScriptedModel {
    async fn stream(&self, request: ChatRequest) -> Result<EventStream, LlmError> {
        self.requests.lock().unwrap().push(request);
        let script = self.scripts.lock().unwrap().pop_front();
        match script {
            Some(Script::Events(events)) => Ok(futures::stream::iter(events).boxed()),
            Some(Script::EventsThenHang(events)) => Ok(futures::stream::iter(events)
                .chain(futures::stream::pending())
                .boxed()),
            Some(Script::Refuse(err)) => Err(err),
            Some(Script::Paced(pause, events)) => Ok(futures::stream::iter(events)
                .then(move |event| async move {
                    tokio::time::sleep(pause).await;
                    event
                })
                .boxed()),
            None => Err(LlmError::Protocol("the test script has no more steps".into())),
        }
    }
}

pub fn usage(prompt: u64, completion: u64) -> StreamEvent {
    StreamEvent::Usage(Usage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
        reasoning_tokens: None,
        cached_tokens: None,
        cache_write_tokens: None,
    })
}

/// A step that answers with `pieces` of text.
pub fn answer(pieces: &[&str]) -> Script {
    let mut events: Vec<_> = pieces
        .iter()
        .map(|piece| Ok(StreamEvent::TextDelta((*piece).into())))
        .collect();
    events.push(Ok(usage(10, 5)));
    events.push(Ok(StreamEvent::Finished(FinishReason::Stop)));
    Script::Events(events)
}

/// The events of tool calls `(id, name, arguments)`, arguments streamed in two fragments.
pub fn call_events(calls: &[(&str, &str, &str)]) -> Vec<Result<StreamEvent, LlmError>> {
    let mut events = Vec::new();
    for (index, (id, name, arguments)) in calls.iter().enumerate() {
        events.push(Ok(StreamEvent::ToolCallStarted {
            index,
            id: (*id).into(),
            name: (*name).into(),
        }));
        let split = arguments.len() / 2;
        let split = (0..=split)
            .rev()
            .find(|i| arguments.is_char_boundary(*i))
            .unwrap_or(0);
        for fragment in [&arguments[..split], &arguments[split..]] {
            events.push(Ok(StreamEvent::ToolCallArgumentsDelta {
                index,
                fragment: fragment.into(),
            }));
        }
    }
    events
}

/// A step that makes tool calls.
pub fn tool_calls(calls: &[(&str, &str, &str)]) -> Script {
    let mut events = call_events(calls);
    events.push(Ok(usage(20, 3)));
    events.push(Ok(StreamEvent::Finished(FinishReason::ToolCalls)));
    Script::Events(events)
}

pub fn spec(name: &str, verb: Option<&str>, cacheable: bool) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("the {name} tool"),
        parameters: json!({"type": "object"}).into(),
        verb: verb.map(str::to_owned),
        cacheable,
        web: false,
        mcp: None,
    }
}

pub fn mcp_spec(name: &str) -> ToolSpec {
    ToolSpec {
        mcp: Some(McpOrigin {
            server_id: "srv-1".into(),
            name: "Files Server".into(),
            url: "https://files.example/mcp".into(),
            tool_name: "read".into(),
            ..McpOrigin::default()
        }),
        ..spec(name, None, false)
    }
}

/// Echoes its input, counting calls; optionally waits first.
#[derive(Default)]
pub struct Echo {
    pub calls: AtomicUsize,
    pub delay: Option<Duration>,
}

#[async_trait]
impl ToolExecutor for Echo {
    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if let Some(delay) = self.delay {
            tokio::time::sleep(delay).await;
        }
        Ok(ToolOutput::json(json!({"echo": input})))
    }
}

/// Fails the first `failures` calls, then echoes.
pub struct Flaky {
    pub failures: usize,
    pub calls: AtomicUsize,
}

#[async_trait]
impl ToolExecutor for Flaky {
    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        if n < self.failures {
            return Err(ToolError::Failed("the backend is down".into()));
        }
        Ok(ToolOutput::json(json!({"echo": input})))
    }
}

/// Never finishes.
pub struct Hang;

#[async_trait]
impl ToolExecutor for Hang {
    async fn call(&self, _input: Value) -> Result<ToolOutput, ToolError> {
        futures::future::pending().await
    }
}

pub fn tool(spec: ToolSpec, executor: Arc<dyn ToolExecutor>) -> RunnableTool {
    RunnableTool::allowed(spec, executor)
}

/// One allowed tool, `lookup`, that echoes its input.
pub fn lookup_tools() -> Vec<RunnableTool> {
    vec![tool(spec("lookup", None, false), Arc::new(Echo::default()))]
}

pub fn nudges() -> Nudges {
    Nudges {
        final_step: "FINAL: answer now.".into(),
        preventive: "PREVENTIVE: synthesise now.".into(),
        retry: "RETRY: respond now.".into(),
        retry_last: "LAST: the answer must not be empty.".into(),
        web_budget: "BUDGET: web calls are spent.".into(),
    }
}

pub fn plan(model: Arc<ScriptedModel>, tools: Vec<RunnableTool>) -> TurnPlan {
    let history = vec![ChatMessage::User {
        content: UserContent::Text("question".into()),
    }];
    let mut plan = TurnPlan::new(
        "turn1",
        "msg1",
        "test-model",
        model,
        "upstream-x",
        "SYSTEM",
        history,
    );
    plan.citation_reinforcement = Some("CITE with [N].".into());
    plan.tools = tools;
    plan.nudges = nudges();
    plan
}

pub struct Finished {
    pub events: Vec<TurnEvent>,
    pub chunks: Vec<UiChunk>,
    pub outcome: TurnOutcome,
}

/// Runs a turn to its end and checks the stream is one the client accepts.
pub async fn run(plan: TurnPlan) -> Finished {
    let run = run_turn(plan);
    let events: Vec<TurnEvent> = run.events.collect().await;
    let outcome = run.outcome.await.unwrap();
    finished(events, outcome)
}

/// Runs a turn and presses Stop once a chunk matching `stop_at` has been received.
pub async fn run_stopping_at(plan: TurnPlan, stop_at: impl Fn(&UiChunk) -> bool) -> Finished {
    let cancel = plan.cancel.clone();
    let mut run = run_turn(plan);
    let mut events = Vec::new();
    while let Some(event) = run.events.next().await {
        if matches!(&event, TurnEvent::Chunk(chunk) if stop_at(chunk)) {
            cancel.cancel();
        }
        events.push(event);
    }
    finished(events, run.outcome.await.unwrap())
}

/// Runs a turn that continues a stored message, checked as the client checks it: on top of that
/// message.
pub async fn run_continued(plan: TurnPlan) -> Finished {
    let stored = plan
        .resume
        .as_ref()
        .map(|resume| resume.parts.clone())
        .unwrap_or_default();
    let run = run_turn(plan);
    let events: Vec<TurnEvent> = run.events.collect().await;
    let outcome = run.outcome.await.unwrap();
    finish_on(
        UiMessageBuilder::continuing(&stored, &Value::Null),
        events,
        outcome,
    )
}

pub fn finished(events: Vec<TurnEvent>, outcome: TurnOutcome) -> Finished {
    finish_on(UiMessageBuilder::new(), events, outcome)
}

fn finish_on(builder: UiMessageBuilder, events: Vec<TurnEvent>, outcome: TurnOutcome) -> Finished {
    let chunks: Vec<UiChunk> = events
        .iter()
        .filter_map(|event| match event {
            TurnEvent::Chunk(chunk) => Some(chunk.clone()),
            TurnEvent::KeepAlive | TurnEvent::ClientToolCall(_) => None,
        })
        .collect();
    assert_client_accepts_on(builder, &chunks);
    Finished {
        events,
        chunks,
        outcome,
    }
}

/// What the AI SDK client requires of a stream from a server that runs tools itself, on top of
/// the message `builder` holds.
fn assert_client_accepts_on(mut builder: UiMessageBuilder, chunks: &[UiChunk]) {
    assert!(
        matches!(chunks.first(), Some(UiChunk::Start { .. })),
        "the stream must open with start"
    );
    for chunk in chunks {
        builder
            .apply(chunk)
            .unwrap_or_else(|err| panic!("{err} in {chunks:#?}"));
    }
    for (position, chunk) in chunks.iter().enumerate() {
        if let UiChunk::ToolInputAvailable { tool_call_id, .. } = chunk {
            let answered = chunks[position..].iter().any(|later| match later {
                UiChunk::ToolOutputAvailable { tool_call_id: id, .. }
                | UiChunk::ToolOutputError { tool_call_id: id, .. }
                | UiChunk::ToolApprovalRequest { tool_call_id: id, .. } => id == tool_call_id,
                _ => false,
            });
            assert!(answered, "tool call {tool_call_id} has no output in {chunks:#?}");
        }
    }
    for chunk in chunks {
        let value = serde_json::to_value(chunk).unwrap();
        for (key, field) in value.as_object().unwrap() {
            assert!(
                !field.is_null() || key == "input" || key == "output",
                "`{key}` is null in {value}"
            );
        }
    }
}

pub fn types(chunks: &[UiChunk]) -> Vec<String> {
    chunks
        .iter()
        .map(|chunk| {
            serde_json::to_value(chunk).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// The chunks as the client receives them over SSE, one JSON object a line: the form the stream
/// snapshots pin. Wall-clock times are replaced by a marker, since the test clock only pauses tokio's.
pub fn wire(chunks: &[UiChunk]) -> String {
    chunks
        .iter()
        .map(|chunk| {
            let mut chunk = chunk.clone();
            if let UiChunk::MessageMetadata { message_metadata } = &mut chunk
                && let Some(Value::Object(times)) = message_metadata.get_mut("reasoningStartTimes")
            {
                times.values_mut().for_each(|time| *time = json!("[unix ms]"));
            }
            serde_json::to_string(&chunk).unwrap()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text content of the last message of a request.
pub fn last_user_text(request: &ChatRequest) -> Option<String> {
    match request.messages.last() {
        Some(ChatMessage::User {
            content: UserContent::Text(text),
        }) => Some(text.clone()),
        _ => None,
    }
}

pub fn system_text(request: &ChatRequest) -> String {
    match request.messages.first() {
        Some(ChatMessage::System { content }) => content.clone(),
        other => panic!("the first message must be the system prompt, got {other:?}"),
    }
}

/// The text deltas, in order.
pub fn deltas(chunks: &[UiChunk]) -> Vec<String> {
    chunks
        .iter()
        .filter_map(|chunk| match chunk {
            UiChunk::TextDelta { delta, .. } => Some(delta.clone()),
            _ => None,
        })
        .collect()
}

pub fn tool_messages(request: &ChatRequest) -> Vec<(String, String)> {
    tool_results(&request.messages)
}

/// The tool results among `messages`, as (call id, content), in order.
pub fn tool_results(messages: &[ChatMessage]) -> Vec<(String, String)> {
    messages
        .iter()
        .filter_map(|message| match message {
            ChatMessage::Tool {
                tool_call_id,
                content,
            } => Some((tool_call_id.clone(), content.clone())),
            _ => None,
        })
        .collect()
}
