//! The chunks of the AI SDK UI message stream that a turn emits.
//!
//! The client validates every chunk against a strict schema in which an optional field sent as
//! `null` is an error, so every `Option` here is omitted when absent. `input` and `output` are the
//! exception: the schema requires the key, so they are always written.

use promptgate_llm::FinishReason;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::client_tools::ClientToolCall;

/// One chunk of the UI message stream, serialised exactly as `useChat` expects it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", rename_all_fields = "camelCase")]
pub enum UiChunk {
    Start {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_metadata: Option<Value>,
    },
    StartStep,
    TextStart {
        id: String,
    },
    TextDelta {
        id: String,
        delta: String,
    },
    TextEnd {
        id: String,
        /// The part's checked citations as AI SDK 7 reads them (7.0.138+); only v7 streams carry them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        citations: Option<Vec<Value>>,
    },
    ReasoningStart {
        id: String,
    },
    ReasoningDelta {
        id: String,
        delta: String,
    },
    ReasoningEnd {
        id: String,
    },
    ToolInputStart {
        tool_call_id: String,
        tool_name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dynamic: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    ToolInputDelta {
        tool_call_id: String,
        input_text_delta: String,
    },
    ToolInputAvailable {
        tool_call_id: String,
        tool_name: String,
        input: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dynamic: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    ToolOutputAvailable {
        tool_call_id: String,
        output: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dynamic: Option<bool>,
    },
    ToolOutputError {
        tool_call_id: String,
        error_text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dynamic: Option<bool>,
    },
    /// A gated call waits for the user (AI SDK 6+): the client shows approve and deny for the tool
    /// part `tool_call_id`, whose `tool-input-available` came first.
    ToolApprovalRequest {
        approval_id: String,
        tool_call_id: String,
    },
    /// The user denied the call, or its approval expired or was cancelled (AI SDK 6+).
    ToolOutputDenied {
        tool_call_id: String,
    },
    SourceUrl {
        source_id: String,
        url: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    /// A question an MCP server asks the user during a tool call (AI SDK data part
    /// `data-elicitation`). Sent again with the same `id` when it is answered or ends, which
    /// replaces the part.
    DataElicitation {
        id: String,
        data: Value,
    },
    /// A tool call waits for the user to authorize (again) the service it calls: an MCP server
    /// whose grant ended or is too narrow, an integration whose refresh token stopped working (AI
    /// SDK data part `data-authorization`). Sent again with the same `id` when the wait ends.
    DataAuthorization {
        id: String,
        data: Value,
    },
    MessageMetadata {
        message_metadata: Value,
    },
    FinishStep,
    Finish {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        finish_reason: Option<UiFinishReason>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_metadata: Option<Value>,
    },
    Abort {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    Error {
        error_text: String,
    },
}

/// Why the assistant message ended, in the stream's hyphenated spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UiFinishReason {
    Stop,
    Length,
    ContentFilter,
    ToolCalls,
    Error,
    Interrupted,
    Other,
}

impl UiFinishReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::Length => "length",
            Self::ContentFilter => "content-filter",
            Self::ToolCalls => "tool-calls",
            Self::Error => "error",
            Self::Interrupted => "interrupted",
            Self::Other => "other",
        }
    }
}

impl From<&FinishReason> for UiFinishReason {
    fn from(reason: &FinishReason) -> Self {
        match reason {
            FinishReason::Stop => Self::Stop,
            FinishReason::Length => Self::Length,
            FinishReason::ToolCalls => Self::ToolCalls,
            FinishReason::ContentFilter => Self::ContentFilter,
            FinishReason::Other(_) => Self::Other,
        }
    }
}

/// The AI SDK major a client runs, which decides the fields its UI message stream may carry.
/// Every release of a major must accept what its version is sent: the early 5.0 and 6.0 releases
/// refuse unknown keys (and the whole stream with them), so a field goes to a major only when its
/// first release accepts it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UiStreamVersion {
    /// Every release from 5.0.0 on: the chunks and fields of 5.0.0 only.
    #[default]
    V5,
    /// Every 6.x: adds tool titles and `finish.finishReason`.
    V6,
    /// Every 7.x: adds `abort.reason` and the citations of `text-end`.
    V7,
}

impl UiStreamVersion {
    /// Reads `v5`, `v6` or `v7` (any case, surrounding spaces ignored).
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim().to_ascii_lowercase().as_str() {
            "v5" => Some(Self::V5),
            "v6" => Some(Self::V6),
            "v7" => Some(Self::V7),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::V5 => "v5",
            Self::V6 => "v6",
            Self::V7 => "v7",
        }
    }
}

impl UiChunk {
    /// The chunk as a client of `version` must receive it, when that differs from the chunk the
    /// engine made (which carries everything the newest version accepts); `None` when the chunk
    /// suits it as it is, which is nearly always.
    pub fn for_version(&self, version: UiStreamVersion) -> Option<UiChunk> {
        let titles = version >= UiStreamVersion::V6;
        match self {
            Self::ToolInputStart {
                tool_call_id,
                tool_name,
                dynamic,
                title: Some(_),
            } if !titles => Some(Self::ToolInputStart {
                tool_call_id: tool_call_id.clone(),
                tool_name: tool_name.clone(),
                dynamic: *dynamic,
                title: None,
            }),
            Self::ToolInputAvailable {
                tool_call_id,
                tool_name,
                input,
                dynamic,
                title: Some(_),
            } if !titles => Some(Self::ToolInputAvailable {
                tool_call_id: tool_call_id.clone(),
                tool_name: tool_name.clone(),
                input: input.clone(),
                dynamic: *dynamic,
                title: None,
            }),
            Self::Finish {
                finish_reason: Some(reason),
                message_metadata,
            } => {
                // 5.0.0 to 5.0.91 refuse the field; `interrupted` is known from 7.0.149 only.
                let sent = match reason {
                    _ if version == UiStreamVersion::V5 => None,
                    UiFinishReason::Interrupted => Some(UiFinishReason::Other),
                    _ => return None,
                };
                Some(Self::Finish {
                    finish_reason: sent,
                    message_metadata: message_metadata.clone(),
                })
            }
            // Strict 5.x and 6.x releases refuse unknown fields; citations are a 7.x field.
            Self::TextEnd {
                id,
                citations: Some(_),
            } if version < UiStreamVersion::V7 => Some(Self::TextEnd {
                id: id.clone(),
                citations: None,
            }),
            // Every 5.x refuses a reason, and 6.0.0 to 6.0.14 do too.
            Self::Abort { reason: Some(_) } if version < UiStreamVersion::V7 => {
                Some(Self::Abort { reason: None })
            }
            _ => None,
        }
    }
}

/// What a turn yields to its transport.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEvent {
    Chunk(UiChunk),
    /// The model called a tool the client runs (a facade's own tools). These come after the
    /// turn's last step, just before its `finish` (reason `tool-calls`); the UI message stream
    /// has no such part and leaves them out.
    ClientToolCall(ClientToolCall),
    /// Nothing was sent for a while (a long tool call); the transport should write a heartbeat
    /// so proxies keep the connection open.
    KeepAlive,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn wire(chunk: UiChunk) -> Value {
        serde_json::to_value(chunk).unwrap_or(Value::Null)
    }

    #[test]
    fn start_carries_id_and_metadata_and_omits_absent_fields() {
        let chunk = UiChunk::Start {
            message_id: Some("msg_1".into()),
            message_metadata: Some(json!({"modelId": "m", "turnId": "t"})),
        };
        assert_eq!(
            wire(chunk),
            json!({"type": "start", "messageId": "msg_1", "messageMetadata": {"modelId": "m", "turnId": "t"}})
        );
        assert_eq!(
            wire(UiChunk::Start {
                message_id: None,
                message_metadata: None
            }),
            json!({"type": "start"})
        );
    }

    #[test]
    fn step_delimiters_have_only_a_type() {
        assert_eq!(wire(UiChunk::StartStep), json!({"type": "start-step"}));
        assert_eq!(wire(UiChunk::FinishStep), json!({"type": "finish-step"}));
    }

    #[test]
    fn text_chunks() {
        assert_eq!(
            wire(UiChunk::TextStart { id: "t1".into() }),
            json!({"type": "text-start", "id": "t1"})
        );
        assert_eq!(
            wire(UiChunk::TextDelta {
                id: "t1".into(),
                delta: "Hi".into()
            }),
            json!({"type": "text-delta", "id": "t1", "delta": "Hi"})
        );
        assert_eq!(
            wire(UiChunk::TextEnd {
                id: "t1".into(),
                citations: None
            }),
            json!({"type": "text-end", "id": "t1"})
        );
    }

    #[test]
    fn reasoning_chunks() {
        assert_eq!(
            wire(UiChunk::ReasoningStart { id: "r1".into() }),
            json!({"type": "reasoning-start", "id": "r1"})
        );
        assert_eq!(
            wire(UiChunk::ReasoningDelta {
                id: "r1".into(),
                delta: "hmm".into()
            }),
            json!({"type": "reasoning-delta", "id": "r1", "delta": "hmm"})
        );
        assert_eq!(
            wire(UiChunk::ReasoningEnd { id: "r1".into() }),
            json!({"type": "reasoning-end", "id": "r1"})
        );
    }

    #[test]
    fn tool_input_start_with_and_without_optional_fields() {
        let full = UiChunk::ToolInputStart {
            tool_call_id: "call_1".into(),
            tool_name: "srv_echo".into(),
            dynamic: Some(true),
            title: Some("Echoing...".into()),
        };
        assert_eq!(
            wire(full),
            json!({"type": "tool-input-start", "toolCallId": "call_1", "toolName": "srv_echo", "dynamic": true, "title": "Echoing..."})
        );
        let bare = UiChunk::ToolInputStart {
            tool_call_id: "call_1".into(),
            tool_name: "search".into(),
            dynamic: None,
            title: None,
        };
        assert_eq!(
            wire(bare),
            json!({"type": "tool-input-start", "toolCallId": "call_1", "toolName": "search"})
        );
    }

    #[test]
    fn tool_input_delta() {
        let chunk = UiChunk::ToolInputDelta {
            tool_call_id: "c".into(),
            input_text_delta: "{\"q".into(),
        };
        assert_eq!(
            wire(chunk),
            json!({"type": "tool-input-delta", "toolCallId": "c", "inputTextDelta": "{\"q"})
        );
    }

    #[test]
    fn tool_input_available_always_has_input_even_when_null() {
        let chunk = UiChunk::ToolInputAvailable {
            tool_call_id: "c".into(),
            tool_name: "search".into(),
            input: Value::Null,
            dynamic: None,
            title: Some("Searching...".into()),
        };
        assert_eq!(
            wire(chunk),
            json!({"type": "tool-input-available", "toolCallId": "c", "toolName": "search", "input": null, "title": "Searching..."})
        );
    }

    #[test]
    fn tool_output_chunks() {
        let ok = UiChunk::ToolOutputAvailable {
            tool_call_id: "c".into(),
            output: json!({"n": 1}),
            dynamic: Some(true),
        };
        assert_eq!(
            wire(ok),
            json!({"type": "tool-output-available", "toolCallId": "c", "output": {"n": 1}, "dynamic": true})
        );
        let null_output = UiChunk::ToolOutputAvailable {
            tool_call_id: "c".into(),
            output: Value::Null,
            dynamic: None,
        };
        assert_eq!(
            wire(null_output),
            json!({"type": "tool-output-available", "toolCallId": "c", "output": null})
        );
        let err = UiChunk::ToolOutputError {
            tool_call_id: "c".into(),
            error_text: "boom".into(),
            dynamic: None,
        };
        assert_eq!(
            wire(err),
            json!({"type": "tool-output-error", "toolCallId": "c", "errorText": "boom"})
        );
    }

    #[test]
    fn source_url() {
        let chunk = UiChunk::SourceUrl {
            source_id: "1".into(),
            url: "https://a.example".into(),
            title: None,
        };
        assert_eq!(
            wire(chunk),
            json!({"type": "source-url", "sourceId": "1", "url": "https://a.example"})
        );
        let titled = UiChunk::SourceUrl {
            source_id: "2".into(),
            url: "https://b.example".into(),
            title: Some("B".into()),
        };
        assert_eq!(
            wire(titled),
            json!({"type": "source-url", "sourceId": "2", "url": "https://b.example", "title": "B"})
        );
    }

    #[test]
    fn message_metadata() {
        let chunk = UiChunk::MessageMetadata {
            message_metadata: json!({"modelId": "m"}),
        };
        assert_eq!(
            wire(chunk),
            json!({"type": "message-metadata", "messageMetadata": {"modelId": "m"}})
        );
    }

    #[test]
    fn finish_uses_hyphenated_reasons() {
        let cases = [
            (FinishReason::Stop, "stop"),
            (FinishReason::Length, "length"),
            (FinishReason::ToolCalls, "tool-calls"),
            (FinishReason::ContentFilter, "content-filter"),
            (FinishReason::Other("weird".into()), "other"),
        ];
        for (reason, expected) in cases {
            let chunk = UiChunk::Finish {
                finish_reason: Some(UiFinishReason::from(&reason)),
                message_metadata: None,
            };
            assert_eq!(wire(chunk), json!({"type": "finish", "finishReason": expected}));
        }
        assert_eq!(
            wire(UiChunk::Finish {
                finish_reason: None,
                message_metadata: None
            }),
            json!({"type": "finish"})
        );
    }

    #[test]
    fn abort_and_error() {
        assert_eq!(
            wire(UiChunk::Abort {
                reason: Some("stopped".into())
            }),
            json!({"type": "abort", "reason": "stopped"})
        );
        assert_eq!(wire(UiChunk::Abort { reason: None }), json!({"type": "abort"}));
        assert_eq!(
            wire(UiChunk::Error {
                error_text: "The model is unavailable.".into()
            }),
            json!({"type": "error", "errorText": "The model is unavailable."})
        );
    }

    #[test]
    fn each_version_gets_only_the_fields_its_first_release_accepts() {
        let titled = UiChunk::ToolInputStart {
            tool_call_id: "c".into(),
            tool_name: "search".into(),
            dynamic: None,
            title: Some("Searching...".into()),
        };
        let finish = UiChunk::Finish {
            finish_reason: Some(UiFinishReason::ToolCalls),
            message_metadata: None,
        };
        let abort = UiChunk::Abort {
            reason: Some("stopped".into()),
        };
        let sent =
            |chunk: &UiChunk, version| wire(chunk.for_version(version).unwrap_or_else(|| chunk.clone()));
        assert_eq!(
            sent(&titled, UiStreamVersion::V5),
            json!({"type": "tool-input-start", "toolCallId": "c", "toolName": "search"})
        );
        assert_eq!(sent(&titled, UiStreamVersion::V6)["title"], "Searching...");
        assert_eq!(sent(&finish, UiStreamVersion::V5), json!({"type": "finish"}));
        assert_eq!(sent(&finish, UiStreamVersion::V6)["finishReason"], "tool-calls");
        assert_eq!(sent(&abort, UiStreamVersion::V6), json!({"type": "abort"}));
        assert_eq!(sent(&abort, UiStreamVersion::V7)["reason"], "stopped");
        let interrupted = UiChunk::Finish {
            finish_reason: Some(UiFinishReason::Interrupted),
            message_metadata: None,
        };
        assert_eq!(sent(&interrupted, UiStreamVersion::V7)["finishReason"], "other");
        assert_eq!(UiChunk::StartStep.for_version(UiStreamVersion::V5), None);
        for chunk in [&titled, &finish, &abort] {
            assert_eq!(
                chunk.for_version(UiStreamVersion::V7),
                None,
                "the engine's chunk as it is"
            );
        }
        assert_eq!(UiStreamVersion::parse(" V6 "), Some(UiStreamVersion::V6));
        assert_eq!(UiStreamVersion::parse("v8"), None);
    }

    #[test]
    fn chunks_read_back_from_their_wire_form() {
        let chunk = UiChunk::ToolInputAvailable {
            tool_call_id: "c".into(),
            tool_name: "t".into(),
            input: json!({"a": 1}),
            dynamic: Some(true),
            title: None,
        };
        let back: UiChunk = serde_json::from_value(wire(chunk.clone())).unwrap_or(UiChunk::StartStep);
        assert_eq!(back, chunk);
    }
}
