//! Traces: the gateway exports its spans over OTLP/HTTP to a real receiver on loopback, which decodes
//! them with the official protobuf definitions (`opentelemetry-proto`). A send that calls a web tool,
//! an MCP tool and an integration tool, and a chat completions, Responses or Messages request (the
//! last two from the official clients), are each one trace: the caller's, continued from its
//! `traceparent`, with the GenAI and MCP conventions' spans and attributes; the model upstream and
//! the MCP server receive the trace context. A send's store calls are client spans under the
//! database conventions, on both stores.
//!
//! The exporter is the process's one subscriber: it is installed once, and each test finds its own
//! spans by the trace id it sent. One test exports over OTLP/gRPC instead, to a tonic server
//! serving the official TraceService.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use promptgate_llm::scripted::{ScriptedUpstream, text, tool_calls};
use promptgate_mcp::testing::McpTestServer;
use promptgate_server::config::{AuthMode, OtlpProtocol, TelemetryConfig};
use prost::Message;
use reqwest::StatusCode;
use rmcp::model::{CallToolResult, ContentBlock, Tool};
use serde_json::{Value, json};

use crate::common::{
    self, Backend, Gateway, NEWEST_UI_STREAM, ToolsServer, one_string_argument, scripted_config_with,
    use_chat_body,
};
use crate::integrations_turn::{FakeEnv, connect, fake_google, google_integrations};
use crate::web_site::Web;

/// One exported span and the `service.name` of its resource.
#[derive(Clone)]
struct Exported {
    service: String,
    span: Span,
}

/// The receiver's address and everything it has decoded.
struct Receiver {
    spans: Arc<Mutex<Vec<Exported>>>,
}

/// Starts the receiver (on a thread of its own, so it outlives each test's runtime) and installs the
/// gateway's subscriber with export to it, once per process.
fn receiver() -> &'static Receiver {
    installed(false)
}

/// The receiver, the exporter installed with `capture_content` as given on the first call (each
/// test runs in its own process, so a test that wants content asks for it before anything else).
fn installed(capture_content: bool) -> &'static Receiver {
    install(capture_content, OtlpProtocol::HttpProtobuf)
}

/// The receiver for `protocol` (an OTLP/HTTP endpoint, or the gRPC TraceService), and the exporter
/// installed to send to it, on the first call in the process.
fn install(capture_content: bool, protocol: OtlpProtocol) -> &'static Receiver {
    static RECEIVER: OnceLock<Receiver> = OnceLock::new();
    RECEIVER.get_or_init(|| {
        common::init();
        let spans: Arc<Mutex<Vec<Exported>>> = Arc::default();
        let kept = Arc::clone(&spans);
        let (bound, address) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                bound.send(listener.local_addr().unwrap()).unwrap();
                match protocol {
                    OtlpProtocol::HttpProtobuf => {
                        let app = Router::new().route("/v1/traces", post(collect)).with_state(kept);
                        axum::serve(listener, app).await.unwrap();
                    }
                    OtlpProtocol::Grpc => {
                        tonic::transport::Server::builder()
                            .add_service(TraceServiceServer::new(GrpcCollector(kept)))
                            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
                            .await
                            .unwrap();
                    }
                }
            });
        });
        let address = address.recv().unwrap();
        let config = TelemetryConfig {
            enabled: true,
            endpoint: Some(format!("http://{address}")),
            protocol,
            service_name: "promptgate-test".to_owned(),
            capture_content,
            ..TelemetryConfig::default()
        };
        promptgate_server::logging::init(Some(&config));
        assert!(
            promptgate_server::telemetry::enabled(),
            "another subscriber was installed before the exporter"
        );
        Receiver { spans }
    })
}

/// `POST /v1/traces` as a collector answers it: protobuf in, an empty protobuf answer out.
async fn collect(State(spans): State<Arc<Mutex<Vec<Exported>>>>, body: Bytes) -> impl IntoResponse {
    keep(&spans, ExportTraceServiceRequest::decode(body).unwrap());
    (
        [(header::CONTENT_TYPE, "application/x-protobuf")],
        ExportTraceServiceResponse::default().encode_to_vec(),
    )
}

/// The OTLP TraceService over gRPC, as the code generated from the official definitions serves it.
struct GrpcCollector(Arc<Mutex<Vec<Exported>>>);

#[tonic::async_trait]
impl TraceService for GrpcCollector {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        keep(&self.0, request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

/// Keeps the spans of one export request, each with its resource's `service.name`.
fn keep(spans: &Mutex<Vec<Exported>>, request: ExportTraceServiceRequest) {
    let mut kept = spans.lock().unwrap();
    for resource_spans in request.resource_spans {
        let resource = resource_spans.resource.unwrap_or_default();
        let service = string(&resource.attributes, "service.name").unwrap_or_default();
        for scope in resource_spans.scope_spans {
            kept.extend(scope.spans.into_iter().map(|span| Exported {
                service: service.clone(),
                span,
            }));
        }
    }
}

fn value<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a Any> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
}

fn string(attributes: &[KeyValue], key: &str) -> Option<String> {
    match value(attributes, key)? {
        Any::StringValue(s) => Some(s.clone()),
        _ => None,
    }
}

fn boolean(attributes: &[KeyValue], key: &str) -> Option<bool> {
    match value(attributes, key)? {
        Any::BoolValue(b) => Some(*b),
        _ => None,
    }
}

fn int(attributes: &[KeyValue], key: &str) -> Option<i64> {
    match value(attributes, key)? {
        Any::IntValue(i) => Some(*i),
        _ => None,
    }
}

/// Asserts each `(key, value)`: the span's string attribute `key` is `value`.
fn assert_strings(span: &Span, expected: &[(&str, &str)]) {
    for (key, want) in expected {
        assert_eq!(
            string(&span.attributes, key).as_deref(),
            Some(*want),
            "{}: {key}",
            span.name
        );
    }
}

/// A trace as the receiver got it.
struct Trace(Vec<Exported>);

impl Trace {
    /// The spans of trace `trace_id` once `complete` holds for them (the exporter is flushed while
    /// waiting; a turn's last spans close just after its stream ends).
    async fn wait(trace_id: &str, complete: impl Fn(&Trace) -> bool) -> Trace {
        let receiver = receiver();
        for _ in 0..200 {
            tokio::task::spawn_blocking(promptgate_server::telemetry::flush)
                .await
                .unwrap();
            let spans = receiver
                .spans
                .lock()
                .unwrap()
                .iter()
                .filter(|e| hex::encode(&e.span.trace_id) == trace_id)
                .cloned()
                .collect();
            let trace = Trace(spans);
            if complete(&trace) {
                return trace;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let names: Vec<String> = receiver
            .spans
            .lock()
            .unwrap()
            .iter()
            .map(|e| format!("{} {}", e.span.name, hex::encode(&e.span.trace_id)))
            .collect();
        panic!("trace {trace_id} never completed; spans received: {names:?}");
    }

    fn named(&self, name: &str) -> Vec<&Span> {
        self.0
            .iter()
            .map(|e| &e.span)
            .filter(|s| s.name == name)
            .collect()
    }

    fn one(&self, name: &str) -> &Span {
        let found = self.named(name);
        assert_eq!(found.len(), 1, "spans named {name:?}: {:?}", self.names());
        found[0]
    }

    fn names(&self) -> Vec<&str> {
        self.0.iter().map(|e| e.span.name.as_str()).collect()
    }
}

/// The trace of a request to `route` that ran a turn of one model call, once complete: the caller's
/// trace (`caller` is the caller's span), the turn under the request and the call under the turn,
/// which ended with `stop`.
async fn one_call_trace(trace_id: &str, caller: &str, route: &str) -> Trace {
    let server_name = format!("POST {route}");
    let trace = Trace::wait(trace_id, |t| {
        t.named(&server_name).len() == 1
            && t.named("invoke_agent promptgate").len() == 1
            && t.named("chat upstream-model").len() == 1
    })
    .await;
    let server_span = trace.one(&server_name);
    assert_eq!(
        hex::encode(&server_span.parent_span_id),
        caller,
        "{route} continues the caller's trace"
    );
    let agent = trace.one("invoke_agent promptgate");
    assert_eq!(agent.parent_span_id, server_span.span_id, "{route}");
    let chat = trace.one("chat upstream-model");
    assert_eq!(chat.parent_span_id, agent.span_id, "{route}");
    assert_eq!(
        string(&chat.attributes, "gen_ai.response.finish_reasons").as_deref(),
        Some("stop"),
        "{route}"
    );
    trace
}

/// A fresh W3C trace context of the test's caller: (trace id, parent span id, `traceparent`).
fn caller_context() -> (String, String, String) {
    let trace_id = uuid::Uuid::new_v4().simple().to_string();
    let parent = uuid::Uuid::new_v4().simple().to_string()[..16].to_owned();
    let header = format!("00-{trace_id}-{parent}-01");
    (trace_id, parent, header)
}

/// The (trace id, parent span id) of a `traceparent` value.
fn parse_traceparent(header: &str) -> (String, String) {
    let parts: Vec<&str> = header.split('-').collect();
    assert_eq!(parts.len(), 4, "{header}");
    (parts[1].to_owned(), parts[2].to_owned())
}

/// Sends `words` in `thread` through `POST /v1/chat` (the newest UI stream) as a caller with
/// `traceparent`, and reads the answer's stream.
async fn traced_send(gw: &Gateway, traceparent: &str, thread: &str, words: &str) -> common::Sse {
    let res = gw
        .http
        .post(gw.url("/v1/chat"))
        .header(NEWEST_UI_STREAM.0, NEWEST_UI_STREAM.1)
        .header("traceparent", traceparent)
        .json(&use_chat_body(thread, words, "scripted"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    common::parse_sse(StatusCode::OK, Default::default(), &res.text().await.unwrap())
}

/// An MCP server with one tool, `lookup`, that keeps the `_meta.traceparent` and the
/// `traceparent` header of every call.
#[derive(Clone, Default)]
struct Notes {
    traceparents: Arc<Mutex<Vec<Option<String>>>>,
    headers: Arc<Mutex<Vec<Option<String>>>>,
}

impl Notes {
    async fn start(&self) -> McpTestServer {
        let lookup = Tool::new("lookup", "Look up a note", one_string_argument("topic"));
        let notes = self.clone();
        ToolsServer::new("notes", "1.0.0", vec![lookup], move |_, context| {
            // rmcp hands the request's `_meta` to the handler in its context.
            let traceparent = context.meta.0.get_traceparent().map(str::to_owned);
            notes.traceparents.lock().unwrap().push(traceparent);
            // The streamable HTTP server puts the request's head into the context's extensions.
            let header = context
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|parts| parts.headers.get("traceparent"))
                .map(|v| v.to_str().unwrap().to_owned());
            notes.headers.lock().unwrap().push(header);
            CallToolResult::success(vec![ContentBlock::text("high water at 14:10")])
        })
        .start()
        .await
    }
}

/// The user's words, which no span may carry unless the operator asks for content.
const SECRET_WORDS: &str = "when is high water at the harbour";

#[tokio::test]
async fn a_send_with_web_mcp_and_integration_tools_is_one_trace_with_the_genai_spans() {
    receiver();
    let upstream = ScriptedUpstream::start().await.unwrap();
    let web = Web::start().await;
    let (google, _hits) = fake_google().await;
    let mut config = scripted_config_with(AuthMode::SingleUser, &upstream.base_url(), &web.config_section());
    config.integrations = Some(google_integrations(&google));
    config.telemetry.trace_ui_url = Some("http://traces.example/trace/{trace_id}".to_owned());
    let gw = Gateway::start_with_env(Backend::Sqlite, config, &FakeEnv).await;
    connect(&gw).await;
    let notes = Notes::default();
    let server = notes.start().await;
    gw.register_mcp_server("Notes", &server.url()).await;

    let page = json!({"url": web.page("/tides")}).to_string();
    upstream.push(tool_calls(&[
        ("call_web", "search", &[r#"{"query": "harbour tides"}"#]),
        ("call_page", "fetch_content", &[page.as_str()]),
        ("call_mcp", "notes_lookup", &[r#"{"topic": "tides"}"#]),
        ("call_mail", "google_check_inbox", &[r#"{"max_results": 2}"#]),
    ]));
    upstream.push(text(["High water is at 14:10."]));
    let (trace_id, caller_span, traceparent) = caller_context();
    let answer = traced_send(&gw, &traceparent, "tides", SECRET_WORDS).await;
    assert_eq!(answer.text(), "High water is at 14:10.");
    // The answer names its trace, and its page in the configured trace UI.
    let start = answer.of_type("start")[0]["messageMetadata"].clone();
    assert_eq!(start["traceId"], trace_id, "{start}");
    assert_eq!(
        start["traceUrl"],
        format!("http://traces.example/trace/{trace_id}")
    );

    let trace = Trace::wait(&trace_id, |t| {
        t.named("POST /v1/chat").len() == 1
            && t.named("invoke_agent promptgate").len() == 1
            && t.named("chat upstream-model").len() == 2
            && t.0
                .iter()
                .filter(|e| e.span.name.starts_with("execute_tool "))
                .count()
                == 4
            && t.named("tools/call lookup").len() == 1
            && t.named("search SearXNG").len() == 1
            && t.named("GET").len() == 1
    })
    .await;
    assert!(trace.0.iter().all(|e| e.service == "promptgate-test"));

    // The request continues the caller's trace; the turn, its model calls and tools nest under it.
    let server_span = trace.one("POST /v1/chat");
    assert_eq!(hex::encode(&server_span.parent_span_id), caller_span);
    assert_eq!(server_span.kind, SpanKind::Server as i32);
    assert_eq!(
        string(&server_span.attributes, "http.route").as_deref(),
        Some("/v1/chat")
    );
    assert_eq!(
        int(&server_span.attributes, "http.response.status_code"),
        Some(200)
    );
    let agent = trace.one("invoke_agent promptgate");
    assert_eq!(agent.parent_span_id, server_span.span_id);
    assert_strings(
        agent,
        &[
            ("gen_ai.operation.name", "invoke_agent"),
            ("gen_ai.provider.name", "openai"),
            ("gen_ai.request.model", "upstream-model"),
        ],
    );
    assert_eq!(int(&agent.attributes, "gen_ai.usage.input_tokens"), Some(20));

    let chats = trace.named("chat upstream-model");
    let mut finishes = Vec::new();
    for chat in &chats {
        assert_eq!(chat.parent_span_id, agent.span_id);
        assert_eq!(chat.kind, SpanKind::Client as i32);
        assert_strings(
            chat,
            &[
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.provider.name", "openai"),
                ("gen_ai.request.model", "upstream-model"),
            ],
        );
        assert_eq!(int(&chat.attributes, "gen_ai.usage.input_tokens"), Some(10));
        assert_eq!(boolean(&chat.attributes, "gen_ai.request.stream"), Some(true));
        finishes.push(string(&chat.attributes, "gen_ai.response.finish_reasons").unwrap());
    }
    finishes.sort();
    assert_eq!(finishes, ["stop", "tool_calls"]);

    // Each tool call: its id, the conventions' type and where it ran.
    let tools: HashMap<String, &Span> = trace
        .0
        .iter()
        .filter(|e| e.span.name.starts_with("execute_tool "))
        .map(|e| {
            (
                string(&e.span.attributes, "gen_ai.tool.call.id").unwrap(),
                &e.span,
            )
        })
        .collect();
    for (call, name, kind, origin) in [
        ("call_web", "search", "function", "built_in"),
        ("call_page", "fetch_content", "function", "built_in"),
        ("call_mcp", "notes_lookup", "extension", "mcp"),
        ("call_mail", "google_check_inbox", "function", "integration"),
    ] {
        let span = tools[call];
        assert_eq!(span.name, format!("execute_tool {name}"));
        assert_eq!(span.parent_span_id, agent.span_id);
        assert_strings(
            span,
            &[
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", name),
                ("gen_ai.tool.type", kind),
                ("promptgate.tool.origin", origin),
            ],
        );
    }

    // The web tools' requests are client spans under their tool calls.
    let search = trace.one("search SearXNG");
    assert_eq!(search.parent_span_id, tools["call_web"].span_id);
    assert_eq!(search.kind, SpanKind::Client as i32);
    assert_eq!(int(&search.attributes, "http.response.status_code"), Some(200));
    let fetch = trace.one("GET");
    assert_eq!(fetch.parent_span_id, tools["call_page"].span_id);
    assert_eq!(
        string(&fetch.attributes, "server.address").as_deref(),
        Some("127.0.0.1")
    );
    assert_eq!(int(&fetch.attributes, "http.response.status_code"), Some(200));

    // The MCP request is a client span under its tool call, with the MCP conventions' attributes.
    let mcp = trace.one("tools/call lookup");
    assert_eq!(mcp.parent_span_id, tools["call_mcp"].span_id);
    assert_eq!(mcp.kind, SpanKind::Client as i32);
    assert_strings(
        mcp,
        &[
            ("mcp.method.name", "tools/call"),
            ("gen_ai.tool.name", "lookup"),
            ("server.address", "127.0.0.1"),
        ],
    );

    // The MCP server got the trace context in `_meta`, naming the MCP span as its parent.
    let seen = notes.traceparents.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let (seen_trace, seen_parent) = parse_traceparent(seen[0].as_deref().expect("a traceparent in _meta"));
    assert_eq!(seen_trace, trace_id);
    assert_eq!(seen_parent, hex::encode(&mcp.span_id));
    // ...and the same context in the request's `traceparent` header, for proxies and middleware.
    let headers = notes.headers.lock().unwrap().clone();
    assert_eq!(headers, seen, "the header carries what `_meta` does");

    // Each request to the model carried the trace context of its own chat span.
    let chat_ids: Vec<String> = chats.iter().map(|c| hex::encode(&c.span_id)).collect();
    let headers = upstream.request_headers();
    assert_eq!(headers.len(), 2);
    for sent in headers {
        let header = sent
            .get("traceparent")
            .expect("a traceparent header")
            .to_str()
            .unwrap();
        let (sent_trace, sent_parent) = parse_traceparent(header);
        assert_eq!(sent_trace, trace_id);
        assert!(
            chat_ids.contains(&sent_parent),
            "{sent_parent} not in {chat_ids:?}"
        );
    }

    // No message content: the user's words are in no attribute.
    for exported in &trace.0 {
        for kv in &exported.span.attributes {
            let text = format!("{:?}", kv.value);
            assert!(!text.contains("high water at the harbour"), "{}: {text}", kv.key);
        }
    }
}

#[tokio::test]
async fn over_grpc_a_sends_spans_reach_the_collectors_trace_service() {
    install(false, OtlpProtocol::Grpc);
    let (gw, upstream) = common::single_user_gateway(Backend::Sqlite).await;
    upstream.push(text(["Four."]));
    let (trace_id, caller_span, traceparent) = caller_context();
    let answer = traced_send(&gw, &traceparent, "sums", "2+2?").await;
    assert_eq!(answer.text(), "Four.");

    let trace = one_call_trace(&trace_id, &caller_span, "/v1/chat").await;
    assert!(trace.0.iter().all(|e| e.service == "promptgate-test"));
}

/// POSTs a one-message chat completion to `model` as a caller whose trace context is `traceparent`.
async fn completion_in_trace(
    gw: &Gateway,
    traceparent: &str,
    model: &str,
    content: &str,
) -> reqwest::Response {
    gw.http
        .post(gw.url("/v1/chat/completions"))
        .header("traceparent", traceparent)
        .json(&json!({"model": model, "messages": [{"role": "user", "content": content}]}))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_chat_completions_request_is_traced_and_its_errors_name_the_trace() {
    receiver();
    let (gw, upstream) = common::single_user_gateway(Backend::Sqlite).await;
    upstream.push(text(["Four."]));
    let (trace_id, caller_span, traceparent) = caller_context();
    let res = completion_in_trace(&gw, &traceparent, "scripted", "2+2?").await;
    assert_eq!(res.status(), StatusCode::OK);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "Four.");

    let trace = one_call_trace(&trace_id, &caller_span, "/v1/chat/completions").await;
    let chat = trace.one("chat upstream-model");
    assert_eq!(
        int(&chat.attributes, "gen_ai.usage.input_tokens"),
        Some(10),
        "{:?}",
        chat.attributes
    );
    // A user without limits is checked from memory: no database span claims otherwise (it ended
    // before the request's span, so it would be here by now).
    assert!(trace.named("SELECT budgets budget_spend").is_empty());
    assert_eq!(int(&chat.attributes, "gen_ai.usage.output_tokens"), Some(1));
    // The client asked for one JSON answer, and so did the gateway of its provider.
    assert_eq!(boolean(&chat.attributes, "gen_ai.request.stream"), Some(false));

    // An error body names the trace beside the request id.
    let (trace_id, _, traceparent) = caller_context();
    let res = completion_in_trace(&gw, &traceparent, "no-such-model", "hi").await;
    assert!(res.status().is_client_error(), "{}", res.status());
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["trace_id"], trace_id, "{body}");
    assert!(body["error"]["request_id"].is_string(), "{body}");
}

#[tokio::test]
async fn with_content_capture_on_the_spans_carry_the_prompt_the_answer_and_the_tool_io() {
    installed(true);
    let (gw, upstream) = common::single_user_gateway(Backend::Sqlite).await;
    let server = Notes::default().start().await;
    gw.register_mcp_server("Notes", &server.url()).await;
    common::one_call(
        &upstream,
        "call_mcp",
        "notes_lookup",
        r#"{"topic": "tides"}"#,
        "High water is at 14:10.",
    );
    let (trace_id, _, traceparent) = caller_context();
    traced_send(&gw, &traceparent, "tides-content", SECRET_WORDS).await;

    let trace = Trace::wait(&trace_id, |t| {
        t.named("chat upstream-model").len() == 2 && t.named("execute_tool notes_lookup").len() == 1
    })
    .await;
    let chats = trace.named("chat upstream-model");
    let json_attribute = |span: &Span, key: &str| -> Value {
        let text = string(&span.attributes, key).unwrap_or_else(|| panic!("no {key} on {}", span.name));
        serde_json::from_str(&text).unwrap()
    };
    let (first, second) = if chats[0].start_time_unix_nano < chats[1].start_time_unix_nano {
        (chats[0], chats[1])
    } else {
        (chats[1], chats[0])
    };
    // The user's words go in, the system prompt apart, and the model's tool call comes out.
    let input = json_attribute(first, "gen_ai.input.messages");
    assert_eq!(input[0]["role"], "user", "{input}");
    assert_eq!(input[0]["parts"][0]["content"], SECRET_WORDS, "{input}");
    let system = json_attribute(first, "gen_ai.system_instructions");
    assert!(!system[0]["content"].as_str().unwrap().is_empty(), "{system}");
    let output = json_attribute(first, "gen_ai.output.messages");
    let call = &output[0]["parts"][0];
    assert_eq!(call["type"], "tool_call", "{output}");
    assert_eq!(call["name"], "notes_lookup");
    assert_eq!(call["arguments"]["topic"], "tides");
    assert_eq!(output[0]["finish_reason"], "tool_calls");
    // The second call sees the tool's answer and ends with the text the user read.
    let input = json_attribute(second, "gen_ai.input.messages");
    let response = input
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("no tool message in {input}"));
    assert!(
        response["parts"][0]["response"]
            .as_str()
            .unwrap()
            .contains("high water at 14:10")
    );
    let output = json_attribute(second, "gen_ai.output.messages");
    assert_eq!(
        output[0]["parts"][0]["content"], "High water is at 14:10.",
        "{output}"
    );
    // The tool span has what went in and what came back.
    let tool = trace.one("execute_tool notes_lookup");
    assert_eq!(
        string(&tool.attributes, "gen_ai.tool.call.arguments").as_deref(),
        Some(r#"{"topic": "tides"}"#)
    );
    assert!(
        string(&tool.attributes, "gen_ai.tool.call.result")
            .unwrap()
            .contains("high water at 14:10")
    );
}

/// The store's name in `db.system.name`.
fn db_system(backend: &Backend) -> &'static str {
    match backend {
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgresql",
    }
}

/// A send in a project whose model searches the project's other chats: the store calls the send
/// is made of (the budget check of a user with a limit, the thread's claim, the history, the user's message, the final
/// save) are client spans under its request, beside the turn, and the search is one under the
/// tool call; they name the database and the operation, never what was asked or stored.
async fn a_sends_store_calls_are_client_spans_in_its_trace(backend: Backend) {
    receiver();
    let system = db_system(&backend);
    let (gw, upstream) = common::single_user_gateway(backend).await;
    let (status, project) = gw.post("/v1/projects", json!({"name": "Garden"})).await;
    assert_eq!(status, StatusCode::CREATED, "{project}");
    let pid = project["id"].as_str().unwrap();
    for thread in ["roses", "now"] {
        let (status, body) = gw
            .post("/v1/threads", json!({"id": thread, "project_id": pid}))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    upstream.push(text(["Noted."]));
    let said = gw.chat("roses", "Roses like compost in early spring.").await;
    assert_eq!(said.text(), "Noted.");

    common::one_call(
        &upstream,
        "p1",
        "search_project_chats",
        r#"{"query": "compost"}"#,
        "Found it.",
    );
    // A limit on the user, so that the budget check reads the database (without one it is
    // answered from memory, and no span says otherwise).
    let limit = promptgate_store::Budget {
        period_tokens: Some(1_000_000),
        period_secs: Some(3_600),
        ..Default::default()
    };
    gw.store
        .set_budget(
            promptgate_store::BudgetScope::User,
            promptgate_server::state::LOCAL_USER_ID,
            promptgate_server::state::LOCAL_USER_ID,
            &limit,
        )
        .await
        .unwrap();
    let (trace_id, _, traceparent) = caller_context();
    let answer = traced_send(&gw, &traceparent, "now", "what did I say about compost?").await;
    assert_eq!(answer.text(), "Found it.");
    let output = answer.tool_output("p1");
    assert_eq!(output["output"]["hits"][0]["thread_id"], "roses", "{output}");

    const SAVE: &str = "UPDATE messages INSERT usage_ledger";
    let trace = Trace::wait(&trace_id, |t| {
        t.named("POST /v1/chat").len() == 1
            && t.named("execute_tool search_project_chats").len() == 1
            && t.named("SELECT messages").len() == 1
            && t.named(SAVE).len() == 1
    })
    .await;
    let server_span = trace.one("POST /v1/chat");
    let agent = trace.one("invoke_agent promptgate");
    assert_eq!(agent.parent_span_id, server_span.span_id);
    let db_spans: Vec<&Span> = trace
        .0
        .iter()
        .map(|e| &e.span)
        .filter(|s| value(&s.attributes, "db.system.name").is_some())
        .collect();
    for span in &db_spans {
        assert_eq!(span.kind, SpanKind::Client as i32, "{}", span.name);
        assert_eq!(
            string(&span.attributes, "db.system.name").as_deref(),
            Some(system),
            "{}",
            span.name
        );
        assert_eq!(
            string(&span.attributes, "db.query.summary").as_deref(),
            Some(span.name.as_str())
        );
        // What was asked or stored is in no attribute: only the operation and the table.
        for kv in &span.attributes {
            let text = format!("{:?}", kv.value);
            assert!(!text.contains("compost"), "{}: {}: {text}", span.name, kv.key);
        }
    }

    // Before the turn, under the send's request: the checks, the claim, the reads and the user's
    // message; the answer's final save is the turn's last act.
    for (name, operation, collection, parent) in [
        ("SELECT budgets budget_spend", Some("SELECT"), None, server_span),
        (
            "INSERT turn_claims",
            Some("INSERT"),
            Some("turn_claims"),
            server_span,
        ),
        ("SELECT threads messages", Some("SELECT"), None, server_span),
        ("INSERT messages", Some("INSERT"), Some("messages"), server_span),
        (SAVE, None, None, agent),
    ] {
        let span = trace.one(name);
        assert_eq!(span.parent_span_id, parent.span_id, "{name}");
        assert_eq!(
            string(&span.attributes, "db.operation.name").as_deref(),
            operation,
            "{name}"
        );
        assert_eq!(
            string(&span.attributes, "db.collection.name").as_deref(),
            collection,
            "{name}"
        );
    }
    // The answer is saved once the turn has its outcome: after its last model call, and the turn
    // ends with it.
    let last_chat_end = trace
        .named("chat upstream-model")
        .iter()
        .map(|c| c.end_time_unix_nano)
        .max()
        .unwrap();
    let save = trace.one(SAVE);
    assert!(save.start_time_unix_nano >= last_chat_end);
    assert!(agent.end_time_unix_nano >= save.end_time_unix_nano);

    // The search of the project's chats belongs to the tool call that asked for it.
    let tool = trace.one("execute_tool search_project_chats");
    let search = trace.one("SELECT messages");
    assert_eq!(search.parent_span_id, tool.span_id);
    assert_eq!(
        string(&search.attributes, "db.collection.name").as_deref(),
        Some("messages")
    );
    assert_eq!(db_spans.len(), 6, "{:?}", trace.names());
}

common::on_both_backends!(a_sends_store_calls_are_client_spans_in_its_trace);

/// The request's server span and the model call's GenAI attributes, as the Responses and Messages
/// facades give them to an official client's streamed request.
fn assert_facade_trace(trace: &Trace, route: &str) {
    let server_span = trace.one(&format!("POST {route}"));
    assert_eq!(server_span.kind, SpanKind::Server as i32);
    assert_eq!(
        string(&server_span.attributes, "http.route").as_deref(),
        Some(route)
    );
    assert_eq!(
        int(&server_span.attributes, "http.response.status_code"),
        Some(200)
    );
    let chat = trace.one("chat upstream-model");
    assert_eq!(chat.kind, SpanKind::Client as i32);
    for (key, expected) in [
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.provider.name", "openai"),
        ("gen_ai.request.model", "upstream-model"),
    ] {
        assert_eq!(
            string(&chat.attributes, key).as_deref(),
            Some(expected),
            "{route}: {key}"
        );
    }
    assert_eq!(
        int(&chat.attributes, "gen_ai.usage.input_tokens"),
        Some(10),
        "{route}"
    );
    assert_eq!(
        int(&chat.attributes, "gen_ai.usage.output_tokens"),
        Some(1),
        "{route}"
    );
}

#[tokio::test]
async fn responses_and_messages_requests_from_the_official_clients_are_traced() {
    let Some(dir) =
        crate::js_clients::js_dir_with(&["node_modules/openai", "node_modules/@anthropic-ai/sdk"])
    else {
        return;
    };
    receiver();
    let (gw, upstream) = common::single_user_gateway(Backend::Sqlite).await;
    upstream.push(text(["Hello."]));
    upstream.push(text(["Goodbye."]));
    let (responses_trace, responses_caller, responses_parent) = caller_context();
    let (messages_trace, messages_caller, messages_parent) = caller_context();
    let (ok, result) = crate::js_clients::run_node(
        dir,
        &[
            "traced-facades-check.mjs",
            &format!("http://{}", gw.addr),
            "scripted",
            &responses_parent,
            &messages_parent,
        ],
    )
    .await;
    assert!(ok, "a client rejected the gateway: {result}");
    assert_eq!(result["responses"]["text"], "Hello.");
    assert_eq!(result["messages"]["text"], "Goodbye.");

    for (trace_id, caller, route) in [
        (responses_trace, responses_caller, "/v1/responses"),
        (messages_trace, messages_caller, "/v1/messages"),
    ] {
        let trace = one_call_trace(&trace_id, &caller, route).await;
        assert_facade_trace(&trace, route);
    }
}
