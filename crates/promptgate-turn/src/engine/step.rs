//! One model step: the upstream stream translated into text, reasoning and tool-input chunks.

use futures::StreamExt;
use promptgate_core::citations::CitationCleaner;
use promptgate_core::citations::check::Citation;
use promptgate_core::citations::markers::MarkerScanner;
use promptgate_llm::{ChatRequest, FinishReason, LlmError, StreamEvent, Usage};
use serde_json::{Value, json};

use super::turn::Turn;
use crate::ui::UiChunk;

/// A tool call as it streamed in.
pub(super) struct StreamedCall {
    index: usize,
    pub(super) id: String,
    pub(super) name: String,
    pub(super) arguments: String,
    /// The arguments outgrew [`MAX_ARGUMENT_BYTES`]; the call is refused instead of run.
    pub(super) oversized: bool,
    /// A call of a client tool: the client runs it, and the UI stream never shows it.
    pub(super) client: bool,
}

/// Source text above which a part's citation check runs on the blocking pool: reading about
/// 16,000 characters of a page takes some 0.1 ms, so from here on a check would hold up the other
/// turns on its worker for longer than handing it over costs.
const CHECK_OFF_WORKER_BYTES: usize = 32 * 1024;

/// Citations of one answer that are checked and listed in its metadata.
pub(super) const MAX_CHECKED_CITATIONS: usize = 200;
/// Calls one step may make; further calls of the step are ignored.
pub(super) const MAX_CALLS_PER_STEP: usize = 32;
/// Argument text kept per call; generous enough for a whole HTML page.
pub(super) const MAX_ARGUMENT_BYTES: usize = 1 << 20;

/// What one step produced so far.
#[derive(Default)]
pub(super) struct StepState {
    open_text: Option<String>,
    /// Strips model-native `【N†title】` markers from the open text part; one per part, so a marker
    /// can never straddle two parts.
    citations: CitationCleaner,
    /// Finds the open part's `[N]` citations and drops those naming no source, when the turn
    /// checks them.
    markers: Option<MarkerScanner>,
    /// The open text part as emitted.
    part_text: String,
    open_reasoning: Option<String>,
    pub(super) text: String,
    pub(super) calls: Vec<StreamedCall>,
    pub(super) usage: Option<Usage>,
    pub(super) finish: Option<FinishReason>,
}

/// Why a step's stream ended early.
pub(super) enum Interrupt {
    Stopped,
    Failed(LlmError),
}

impl Turn {
    /// Streams one request into `state`, emitting chunks as they arrive.
    pub(super) async fn stream_step(
        &mut self,
        request: ChatRequest,
        state: &mut StepState,
    ) -> Result<(), Interrupt> {
        let (first, mut stream) = self.open_stream(request).await?;
        match first {
            Some(event) => self.on_stream_event(event, state).await,
            None => return Ok(()),
        }
        loop {
            match self.out.wait(stream.next()).await {
                None | Some(Some(Err(LlmError::Cancelled))) => return Err(Interrupt::Stopped),
                Some(None) => return Ok(()),
                Some(Some(Err(err))) => return Err(Interrupt::Failed(err)),
                Some(Some(Ok(event))) => self.on_stream_event(event, state).await,
            }
        }
    }

    async fn on_stream_event(&mut self, event: StreamEvent, state: &mut StepState) {
        match event {
            StreamEvent::TextDelta(delta) => {
                if delta.is_empty() {
                    return;
                }
                self.close_reasoning(state).await;
                let id = self.text_part(state).await;
                let mut cleaned = state.citations.push(&delta);
                if let Some(markers) = &mut state.markers {
                    cleaned = markers.push(&cleaned);
                }
                self.emit_text(state, id, cleaned).await;
            }
            StreamEvent::ReasoningDelta(delta) => {
                if delta.is_empty() {
                    return;
                }
                self.close_text(state).await;
                let id = self.reasoning_part(state).await;
                self.out.emit(UiChunk::ReasoningDelta { id, delta }).await;
            }
            StreamEvent::ToolCallStarted { index, id, name } => {
                if state.calls.iter().any(|call| call.index == index) {
                    return;
                }
                if state.calls.len() >= MAX_CALLS_PER_STEP {
                    tracing::warn!(
                        name,
                        "the model made more tool calls in one step than allowed; ignored"
                    );
                    return;
                }
                self.close_open_parts(state).await;
                let id = if id.is_empty() || state.calls.iter().any(|call| call.id == id) {
                    self.next_part_id("call")
                } else {
                    id
                };
                let spec = self
                    .plan
                    .tools
                    .iter()
                    .find(|tool| tool.spec.name == name)
                    .map(|tool| &tool.spec);
                let client = spec.is_none() && self.plan.client.is_client_tool(&name);
                let title = spec.map(|spec| self.plan.titles.title(spec, &json!({})));
                let dynamic = self.dynamic_flag(&name);
                let chunk = UiChunk::ToolInputStart {
                    tool_call_id: id.clone(),
                    tool_name: name.clone(),
                    dynamic,
                    title,
                };
                state.calls.push(StreamedCall {
                    index,
                    id,
                    name,
                    arguments: String::new(),
                    oversized: false,
                    client,
                });
                if !client {
                    self.out.emit(chunk).await;
                }
            }
            StreamEvent::ToolCallArgumentsDelta { index, fragment } => {
                let Some(call) = state.calls.iter_mut().find(|call| call.index == index) else {
                    tracing::warn!(
                        index,
                        "tool-call arguments for a call that never started; ignored"
                    );
                    return;
                };
                if fragment.is_empty() || call.oversized {
                    return;
                }
                if call.arguments.len() + fragment.len() > MAX_ARGUMENT_BYTES {
                    tracing::warn!(
                        name = call.name,
                        "tool-call arguments too long; the call will be refused"
                    );
                    call.oversized = true;
                    return;
                }
                call.arguments.push_str(&fragment);
                if call.client {
                    return;
                }
                let chunk = UiChunk::ToolInputDelta {
                    tool_call_id: call.id.clone(),
                    input_text_delta: fragment,
                };
                self.out.emit(chunk).await;
            }
            StreamEvent::Usage(usage) => {
                self.report_usage(Some(&usage));
                state.usage = Some(usage);
            }
            StreamEvent::Finished(reason) => state.finish = Some(reason),
        }
    }

    pub(super) async fn close_open_parts(&mut self, state: &mut StepState) {
        self.close_text(state).await;
        self.close_reasoning(state).await;
    }

    /// The open text part's id; a new part is started (and announced) when none is open.
    async fn text_part(&mut self, state: &mut StepState) -> String {
        if let Some(id) = &state.open_text {
            return id.clone();
        }
        let id = self.next_part_id("text");
        self.out.emit(UiChunk::TextStart { id: id.clone() }).await;
        state.open_text = Some(id.clone());
        state.citations = CitationCleaner::new();
        state.markers = self.citable_sources().map(MarkerScanner::new);
        state.part_text.clear();
        id
    }

    async fn close_text(&mut self, state: &mut StepState) {
        if let Some(id) = state.open_text.take() {
            // Whatever the cleaner still holds can no longer become a marker.
            let mut held = state.citations.finish();
            if let Some(markers) = &mut state.markers {
                held = markers.push(&held);
                held.push_str(&markers.finish());
            }
            self.emit_text(state, id.clone(), held).await;
            let citations = match state.markers.take() {
                Some(markers) => self.check_part(&state.part_text, &markers).await,
                None => None,
            };
            self.text_parts += 1;
            self.out.emit(UiChunk::TextEnd { id, citations }).await;
        }
    }

    /// The numbers a citation may name, when this turn's citations are checked: a turn that can
    /// register sources (it has web tools) or already did (a retry).
    fn citable_sources(&self) -> Option<Vec<u32>> {
        let known = self.plan.hooks.citable_sources()?;
        let web = self.plan.tools.iter().any(|tool| tool.spec.web);
        (web || !known.is_empty()).then_some(known)
    }

    /// Checks a finished part's citations, keeps them for the answer's metadata and returns them
    /// in the AI SDK 7 shape (`None` when there are none).
    async fn check_part(&mut self, text: &str, markers: &MarkerScanner) -> Option<Vec<Value>> {
        // The model decides how many citations it writes; the answer's metadata keeps a bounded
        // number. Those past it are still scanned (a dangling one is still removed), not checked.
        let room = MAX_CHECKED_CITATIONS.saturating_sub(self.citations.len());
        let kept = markers.markers();
        let kept = &kept[..room.min(kept.len())];
        let mut checked = if self.plan.hooks.citation_source_bytes() < CHECK_OFF_WORKER_BYTES {
            self.plan.hooks.check_citations(text, self.text_parts, kept)
        } else {
            let (hooks, text, text_part, kept) = (
                self.plan.hooks.clone(),
                text.to_owned(),
                self.text_parts,
                kept.to_vec(),
            );
            tokio::task::spawn_blocking(move || hooks.check_citations(&text, text_part, &kept))
                .await
                .unwrap_or_else(|err| {
                    tracing::warn!(error = %err, "the citation check failed; the part's citations go unchecked");
                    Vec::new()
                })
        };
        if let Some(review) = &self.plan.citation_review {
            super::citation_review::review_citations(review, text, &mut checked, &self.plan.cancel).await;
        }
        let counts = self.citation_counts.get_or_insert_with(Default::default);
        counts.add(&checked, markers.dangling().len());
        let wire: Vec<Value> = checked.iter().map(sdk_citation).collect();
        self.citations.extend(checked);
        (!wire.is_empty()).then_some(wire)
    }

    /// Sends cleaned text; the model's own history, the stored part and the stream all get the same.
    async fn emit_text(&mut self, state: &mut StepState, id: String, delta: String) {
        if delta.is_empty() {
            return;
        }
        if !delta.trim().is_empty() {
            self.answered = true;
        }
        state.text.push_str(&delta);
        state.part_text.push_str(&delta);
        self.out.emit(UiChunk::TextDelta { id, delta }).await;
    }

    /// The open reasoning part's id; a new part is started (and timed) when none is open.
    async fn reasoning_part(&mut self, state: &mut StepState) -> String {
        if let Some(id) = &state.open_reasoning {
            return id.clone();
        }
        let id = self.next_part_id("reasoning");
        self.out.emit(UiChunk::ReasoningStart { id: id.clone() }).await;
        self.reasoning_times.start();
        state.open_reasoning = Some(id.clone());
        id
    }

    async fn close_reasoning(&mut self, state: &mut StepState) {
        if let Some(id) = state.open_reasoning.take() {
            self.reasoning_times.end();
            self.out.emit(UiChunk::ReasoningEnd { id }).await;
        }
    }

    /// Ends tool calls that will never run: each gets its input and an error, so no part is left
    /// waiting for a result the client would try to supply itself.
    pub(super) async fn abandon_calls(&mut self, calls: &[StreamedCall], error: &str) {
        for call in calls.iter().filter(|call| !call.client) {
            let input = serde_json::from_str::<Value>(&call.arguments)
                .unwrap_or_else(|_| Value::String(call.arguments.clone()));
            let dynamic = self.dynamic_flag(&call.name);
            self.emit_tool_input(call, input, dynamic, None).await;
            self.emit_tool_error(&call.id, error.to_owned(), dynamic).await;
        }
    }

    pub(super) async fn emit_tool_input(
        &mut self,
        call: &StreamedCall,
        input: Value,
        dynamic: Option<bool>,
        title: Option<String>,
    ) {
        let chunk = UiChunk::ToolInputAvailable {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            input,
            dynamic,
            title,
        };
        self.out.emit(chunk).await;
    }

    pub(super) async fn emit_tool_error(
        &mut self,
        tool_call_id: &str,
        error_text: String,
        dynamic: Option<bool>,
    ) {
        let chunk = UiChunk::ToolOutputError {
            tool_call_id: tool_call_id.to_owned(),
            error_text,
            dynamic,
        };
        self.out.emit(chunk).await;
    }

    pub(super) fn dynamic_flag(&self, name: &str) -> Option<bool> {
        self.plan
            .tools
            .iter()
            .find(|tool| tool.spec.name == name)
            .and_then(|tool| tool.spec.mcp.as_ref())
            .map(|_| true)
    }

    /// A part id unique within the turn.
    pub(super) fn next_part_id(&mut self, kind: &str) -> String {
        self.part_counter += 1;
        format!("{kind}-{}-{}", self.plan.turn_id, self.part_counter)
    }
}

/// A checked citation as AI SDK 7 keeps it on its text part: the source, the claim's span and the
/// passage of the source that matched it.
fn sdk_citation(citation: &Citation) -> Value {
    let mut value = json!({
        "source": {
            "type": "source",
            "sourceType": "url",
            "id": format!("source-{}", citation.n),
            "url": citation.url,
            "title": citation.title,
        },
        "startIndex": citation.start,
        "endIndex": citation.end,
    });
    if let (Some(object), Some(passage)) = (value.as_object_mut(), &citation.passage) {
        object.insert("citedText".into(), passage.clone().into());
    }
    value
}
