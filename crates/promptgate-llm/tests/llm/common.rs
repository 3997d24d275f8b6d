//! What the llm tests share: the scripted upstream, clients of it, requests, and a stream read to its
//! end.

// A failed setup should stop the test loudly.
#![allow(dead_code, clippy::expect_used)]

use std::sync::Once;
use std::time::Duration;

use futures::StreamExt;
use promptgate_llm::scripted::ScriptedUpstream;
use promptgate_llm::{
    ChatMessage, ChatModel, ChatRequest, LlmError, OpenAiCompatible, ParserOptions, ProviderConfig,
    StreamEvent, Timeouts, ToolCall, ToolCallAssembler, UserContent,
};

pub fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

pub async fn upstream() -> ScriptedUpstream {
    init();
    ScriptedUpstream::start()
        .await
        .expect("the scripted upstream binds a loopback port")
}

pub fn config(upstream: &ScriptedUpstream) -> ProviderConfig {
    let mut config = ProviderConfig::new("scripted", upstream.base_url());
    config.api_key = Some("sk-test-secret".to_owned());
    config
}

pub fn client(upstream: &ScriptedUpstream) -> OpenAiCompatible {
    OpenAiCompatible::new(config(upstream)).expect("a valid provider config")
}

pub fn with_timeouts(upstream: &ScriptedUpstream, first_byte_ms: u64, idle_ms: u64) -> OpenAiCompatible {
    let mut config = config(upstream);
    config.timeouts = Timeouts {
        connect: Duration::from_secs(5),
        first_byte: Duration::from_millis(first_byte_ms),
        idle: Duration::from_millis(idle_ms),
        ..Timeouts::default()
    };
    OpenAiCompatible::new(config).expect("a valid provider config")
}

pub fn with_think_tags(upstream: &ScriptedUpstream) -> OpenAiCompatible {
    client(upstream).with_parser_options(ParserOptions {
        think_tags: true,
        start_with_reasoning: false,
    })
}

pub fn ask(text: &str) -> ChatRequest {
    ChatRequest {
        model: "test-model".to_owned(),
        messages: vec![
            ChatMessage::System {
                content: "Be brief.".to_owned(),
            },
            ChatMessage::User {
                content: UserContent::Text(text.to_owned()),
            },
        ],
        ..ChatRequest::default()
    }
}

/// [`ask`], with the answer asked for whole rather than streamed.
pub fn ask_whole(text: &str) -> ChatRequest {
    ChatRequest {
        whole_answer: true,
        ..ask(text)
    }
}

/// Everything a stream yields: its events up to the first error, and that error.
pub struct Outcome {
    pub events: Vec<StreamEvent>,
    pub error: Option<LlmError>,
}

impl Outcome {
    pub fn text(&self) -> String {
        self.streams().0
    }

    pub fn reasoning(&self) -> String {
        self.streams().1
    }

    /// The text and the reasoning the events add up to.
    fn streams(&self) -> (String, String) {
        let (mut text, mut reasoning) = (String::new(), String::new());
        for event in &self.events {
            match event {
                StreamEvent::TextDelta(t) => text.push_str(t),
                StreamEvent::ReasoningDelta(r) => reasoning.push_str(r),
                _ => {}
            }
        }
        (text, reasoning)
    }

    pub fn tool_calls(&self) -> Vec<ToolCall> {
        let mut assembler = ToolCallAssembler::new();
        self.events.iter().for_each(|e| assembler.push(e));
        assembler.finish()
    }

    pub fn last(&self) -> Option<&StreamEvent> {
        self.events.last()
    }
}

/// The error (or none) of each request, sent one after the other: for a queue of refusals.
pub async fn next_errors(
    model: &dyn ChatModel,
    requests: impl IntoIterator<Item = ChatRequest>,
) -> Vec<Option<LlmError>> {
    let mut errors = Vec::new();
    for request in requests {
        errors.push(run(model, request).await.error);
    }
    errors
}

pub async fn run(model: &dyn ChatModel, request: ChatRequest) -> Outcome {
    let mut stream = match model.stream(request).await {
        Ok(stream) => stream,
        Err(error) => {
            return Outcome {
                events: Vec::new(),
                error: Some(error),
            };
        }
    };
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(error) => {
                return Outcome {
                    events,
                    error: Some(error),
                };
            }
        }
    }
    Outcome { events, error: None }
}

/// A plain POST, for checking the scripted upstream without the client in between.
/// Returns the status, the content type and the body.
pub async fn post(url: &str, body: serde_json::Value) -> (u16, String, String) {
    let response = reqwest::Client::new()
        .post(url)
        .json(&body)
        .send()
        .await
        .expect("the upstream answers");
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (status, kind, response.text().await.expect("a body"))
}
