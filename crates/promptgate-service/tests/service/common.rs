//! A service as a server builds it, over a test database and a scripted upstream, and the sends the
//! tests make through it.

// Test support: a failure here should fail the test loudly.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use futures::StreamExt;
use promptgate_core::settings::Model;
use promptgate_llm::scripted::ScriptedUpstream;
use promptgate_service::deployment::{
    FetchPolicy, HubSettings, JSON_LINES, ProviderKind, ProviderSettings, SecretsSettings, ServiceConfig,
    Settings, ThinkingMode, Timeouts,
};
use promptgate_service::events::{TurnEvent, UiChunk};
use promptgate_service::records::{Message, Role};
use promptgate_service::{Database, SendHandle, SendInput, SendRequest, Service};
use promptgate_store::Store;
use serde_json::json;

/// The single user every test sends as.
pub const USER: &str = "ada";
/// The model the scripted upstream answers for.
pub const MODEL: &str = "scripted";

pub async fn upstream() -> ScriptedUpstream {
    ScriptedUpstream::start().await.unwrap()
}

/// The service an instance runs over `store`, with `tune` applied to its configuration.
pub async fn service(
    store: Store,
    upstream: &ScriptedUpstream,
    tune: impl FnOnce(&mut ServiceConfig),
) -> Service {
    service_with(store, vec![provider(MODEL, upstream)], vec![model()], tune).await
}

/// A fresh upstream and the service over `store` that sends to it, untuned.
pub async fn plain_service(store: &Store) -> (ScriptedUpstream, Service) {
    let upstream = upstream().await;
    let service = service(store.clone(), &upstream, |_| {}).await;
    (upstream, service)
}

/// An OpenAI-compatible provider `name` answering from `upstream`.
pub fn provider(name: &str, upstream: &ScriptedUpstream) -> ProviderSettings {
    ProviderSettings {
        name: name.to_owned(),
        kind: ProviderKind::OpenAi,
        base_url: Some(upstream.base_url()),
        api_key: None,
        timeouts: Timeouts::default(),
        max_tokens: None,
        allowed_request_fields: Vec::new(),
        thinking: ThinkingMode::default(),
        whole_answers: true,
    }
}

/// [`service`] with these providers and system models (the first model is the default).
pub async fn service_with(
    store: Store,
    providers: Vec<ProviderSettings>,
    models: Vec<Model>,
    tune: impl FnOnce(&mut ServiceConfig),
) -> Service {
    let mut config = ServiceConfig {
        default_model: models.first().map(|m| m.id.clone()).unwrap_or_default(),
        ..ServiceConfig::default()
    };
    tune(&mut config);
    let settings = Settings {
        service: config,
        providers,
        search: None,
        fetch: FetchPolicy::default(),
        budget_promotion: false,
        mcp: HubSettings::default(),
        integrations: None,
        secrets: SecretsSettings {
            key: None,
            variable: "PROMPTGATE_TOKEN_KEY".to_owned(),
        },
        system_models: models,
        local_user: Some((USER.to_owned(), "Ada".to_owned())),
        encoding: JSON_LINES,
    };
    Service::start(Database::from_store(store), settings)
        .await
        .unwrap()
}

/// The model the scripted upstream answers for.
pub fn model() -> Model {
    Model {
        id: MODEL.to_owned(),
        name: "Scripted".to_owned(),
        provider: MODEL.to_owned(),
        upstream_model: "upstream-model".to_owned(),
        tool_usage: 1,
        supports_parallel_tool_calls: true,
        system: true,
        ..Model::default()
    }
}

/// Waits (up to ten seconds) until `done` holds; a running turn reaches its model in the background.
pub async fn until(what: &str, done: impl Fn() -> bool) {
    for _ in 0..1000 {
        if done() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("{what}: not within ten seconds");
}

/// A new user message in `thread`, created on first use as useChat's endpoint does.
pub fn message(thread: &str, id: Option<&str>, text: &str) -> SendRequest {
    let input = SendInput::Message {
        id: id.map(str::to_owned),
        parts: vec![json!({"type": "text", "text": text})],
    };
    SendRequest {
        create_thread: true,
        ..SendRequest::new(USER, thread, input)
    }
}

/// The same message as an automatic retry of `turn`.
pub fn retry(mut request: SendRequest, turn: &str) -> SendRequest {
    request.retry_of = Some(turn.to_owned());
    request
}

/// Reads a started turn to its end and returns the text it streamed. The answer is stored and the
/// thread free by then.
/// Sends `request` and reads its answer to the end; the turn's id, for a retry to name.
pub async fn finished_turn(service: &Service, request: SendRequest) -> String {
    let handle = service.send(request).await.unwrap();
    let turn = handle.turn_id.clone();
    finish(handle).await;
    turn
}

pub async fn finish(handle: SendHandle) -> String {
    let mut text = String::new();
    let mut events = handle.events;
    while let Some(event) = events.next().await {
        if let TurnEvent::Chunk(UiChunk::TextDelta { delta, .. }) = event {
            text.push_str(&delta);
        }
    }
    text
}

/// More messages than any test thread holds, so one page is the whole conversation.
const WHOLE_THREAD: u32 = 1_000;

/// `(role, text)` of each message, as the conversation reads now (or with the replaced ones).
pub async fn conversation(service: &Service, thread: &str, replaced: bool) -> Vec<(&'static str, String)> {
    let page = service
        .messages(USER, thread, replaced, None, WHOLE_THREAD)
        .await
        .unwrap();
    assert!(!page.more, "a test thread fits in one page");
    page.items.iter().map(|m| (role(m), text_of(m))).collect()
}

fn role(message: &Message) -> &'static str {
    match message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

/// The text parts of a stored message, joined.
pub fn text_of(message: &Message) -> String {
    message
        .parts
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|part| part.get("text").and_then(|t| t.as_str()))
        .collect()
}
