//! A turn's events → a response's output items and, for a stream, the events the Responses API's
//! clients expect, in their order: `response.created` and `.in_progress`; per item `output_item.added`,
//! its parts and deltas, `output_item.done`; then one terminal event (`response.completed`,
//! `.incomplete` or `.failed`) carrying the whole response.
//!
//! What the model's turn does on the server shows as follows: each text part is a `message` item and
//! each reasoning part a `reasoning` item (its text as one summary); a call to one of the user's MCP
//! servers is an `mcp_call` item, a web search or page read a `web_search_call` item (the API's own
//! shapes for work the server does); every other server tool runs unseen, as on the chat facade. A
//! call to one of the client's function tools is a `function_call` item; the turn ends with it.

use promptgate_service::events::{TurnError, TurnEvent, UiChunk, UiFinishReason};
use serde_json::Value;

use super::calls::{Call, output_text};
use super::frames::{DeltaOf, EventFields, Frames};
use super::object::{
    Echo, Item, ItemKind, ItemStatus, Part, ResponseObject, Shortfall, State, Status, SummaryPart, TextPart,
    Usage,
};
use crate::completions_api::FailureNote;

/// What a failed response says went wrong (`error.code`), in the Responses API's words: a prompt
/// longer than the model's window and a request the provider refused are the client's to change
/// (Codex, for one, stops on `context_length_exceeded` instead of asking again); anything else is
/// the server's.
fn failure_code(turn_code: Option<&str>) -> &'static str {
    match turn_code {
        Some(promptgate_service::events::CONTEXT_TOO_LONG) => "context_length_exceeded",
        Some(promptgate_service::events::REQUEST_REFUSED) => "invalid_prompt",
        Some(promptgate_service::events::PROVIDER_RATE_LIMITED) => "rate_limit_exceeded",
        _ => "server_error",
    }
}

/// The message of a response whose turn was stopped before it ended.
pub const STOPPED_TEXT: &str = "The response was stopped before it finished.";

/// How the response ended.
#[derive(Debug, Clone, PartialEq)]
struct End {
    status: Status,
    shortfall: Option<Shortfall>,
    error: Option<String>,
    /// What the turn's metadata said about its failure, when it failed.
    note: FailureNote,
}

/// Folds a turn's events into the response, writing the stream's events when given [`Frames`].
#[derive(Debug)]
pub struct Translator {
    echo: Echo,
    /// Makes item ids unique: the response id without its prefix.
    stem: String,
    pub(super) items: Vec<Item>,
    open_text: Option<usize>,
    open_reasoning: Option<usize>,
    pub(super) calls: Vec<Call>,
    usage: Option<Usage>,
    error_text: Option<String>,
    /// What the turn's metadata said about its failure before its error.
    failure_note: FailureNote,
    end: Option<End>,
}

impl Translator {
    pub fn new(echo: Echo) -> Self {
        let stem = echo.id.trim_start_matches("resp_").to_owned();
        Self {
            echo,
            stem,
            items: Vec::new(),
            open_text: None,
            open_reasoning: None,
            calls: Vec::new(),
            usage: None,
            error_text: None,
            failure_note: FailureNote::default(),
            end: None,
        }
    }

    pub fn echo(&self) -> &Echo {
        &self.echo
    }

    /// Takes one event of the turn. Returns true when it ended the response; its terminal event
    /// is written by [`finish`](Self::finish), once the response is kept.
    pub fn push(&mut self, event: &TurnEvent, mut out: Option<&mut Frames>) -> bool {
        let chunk = match event {
            TurnEvent::Chunk(chunk) if self.end.is_none() => chunk,
            TurnEvent::KeepAlive if self.end.is_none() => {
                if let Some(out) = out {
                    out.keep_alive();
                }
                return false;
            }
            TurnEvent::ClientToolCall(call) if self.end.is_none() => {
                self.client_call(call, out);
                return false;
            }
            _ => return false,
        };
        match chunk {
            UiChunk::Start { .. } => {
                if let Some(out) = out.as_deref_mut() {
                    let response = self.response_object(None);
                    for kind in ["response.created", "response.in_progress"] {
                        let fields = EventFields {
                            response: Some(&response),
                            ..EventFields::default()
                        };
                        out.event(kind, fields);
                    }
                }
            }
            UiChunk::TextStart { .. } => {
                self.open_text = Some(self.open(ItemKind::Message { text: String::new() }, out))
            }
            UiChunk::TextDelta { delta, .. } => self.extend(self.open_text, DeltaOf::Text, delta, out),
            UiChunk::TextEnd { .. } => {
                if let Some(index) = self.open_text.take() {
                    self.close(index, ItemStatus::Completed, out);
                }
            }
            UiChunk::ReasoningStart { .. } => {
                self.open_reasoning = Some(self.open(ItemKind::Reasoning { text: String::new() }, out));
            }
            UiChunk::ReasoningDelta { delta, .. } => {
                self.extend(self.open_reasoning, DeltaOf::Summary, delta, out)
            }
            UiChunk::ReasoningEnd { .. } => {
                if let Some(index) = self.open_reasoning.take() {
                    self.close(index, ItemStatus::Completed, out);
                }
            }
            UiChunk::ToolInputStart {
                tool_call_id,
                tool_name,
                dynamic,
                ..
            } => self.call_started(tool_call_id, tool_name, *dynamic == Some(true)),
            UiChunk::ToolInputDelta { .. } => {}
            UiChunk::ToolInputAvailable {
                tool_call_id, input, ..
            } => self.call_input(tool_call_id, input, out),
            UiChunk::ToolOutputAvailable {
                tool_call_id, output, ..
            } => self.call_ended(tool_call_id, Ok(output_text(output)), out),
            UiChunk::ToolOutputError {
                tool_call_id,
                error_text,
                ..
            } => self.call_ended(tool_call_id, Err(error_text.clone()), out),
            UiChunk::MessageMetadata { message_metadata } => {
                if let Some(usage) = message_metadata.get("usage") {
                    self.usage = Some(Usage::from_metadata(usage));
                }
                self.failure_note.read(message_metadata);
                if let Some(Value::Object(invoked)) = message_metadata.get("mcpTools") {
                    for (name, origin) in invoked {
                        self.mcp_call_located(name, origin, out.as_deref_mut());
                    }
                }
            }
            UiChunk::Error { error_text } => self.error_text = Some(error_text.clone()),
            UiChunk::Finish { finish_reason, .. } => self.end = Some(self.ending(*finish_reason)),
            UiChunk::Abort { .. } => self.end = Some(failed(STOPPED_TEXT)),
            // A facade's client cannot answer approvals, so its turns never ask.
            UiChunk::StartStep
            | UiChunk::FinishStep
            | UiChunk::SourceUrl { .. }
            | UiChunk::ToolApprovalRequest { .. }
            | UiChunk::DataElicitation { .. }
            | UiChunk::DataAuthorization { .. }
            | UiChunk::ToolOutputDenied { .. } => {}
        }
        self.end.is_some()
    }

    /// Ends a response whose turn stopped sending without saying how it ended.
    pub fn cut_short(&mut self) {
        if self.end.is_none() {
            self.end = Some(failed(STOPPED_TEXT));
        }
    }

    /// Turns an ended response into a failed one: what it said could not be kept, so a client must
    /// not continue from its id.
    pub fn fail(&mut self, message: &str) {
        self.end = Some(failed(message));
    }

    /// Closes what is still open and writes the terminal event. Call once [`ended`](Self::ended).
    pub fn finish(&mut self, now: i64, mut out: Option<&mut Frames>) {
        for index in 0..self.items.len() {
            if self.items[index].status == ItemStatus::InProgress {
                let status = match self.items[index].kind {
                    ItemKind::Message { .. } | ItemKind::Reasoning { .. } | ItemKind::FunctionCall { .. } => {
                        ItemStatus::Completed
                    }
                    ItemKind::McpCall { .. } | ItemKind::WebSearch { .. } => ItemStatus::Failed,
                };
                self.close(index, status, out.as_deref_mut());
            }
        }
        self.open_text = None;
        self.open_reasoning = None;
        let Some(out) = out else { return };
        let kind = match self.end.as_ref().map(|end| end.status) {
            Some(Status::Completed) => "response.completed",
            Some(Status::Incomplete) => "response.incomplete",
            _ => "response.failed",
        };
        let response = self.response_object(Some(now));
        let fields = EventFields {
            response: Some(&response),
            ..EventFields::default()
        };
        out.event(kind, fields);
    }

    /// The ended response, completed at `now` when it completed.
    pub fn final_response(&self, now: i64) -> Value {
        serde_json::to_value(self.response_object(Some(now))).unwrap_or(Value::Null)
    }

    /// The ended response's JSON bytes, for a client that did not stream.
    pub fn final_json(&self, now: i64) -> Vec<u8> {
        serde_json::to_vec(&self.response_object(Some(now))).unwrap_or_default()
    }

    /// How the response failed, when it did, for a client that did not stream.
    pub fn failure(&self) -> Option<TurnError> {
        let end = self.end.as_ref().filter(|end| end.status == Status::Failed)?;
        let message = end.error.as_deref()?;
        Some(end.note.failure(message))
    }

    /// The response as it stands (`in_progress` until it ended), ended at `now` when it ended.
    fn response_object(&self, now: Option<i64>) -> ResponseObject<'_> {
        let end = self.end.as_ref();
        let status = end.map_or(Status::InProgress, |end| end.status);
        let state = State {
            status,
            output: &self.items,
            usage: end.and(self.usage),
            error: end.and_then(|end| {
                let message = end.error.as_deref()?;
                Some((failure_code(end.note.code.as_deref()), message))
            }),
            shortfall: end.and_then(|end| end.shortfall),
            completed_at: now.filter(|_| status == Status::Completed),
        };
        ResponseObject::new(&self.echo, &state)
    }

    fn ending(&self, reason: Option<UiFinishReason>) -> End {
        let done = |shortfall: Option<Shortfall>| End {
            status: if shortfall.is_some() {
                Status::Incomplete
            } else {
                Status::Completed
            },
            shortfall,
            error: None,
            note: FailureNote::default(),
        };
        match reason {
            Some(UiFinishReason::Error) => End {
                note: self.failure_note.clone(),
                ..failed(self.error_text.as_deref().unwrap_or("The response failed."))
            },
            Some(UiFinishReason::Length) => done(Some(Shortfall::MaxOutputTokens)),
            Some(UiFinishReason::ContentFilter) => done(Some(Shortfall::ContentFilter)),
            // A turn that ends on a call of the client's is complete: the client answers it next.
            Some(UiFinishReason::ToolCalls) if self.has_function_call() => done(None),
            Some(UiFinishReason::ToolCalls) => done(Some(Shortfall::MaxOutputTokens)),
            _ => done(None),
        }
    }

    fn has_function_call(&self) -> bool {
        self.items
            .iter()
            .any(|item| matches!(item.kind, ItemKind::FunctionCall { .. }))
    }

    /// Adds an item in progress and announces it (with its first, empty part where it has one).
    pub(super) fn open(&mut self, kind: ItemKind, out: Option<&mut Frames>) -> usize {
        let index = self.items.len();
        let prefix = match kind {
            ItemKind::Message { .. } => "msg",
            ItemKind::Reasoning { .. } => "rs",
            ItemKind::FunctionCall { .. } => "fc",
            ItemKind::McpCall { .. } => "mcp",
            ItemKind::WebSearch { .. } => "ws",
        };
        self.items.push(Item {
            id: format!("{prefix}_{}_{index}", self.stem),
            status: ItemStatus::InProgress,
            kind,
        });
        let Some(out) = out else { return index };
        let item = &self.items[index];
        out.event("response.output_item.added", whole_item(item, index));
        let at = || EventFields::of_item(&item.id, index);
        match &item.kind {
            ItemKind::Message { .. } => out.event(
                "response.content_part.added",
                EventFields {
                    content_index: Some(0),
                    part: Some(Part::Text(TextPart::new(""))),
                    ..at()
                },
            ),
            ItemKind::Reasoning { .. } => out.event(
                "response.reasoning_summary_part.added",
                EventFields {
                    summary_index: Some(0),
                    part: Some(Part::Summary(SummaryPart::new(""))),
                    ..at()
                },
            ),
            ItemKind::McpCall { arguments, .. } => {
                out.event(
                    "response.mcp_call_arguments.done",
                    EventFields {
                        arguments: Some(arguments),
                        ..at()
                    },
                );
                out.event("response.mcp_call.in_progress", at());
            }
            ItemKind::WebSearch { .. } => {
                for kind in [
                    "response.web_search_call.in_progress",
                    "response.web_search_call.searching",
                ] {
                    out.event(kind, at());
                }
            }
            ItemKind::FunctionCall { .. } => {}
        }
        index
    }

    /// Appends a delta to the open item at `index` (none: the delta belongs to nothing shown).
    pub(super) fn extend(
        &mut self,
        index: Option<usize>,
        of: DeltaOf,
        delta: &str,
        out: Option<&mut Frames>,
    ) {
        let Some(index) = index else { return };
        let item = &mut self.items[index];
        match &mut item.kind {
            ItemKind::Message { text } | ItemKind::Reasoning { text } => text.push_str(delta),
            ItemKind::FunctionCall { arguments, .. } => arguments.push_str(delta),
            ItemKind::McpCall { .. } | ItemKind::WebSearch { .. } => return,
        }
        if let Some(out) = out {
            out.delta(of, &item.id, index, delta);
        }
    }

    /// Marks the item at `index` done and announces it, after the events that close its parts.
    pub(super) fn close(&mut self, index: usize, status: ItemStatus, out: Option<&mut Frames>) {
        self.items[index].status = status;
        let Some(out) = out else { return };
        let item = &self.items[index];
        let at = || EventFields::of_item(&item.id, index);
        match &item.kind {
            ItemKind::Message { text } => {
                out.event(
                    "response.output_text.done",
                    EventFields {
                        content_index: Some(0),
                        text: Some(text),
                        logprobs: Some([]),
                        ..at()
                    },
                );
                out.event(
                    "response.content_part.done",
                    EventFields {
                        content_index: Some(0),
                        part: Some(Part::Text(TextPart::new(text))),
                        ..at()
                    },
                );
            }
            ItemKind::Reasoning { text } => {
                out.event(
                    "response.reasoning_summary_text.done",
                    EventFields {
                        summary_index: Some(0),
                        text: Some(text),
                        ..at()
                    },
                );
                out.event(
                    "response.reasoning_summary_part.done",
                    EventFields {
                        summary_index: Some(0),
                        part: Some(Part::Summary(SummaryPart::new(text))),
                        ..at()
                    },
                );
            }
            ItemKind::FunctionCall { arguments, .. } => out.event(
                "response.function_call_arguments.done",
                EventFields {
                    arguments: Some(arguments),
                    ..at()
                },
            ),
            ItemKind::McpCall { .. } => {
                let kind = if status == ItemStatus::Completed {
                    "response.mcp_call.completed"
                } else {
                    "response.mcp_call.failed"
                };
                out.event(kind, at());
            }
            ItemKind::WebSearch { .. } if status == ItemStatus::Completed => {
                out.event("response.web_search_call.completed", at());
            }
            ItemKind::WebSearch { .. } => {}
        }
        out.event("response.output_item.done", whole_item(item, index));
    }
}

/// The fields of `output_item.added` and `.done`: the item whole, and where it is.
fn whole_item(item: &Item, index: usize) -> EventFields<'_> {
    EventFields {
        item: Some(item),
        output_index: Some(index),
        ..EventFields::default()
    }
}

fn failed(message: &str) -> End {
    End {
        status: Status::Failed,
        shortfall: None,
        error: Some(message.to_owned()),
        note: FailureNote::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facade_stream::test_turns::chunk;
    use serde_json::{Map, json};

    fn translator() -> Translator {
        Translator::new(Echo {
            id: "resp_1".into(),
            created_at: 1_764_662_400,
            model: "m".into(),
            instructions: None,
            metadata: Map::new(),
            previous_response_id: None,
            tools: Vec::new(),
            tool_choice: "auto".into(),
            parallel_tool_calls: true,
            temperature: None,
            top_p: None,
            max_output_tokens: None,
            store: false,
        })
    }

    /// A turn that says some text, then ends with `last`; the stream's event types and the final
    /// response.
    fn run(last: Vec<UiChunk>) -> (Vec<String>, Value) {
        let mut translator = translator();
        let mut frames = Frames::default();
        let mut events = vec![
            chunk(UiChunk::Start {
                message_id: None,
                message_metadata: None,
            }),
            chunk(UiChunk::TextStart { id: "t".into() }),
            chunk(UiChunk::TextDelta {
                id: "t".into(),
                delta: "Part".into(),
            }),
        ];
        events.extend(last.into_iter().map(chunk));
        // Every event is pushed, those after the end too.
        let mut ended = false;
        for event in &events {
            ended |= translator.push(event, Some(&mut frames));
        }
        if !ended {
            translator.cut_short();
        }
        translator.finish(7, Some(&mut frames));
        let text = String::from_utf8(frames.take()).unwrap();
        let types = text
            .split_terminator("\n\n")
            .map(|frame| {
                frame
                    .lines()
                    .next()
                    .unwrap()
                    .trim_start_matches("event: ")
                    .to_owned()
            })
            .collect();
        (types, translator.final_response(7))
    }

    #[test]
    fn a_stopped_turn_fails_with_its_open_text_closed() {
        let (types, response) = run(vec![UiChunk::Abort {
            reason: Some("stopped".into()),
        }]);
        assert_eq!(types.last().unwrap(), "response.failed");
        assert!(
            types.contains(&"response.output_item.done".to_owned()),
            "{types:?}"
        );
        assert_eq!(response["status"], "failed");
        assert_eq!(
            response["error"],
            json!({"code": "server_error", "message": STOPPED_TEXT})
        );
        assert_eq!(response["output"][0]["content"][0]["text"], "Part");
        assert!(response.get("completed_at").is_none());
    }

    #[test]
    fn a_turn_that_ends_without_a_word_is_failed_not_completed() {
        let (types, response) = run(Vec::new());
        assert_eq!(types.last().unwrap(), "response.failed");
        assert_eq!(response["status"], "failed");
    }

    #[test]
    fn an_error_says_what_failed_and_nothing_after_the_end_counts() {
        let (types, response) = run(vec![
            UiChunk::Error {
                error_text: "The model provider could not be reached.".into(),
            },
            UiChunk::Finish {
                finish_reason: Some(UiFinishReason::Error),
                message_metadata: None,
            },
            UiChunk::TextDelta {
                id: "t".into(),
                delta: "late".into(),
            },
        ]);
        assert_eq!(types.last().unwrap(), "response.failed");
        assert_eq!(
            response["error"]["message"],
            "The model provider could not be reached."
        );
        assert_eq!(response["output"][0]["content"][0]["text"], "Part");
    }

    #[test]
    fn the_step_cap_and_the_token_cap_leave_the_response_incomplete() {
        for reason in [UiFinishReason::ToolCalls, UiFinishReason::Length] {
            let (types, response) = run(vec![
                UiChunk::TextEnd {
                    id: "t".into(),
                    citations: None,
                },
                UiChunk::Finish {
                    finish_reason: Some(reason),
                    message_metadata: None,
                },
            ]);
            assert_eq!(types.last().unwrap(), "response.incomplete");
            assert_eq!(
                response["incomplete_details"],
                json!({"reason": "max_output_tokens"})
            );
        }
        let (_, response) = run(vec![UiChunk::Finish {
            finish_reason: Some(UiFinishReason::ContentFilter),
            message_metadata: None,
        }]);
        assert_eq!(
            response["incomplete_details"],
            json!({"reason": "content_filter"})
        );
    }
}
