//! A real promptgate on 127.0.0.1:0 over a real store, and a small client for it.

// Test support: a failure here should fail the test loudly.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;

use promptgate_server::config::{AuthMode, Config, EMBEDDED_DEFAULT};
use promptgate_server::state::AppState;
use promptgate_store::testing::TestDb;
use reqwest::{Method, StatusCode};
use serde_json::Value;

mod tools_server;
pub use tools_server::{ToolsServer, one_string_argument};

pub enum Backend {
    Sqlite,
    Postgres,
}

pub struct Gateway {
    pub addr: SocketAddr,
    pub state: AppState,
    /// The gateway's own store (its caches and key for secrets included), for tests that set up or
    /// check rows directly.
    pub store: promptgate_store::Store,
    pub http: reqwest::Client,
    /// The database this gateway runs on, for a second instance on the same one.
    pub database_url: String,
    _db: Option<TestDb>,
    _server: tokio::task::JoinHandle<()>,
}

/// Runs each scenario of the calling module on both backends, as `<scenario>::sqlite` and
/// `<scenario>::postgres`: the server's twin of `promptgate_store::on_both_backends!`, for scenarios
/// that start a gateway on a [`Backend`] (`async fn scenario(backend: Backend)`) rather than take a
/// database.
macro_rules! on_both_backends {
    ($($scenario:ident),+ $(,)?) => {$(
        mod $scenario {
            #[tokio::test]
            async fn sqlite() {
                super::$scenario($crate::common::Backend::Sqlite).await;
            }

            #[tokio::test]
            async fn postgres() {
                super::$scenario($crate::common::Backend::Postgres).await;
            }
        }
    )+};
}
pub(crate) use on_both_backends;

pub fn init() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The embedded default plus a search backend (on a port nothing listens on), so web tools are offered.
pub fn test_config(mode: AuthMode) -> Config {
    let text = format!(
        "{EMBEDDED_DEFAULT}\n[web]\nsearch = {{ kind = \"searxng\", base_url = \"http://127.0.0.1:9\" }}\n"
    );
    let mut config = Config::parse(&text).unwrap();
    config.auth.mode = mode;
    config
}

impl Gateway {
    pub async fn start(backend: Backend, config: Config) -> Gateway {
        Self::start_with_env(backend, config, &promptgate_server::config::ProcessEnv).await
    }

    /// Like [`Gateway::start`], reading the configured secrets from `env`.
    pub async fn start_with_env(
        backend: Backend,
        config: Config,
        env: &dyn promptgate_server::config::Env,
    ) -> Gateway {
        init();
        let db = match backend {
            Backend::Sqlite => TestDb::sqlite().await,
            Backend::Postgres => TestDb::postgres().await,
        };
        // The config names the database the gateway really uses, so files kept beside it (the
        // single_user key for secrets at rest) land in the test's own directory.
        let mut config = config;
        config.database_url = db.url().to_owned();
        let store = db.store().clone();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        Self::serve_on(listener, store, Some(db), config, env).await
    }

    /// Like [`Gateway::start`], with a config that knows the address the gateway will listen on
    /// (`http://127.0.0.1:port`), for settings that name the gateway's own public URL.
    pub async fn start_at(backend: Backend, config: impl FnOnce(&str) -> Config) -> Gateway {
        init();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let db = match backend {
            Backend::Sqlite => TestDb::sqlite().await,
            Backend::Postgres => TestDb::postgres().await,
        };
        let mut config = config(&base);
        config.database_url = db.url().to_owned();
        let store = db.store().clone();
        Self::serve_on(
            listener,
            store,
            Some(db),
            config,
            &promptgate_server::config::ProcessEnv,
        )
        .await
    }

    /// A gateway over a store the test manages itself (e.g. on a cluster it stops and starts),
    /// opened from `url`.
    pub async fn over_store(store: promptgate_store::Store, url: &str, config: Config) -> Gateway {
        init();
        let mut config = config;
        config.database_url = url.to_owned();
        Self::serve(store, None, config, &promptgate_server::config::ProcessEnv).await
    }

    async fn serve(
        store: promptgate_store::Store,
        db: Option<TestDb>,
        config: Config,
        env: &dyn promptgate_server::config::Env,
    ) -> Gateway {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        Self::serve_on(listener, store, db, config, env).await
    }

    async fn serve_on(
        listener: tokio::net::TcpListener,
        store: promptgate_store::Store,
        db: Option<TestDb>,
        config: Config,
        env: &dyn promptgate_server::config::Env,
    ) -> Gateway {
        let database_url = config.database_url.clone();
        let database = promptgate_service::Database::from_store(store);
        let state = promptgate_server::cli::prepare_with_env(config, database, env)
            .await
            .unwrap();
        let store = state.service.store().clone();
        let addr = listener.local_addr().unwrap();
        let app = promptgate_server::app::build(state.clone());
        let server = tokio::spawn(async move {
            axum::serve(listener, axum::ServiceExt::into_make_service(app))
                .await
                .unwrap();
        });
        Gateway {
            addr,
            state,
            store,
            http: reqwest::Client::new(),
            database_url,
            _db: db,
            _server: server,
        }
    }

    /// A second gateway instance on this one's database: its own store connections, listener, turn
    /// claims and memory, as another process behind the same load balancer would have.
    pub async fn another_instance(&self, config: Config) -> Gateway {
        self.another_instance_with_env(config, &promptgate_server::config::ProcessEnv)
            .await
    }

    /// Like [`Gateway::another_instance`], reading the configured secrets from `env`.
    pub async fn another_instance_with_env(
        &self,
        config: Config,
        env: &dyn promptgate_server::config::Env,
    ) -> Gateway {
        let store = promptgate_store::Store::connect(&self.database_url)
            .await
            .unwrap();
        let mut config = config;
        config.database_url = self.database_url.clone();
        Self::serve(store, None, config, env).await
    }

    /// Ends this instance as SIGTERM would: it stops serving, its turns stop, its background work
    /// is waited for, and its connections to the database close.
    pub async fn shut_down(self) {
        self._server.abort();
        self.state.service.stop_all();
        self.state.service.drain(std::time::Duration::from_secs(5)).await;
    }

    pub async fn single_user(backend: Backend) -> Gateway {
        Self::start(backend, test_config(AuthMode::SingleUser)).await
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Sends a request, with a JSON body and as the user of bearer `token` where given, and returns
    /// the response unread.
    pub async fn response(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        token: Option<&str>,
    ) -> reqwest::Response {
        let mut req = self.http.request(method, self.url(path));
        if let Some(body) = body {
            req = req.json(body);
        }
        if let Some(token) = token {
            req = req.bearer_auth(token);
        }
        req.send().await.unwrap()
    }

    /// Sends a JSON request (or none) and returns the status and the JSON body (Null when empty).
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        token: Option<&str>,
    ) -> (StatusCode, Value) {
        let res = self.response(method, path, body.as_ref(), token).await;
        let status = res.status();
        let bytes = res.bytes().await.unwrap();
        let value = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into()))
        };
        (status, value)
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.call(Method::GET, path, None, None).await
    }

    pub async fn put(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.call(Method::PUT, path, Some(body), None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.call(Method::POST, path, Some(body), None).await
    }

    pub async fn delete(&self, path: &str) -> (StatusCode, Value) {
        self.call(Method::DELETE, path, None, None).await
    }

    /// [`Self::get`] as the user of bearer `token`.
    pub async fn get_as(&self, path: &str, token: &str) -> (StatusCode, Value) {
        self.call(Method::GET, path, None, Some(token)).await
    }

    /// [`Self::post`] as the user of bearer `token`.
    pub async fn post_as(&self, path: &str, body: Value, token: &str) -> (StatusCode, Value) {
        self.call(Method::POST, path, Some(body), Some(token)).await
    }

    /// [`Self::put`] as the user of bearer `token`.
    pub async fn put_as(&self, path: &str, body: Value, token: &str) -> (StatusCode, Value) {
        self.call(Method::PUT, path, Some(body), Some(token)).await
    }

    /// A PATCH with a JSON body as the user of bearer `token`.
    pub async fn patch_as(&self, path: &str, body: Value, token: &str) -> (StatusCode, Value) {
        self.call(Method::PATCH, path, Some(body), Some(token)).await
    }

    /// [`Self::delete`] as the user of bearer `token`.
    pub async fn delete_as(&self, path: &str, token: &str) -> (StatusCode, Value) {
        self.call(Method::DELETE, path, None, Some(token)).await
    }

    /// The browser's return from `provider`'s consent screen: the integration callback with the
    /// authorization `code` and the `state` the authorize step issued.
    pub async fn oauth_callback(&self, provider: &str, code: &str, state: &str) -> (StatusCode, Value) {
        self.get(&format!(
            "/v1/integrations/{provider}/callback?code={code}&state={state}"
        ))
        .await
    }

    /// Registers the MCP server at `url` under `name`, which must be accepted; the created record.
    pub async fn register_mcp_server(&self, name: &str, url: &str) -> Value {
        let (status, created) = self
            .post("/v1/mcp-servers", serde_json::json!({"name": name, "url": url}))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        created
    }

    /// The provider's redirect back after the user consented, which must be accepted.
    pub async fn oauth_callback_ok(&self, provider: &str, code: &str, state: &str) {
        let (status, body) = self.oauth_callback(provider, code, state).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }

    /// A raw request with an arbitrary body and content type (for malformed input).
    pub async fn raw(
        &self,
        method: Method,
        path: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> (StatusCode, Value) {
        let res = self
            .http
            .request(method, self.url(path))
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .unwrap();
        let status = res.status();
        let value = res.json::<Value>().await.unwrap_or(Value::Null);
        (status, value)
    }
}

/// Asserts the error envelope and returns its code.
/// The text of a stored (or UI) message: its text parts joined, other parts left out.
pub fn stored_text(message: &Value) -> String {
    message["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect()
}

/// The role and text of each message in a listing of stored messages, in order.
pub fn stored_turns(messages: &Value) -> Vec<(String, String)> {
    messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["role"].as_str().unwrap().to_owned(), stored_text(m)))
        .collect()
}

/// The role and text of each message a recorded upstream request sent the model, system prompt
/// left out (the text parts of a message in parts, joined).
pub fn sent_to_model(request: &Value) -> Vec<(String, String)> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            let content = match &m["content"] {
                Value::String(s) => s.clone(),
                Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
                _ => String::new(),
            };
            (m["role"].as_str().unwrap().to_owned(), content)
        })
        .collect()
}

pub fn error_code(body: &Value) -> &str {
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(!message.is_empty(), "error without a message: {body}");
    body["error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("not an error body: {body}"))
}

/// The message of an error body.
pub fn error_message(body: &Value) -> &str {
    body["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("no error message: {body}"))
}

/// A config whose `scripted` provider points at a scripted upstream, with model `scripted` using it.
pub fn scripted_config(mode: AuthMode, base_url: &str) -> Config {
    scripted_config_with(mode, base_url, "")
}

/// [`scripted_config`] with more TOML appended (tables the embedded default does not set).
///
/// Unless that TOML has an `[approval]` table, every tool runs at once (`defaults = "allow"`): these
/// tests read the newest UI stream, whose client is asked before a tool that changes things runs by
/// default, and only the approval tests are about that wait.
pub fn scripted_config_with(mode: AuthMode, base_url: &str, extra_toml: &str) -> Config {
    let text = format!(
        "{EMBEDDED_DEFAULT}\n{extra_toml}\n[[providers]]\nname = \"scripted\"\nkind = \"openai\"\nbase_url = \"{base_url}\"\n\
         first_byte_timeout_secs = 5\nidle_timeout_secs = 5\n\n[[models]]\nid = \"scripted\"\nname = \"Scripted\"\n\
         provider = \"scripted\"\nupstream_model = \"upstream-model\"\n"
    );
    let mut config = Config::parse(&text).unwrap();
    config.auth.mode = mode;
    if !extra_toml.contains("[approval]") {
        config.approval.defaults = promptgate_server::config::approval::Defaults::Allow;
    }
    if !extra_toml.contains("[admission]") {
        // A test machine running many tests at once makes writes and runnable work wait far
        // longer than a server's would; that must not refuse the sends of tests about other things.
        config.admission.store_delay_tolerance_ms = 1000;
        config.admission.delay_tolerance_ms = 1000;
    }
    config
}

/// A parsed SSE response: its headers and every `data:` payload (`[DONE]` kept as a string).
pub struct Sse {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub events: Vec<Value>,
    pub done: bool,
    pub comments: usize,
}

impl Sse {
    /// The turn id the answer's start chunk names.
    pub fn turn_id(&self) -> String {
        self.of_type("start")[0]["messageMetadata"]["turnId"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    pub fn types(&self) -> Vec<&str> {
        self.events.iter().filter_map(|e| e["type"].as_str()).collect()
    }

    pub fn of_type(&self, kind: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["type"] == kind).collect()
    }

    /// Checks the answer ended as a model's answer does (`finishReason: stop`), naming the chunks
    /// that came when it did not.
    pub fn assert_stopped(&self) {
        assert_eq!(
            self.of_type("finish")[0]["finishReason"],
            "stop",
            "{:?}",
            self.types()
        );
    }

    /// The `tool-output-available` chunk of the tool call `call_id`.
    pub fn tool_output(&self, call_id: &str) -> &Value {
        self.events
            .iter()
            .find(|e| e["type"] == "tool-output-available" && e["toolCallId"] == call_id)
            .unwrap_or_else(|| panic!("no output for {call_id}: {:?}", self.types()))
    }

    pub fn text(&self) -> String {
        self.of_type("text-delta")
            .iter()
            .map(|e| e["delta"].as_str().unwrap())
            .collect()
    }
}

pub fn parse_sse(status: StatusCode, headers: reqwest::header::HeaderMap, body: &str) -> Sse {
    let frames = sse_frames(body);
    let events = frames
        .data
        .iter()
        .map(|data| {
            assert!(
                !data.contains(":null"),
                "null is not absent for the AI SDK: {data}"
            );
            serde_json::from_str(data).unwrap_or_else(|e| panic!("bad JSON {data}: {e}"))
        })
        .collect();
    Sse {
        status,
        headers,
        events,
        done: frames.done,
        comments: frames.comments,
    }
}

/// An SSE body split into frames: the `data:` payloads before `[DONE]`, whether `[DONE]` came, and
/// how many comment frames there were.
pub struct SseFrames<'a> {
    pub data: Vec<&'a str>,
    pub done: bool,
    pub comments: usize,
}

pub fn sse_frames(body: &str) -> SseFrames<'_> {
    let mut frames = SseFrames {
        data: Vec::new(),
        done: false,
        comments: 0,
    };
    for frame in body.split("\n\n").filter(|f| !f.trim().is_empty()) {
        if frame.starts_with(':') {
            frames.comments += 1;
            continue;
        }
        let data = frame
            .strip_prefix("data: ")
            .unwrap_or_else(|| panic!("not a data frame: {frame:?}"));
        assert!(!frames.done, "nothing may follow [DONE]: {frame}");
        if data == "[DONE]" {
            frames.done = true;
        } else {
            frames.data.push(data);
        }
    }
    frames
}

/// The events of a stream that answered 200 with named events (an `event:` line, then a `data:`
/// line), as the Responses and Messages APIs write them, in order; comment frames are left out.
pub async fn named_events(res: reqwest::Response) -> Vec<(String, Value)> {
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    let body = res.text().await.unwrap();
    body.split("\n\n")
        .filter(|frame| !frame.trim().is_empty() && !frame.starts_with(':'))
        .map(|frame| {
            let (name, data) = frame
                .split_once('\n')
                .unwrap_or_else(|| panic!("not an event: {frame:?}"));
            let name = name
                .strip_prefix("event: ")
                .unwrap_or_else(|| panic!("no event: line in {frame:?}"));
            let data = data
                .strip_prefix("data: ")
                .unwrap_or_else(|| panic!("no data: line in {frame:?}"));
            (name.to_owned(), serde_json::from_str(data).unwrap())
        })
        .collect()
}

/// The UI message stream's version these tests read, as the web app does: every field the engine
/// writes. What older clients get instead is tested with their own AI SDK releases (js_clients).
pub const NEWEST_UI_STREAM: (&str, &str) = ("x-promptgate-ui-stream", "v7");

impl Gateway {
    /// POSTs a JSON body and reads the whole SSE answer (as the newest AI SDK reads it).
    pub async fn stream(&self, path: &str, body: Value) -> Sse {
        self.stream_as(NEWEST_UI_STREAM.1, path, body).await
    }

    /// POSTs `body` to the thread's own route, `/v1/threads/{thread}/messages`, and reads the answer.
    pub async fn thread_message(&self, thread: &str, body: Value) -> Sse {
        self.stream(&format!("/v1/threads/{thread}/messages"), body).await
    }

    /// Sends `text` to `thread` through `/v1/chat` for the `scripted` model and reads the answer.
    pub async fn chat(&self, thread: &str, text: &str) -> Sse {
        self.stream("/v1/chat", use_chat_body(thread, text, "scripted"))
            .await
    }

    /// Creates a project of the user's; its id.
    pub async fn create_project(&self, name: &str, instructions: &str) -> String {
        let body = serde_json::json!({"name": name, "instructions": instructions});
        let (status, project) = self.post("/v1/projects", body).await;
        assert_eq!(status, StatusCode::CREATED, "{project}");
        project["id"].as_str().unwrap().to_owned()
    }

    /// Creates a skill of the user's from its JSON body.
    pub async fn create_skill(&self, body: Value) {
        let (status, skill) = self.post("/v1/skills", body).await;
        assert_eq!(status, StatusCode::CREATED, "{skill}");
    }

    /// Starts authorizing the user's MCP server `id` (which asks for OAuth): the URL the user's
    /// browser is sent to.
    pub async fn authorization_url(&self, id: &str) -> String {
        let (status, started) = self
            .post(&format!("/v1/mcp-servers/{id}/authorize"), serde_json::json!({}))
            .await;
        assert_eq!(status, StatusCode::OK, "{started}");
        started["authorization_url"].as_str().unwrap().to_owned()
    }

    /// Sends `text` through the OpenAI-compatible `/v1/chat/completions` (not streamed) to the
    /// `scripted` model; its status and answer.
    pub async fn complete(&self, text: &str) -> (StatusCode, Value) {
        let body = serde_json::json!({"model": "scripted", "messages": [{"role": "user", "content": text}]});
        self.post("/v1/chat/completions", body).await
    }

    /// Like [`Gateway::stream`], for a client declaring the UI stream `version` (`v5`, `v6`...).
    pub async fn stream_as(&self, version: &str, path: &str, body: Value) -> Sse {
        let res = self
            .http
            .post(self.url(path))
            .header(NEWEST_UI_STREAM.0, version)
            .json(&body)
            .send()
            .await
            .unwrap();
        sse_of(res).await
    }

    /// Waits until the thread has `expected` messages and no answer is still `streaming` (the answer
    /// row exists from the turn's start; a turn ended by a disconnect stores its end a moment later).
    pub async fn stored_messages(&self, thread: &str, expected: usize) -> Value {
        // One page holds at most the largest page size (200 by default): enough for every thread a
        // test writes.
        assert!(
            expected <= 200,
            "a thread of {expected} messages needs more than one page"
        );
        for _ in 0..200 {
            let (_, messages) = self
                .get(&format!("/v1/threads/{thread}/messages?limit=200"))
                .await;
            if messages
                .as_array()
                .is_some_and(|m| m.len() >= expected && m.iter().all(|m| m["status"] != "streaming"))
            {
                return messages;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        panic!("thread {thread} never had {expected} stored messages");
    }
}

impl Gateway {
    /// The whole `/metrics` page, as a scraper reads it.
    pub async fn metrics_text(&self) -> String {
        text_of(self.http.get(self.url("/metrics"))).await
    }

    /// The value of one series on `/metrics` (its name with labels, as Prometheus prints it); 0 when
    /// the series has not been written yet. Metrics are per process, and each test runs in its own.
    pub async fn metric(&self, series: &str) -> f64 {
        self.metrics_text()
            .await
            .lines()
            .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or(0.0)
    }
}

static NEXT_ID: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);

/// A useChat request body with one new user message.
pub fn use_chat_body(thread: &str, text: &str, model: &str) -> Value {
    serde_json::json!({
        "id": thread,
        "messages": [{"id": format!("u-{thread}-{}", NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)),
                      "role": "user", "parts": [{"type": "text", "text": text}]}],
        "trigger": "submit-message",
        "model": model
    })
}

/// [`use_chat_body`] for the `scripted` model that retries `turn`, naming it with `field` (the AI
/// SDK's `retryOf`, or `retry_of`).
pub fn use_chat_retry(thread: &str, text: &str, field: &str, turn: &str) -> Value {
    let mut body = use_chat_body(thread, text, "scripted");
    body[field] = Value::from(turn);
    body
}

/// A message for a thread's route (`POST /v1/threads/{id}/messages`) to the `scripted` model that
/// retries `turn`, naming it with `field` (`retryOf` or `retry_of`).
pub fn message_retry(text: &str, field: &str, turn: &str) -> Value {
    serde_json::json!({"message": text, "model": "scripted", field: turn})
}

/// A single-user gateway whose `scripted` model answers from a fresh scripted upstream on loopback.
pub async fn single_user_gateway(backend: Backend) -> (Gateway, promptgate_llm::scripted::ScriptedUpstream) {
    single_user_gateway_with(backend, "").await
}

/// [`single_user_gateway`] with `extra_toml` added to its config (see [`scripted_config_with`]).
pub async fn single_user_gateway_with(
    backend: Backend,
    extra_toml: &str,
) -> (Gateway, promptgate_llm::scripted::ScriptedUpstream) {
    init();
    let (upstream, config) = single_user_scripted(extra_toml).await;
    (Gateway::start(backend, config).await, upstream)
}

/// A fresh scripted upstream and a single-user config whose `scripted` model uses it, with
/// `extra_toml` added (see [`scripted_config_with`]).
pub async fn single_user_scripted(extra_toml: &str) -> (promptgate_llm::scripted::ScriptedUpstream, Config) {
    let upstream = promptgate_llm::scripted::ScriptedUpstream::start().await.unwrap();
    let config = scripted_config_with(AuthMode::SingleUser, &upstream.base_url(), extra_toml);
    (upstream, config)
}

/// A gateway in tokens mode over a fresh scripted upstream, and the token of its one user.
pub async fn tokens_gateway(
    backend: Backend,
) -> (Gateway, promptgate_llm::scripted::ScriptedUpstream, String) {
    init();
    let upstream = promptgate_llm::scripted::ScriptedUpstream::start().await.unwrap();
    let gw = Gateway::start(backend, scripted_config(AuthMode::Tokens, &upstream.base_url())).await;
    let user = gw.store.create_user("ada").await.unwrap();
    let token = gw.store.issue_token(&user.id).await.unwrap();
    (gw, upstream, token)
}

/// Asserts that the upstream's `after`-th request continues its `before`-th: past the system
/// prompt, what the model saw before, then its own call `call_id` and the client's `result`.
pub fn assert_continued(
    upstream: &promptgate_llm::scripted::ScriptedUpstream,
    (before, after): (usize, usize),
    call_id: &str,
    result: &str,
) {
    let requests = upstream.requests();
    let seen_before = requests[before]["messages"].as_array().unwrap();
    let seen = requests[after]["messages"].as_array().unwrap();
    assert_eq!(seen[1..seen_before.len()], seen_before[1..]);
    let rest = &seen[seen_before.len()..];
    assert_eq!(rest.len(), 2, "{rest:#?}");
    assert_eq!(rest[0]["tool_calls"][0]["id"], call_id);
    assert_eq!(
        rest[1],
        serde_json::json!({"role": "tool", "tool_call_id": call_id, "content": result})
    );
}

/// Starts a send in the background and waits until the upstream stub has its request, so the turn
/// is running.
pub async fn send_until_upstream_called(
    gw: &Gateway,
    upstream: &promptgate_llm::scripted::ScriptedUpstream,
    thread: &str,
    text: &str,
) -> tokio::task::JoinHandle<reqwest::Result<String>> {
    let calls_before = upstream.calls();
    let request = gw
        .http
        .post(gw.url("/v1/chat"))
        .header(NEWEST_UI_STREAM.0, NEWEST_UI_STREAM.1)
        .json(&use_chat_body(thread, text, "scripted"));
    let running = tokio::spawn(async move { request.send().await?.text().await });
    for _ in 0..200 {
        if upstream.calls() > calls_before {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    running
}

/// A turn in `thread` whose upstream never answers, running until stopped (its send's task).
pub async fn hung_turn(
    gw: &Gateway,
    upstream: &promptgate_llm::scripted::ScriptedUpstream,
    thread: &str,
) -> tokio::task::JoinHandle<reqwest::Result<String>> {
    upstream.push(promptgate_llm::scripted::Script::new().hang());
    send_until_upstream_called(gw, upstream, thread, "one").await
}

/// Sends to `thread` while the upstream stub streams 200 words (`<prefix>0 `, `<prefix>1 `, …) 20 ms
/// apart, and reads the answer until `deltas` text deltas have arrived: a turn mid-answer. Returns
/// the rest of the body and what was read.
pub async fn slow_answer_under_way(
    gw: &Gateway,
    upstream: &promptgate_llm::scripted::ScriptedUpstream,
    thread: &str,
    prefix: &str,
    deltas: usize,
) -> (
    futures::stream::BoxStream<'static, reqwest::Result<Vec<u8>>>,
    String,
) {
    use futures::StreamExt;
    let pieces: Vec<String> = (0..200).map(|i| format!("{prefix}{i} ")).collect();
    upstream.push(
        promptgate_llm::scripted::text(pieces).with_delay_between(std::time::Duration::from_millis(20)),
    );
    let res = gw
        .http
        .post(gw.url("/v1/chat"))
        .header(NEWEST_UI_STREAM.0, NEWEST_UI_STREAM.1)
        .json(&use_chat_body(thread, "talk", "scripted"))
        .send()
        .await
        .unwrap();
    let mut body = res
        .bytes_stream()
        .map(|chunk| chunk.map(|bytes| bytes.to_vec()))
        .boxed();
    let mut seen = String::new();
    while let Some(chunk) = body.next().await {
        seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        if seen.matches("text-delta").count() >= deltas {
            break;
        }
    }
    (body, seen)
}

/// `GET /v1/chat/{thread}/stream`, read to its end (as the newest AI SDK reads it).
pub async fn resume(gw: &Gateway, thread: &str) -> Sse {
    let res = gw
        .http
        .get(gw.url(&format!("/v1/chat/{thread}/stream")))
        .header(NEWEST_UI_STREAM.0, NEWEST_UI_STREAM.1)
        .send()
        .await
        .unwrap();
    sse_of(res).await
}

/// A response read to its end as an SSE answer.
pub async fn sse_of(res: reqwest::Response) -> Sse {
    let status = res.status();
    let headers = res.headers().clone();
    let body = res.text().await.unwrap();
    parse_sse(status, headers, &body)
}

/// Sends a request and reads its body as JSON, whatever its status.
pub async fn json_of(req: reqwest::RequestBuilder) -> Value {
    req.send().await.unwrap().json().await.unwrap()
}

/// Sends a request and reads its body as text, whatever its status.
pub async fn text_of(req: reqwest::RequestBuilder) -> String {
    req.send().await.unwrap().text().await.unwrap()
}

/// Sends SIGTERM to a server process started by a test, as an orchestrator stopping it would.
pub fn sigterm(child: &std::process::Child) {
    let pid = child.id().to_string();
    let sent = std::process::Command::new("kill").args(["-TERM", &pid]).status();
    assert!(sent.unwrap().success(), "kill -TERM {pid}");
}

/// Checks an answer is an HTML page and returns the Content-Security-Policy it is served under.
pub fn html_page_policy(res: &reqwest::Response) -> String {
    assert_eq!(res.headers()["content-type"], "text/html; charset=utf-8");
    res.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned()
}

/// Reads what is left of a stream.
pub async fn read_rest(
    mut body: futures::stream::BoxStream<'static, reqwest::Result<Vec<u8>>>,
    mut seen: String,
) -> Sse {
    use futures::StreamExt;
    while let Some(chunk) = body.next().await {
        seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
    }
    parse_sse(StatusCode::OK, Default::default(), &seen)
}

/// The text of the answer [`slow_answer_under_way`] streams.
pub fn words(prefix: &str) -> String {
    (0..200).map(|i| format!("{prefix}{i} ")).collect()
}

/// With `on_disconnect = "continue"`: drops the client of a slow answer on `owner` mid-answer, resumes
/// the turn on `reader` (the same instance or another), and checks the whole answer came and was stored.
pub async fn drop_then_resume(
    owner: &Gateway,
    reader: &Gateway,
    upstream: &promptgate_llm::scripted::ScriptedUpstream,
    thread: &str,
) {
    let (body, seen) = slow_answer_under_way(owner, upstream, thread, "c", 2).await;
    drop(body);
    assert!(seen.contains("\"type\":\"start\""));
    // A reload resumes it: the whole answer from `start`, to its end.
    let resumed = resume(reader, thread).await;
    assert_eq!(resumed.status, StatusCode::OK);
    assert_eq!(resumed.types().first(), Some(&"start"));
    assert!(resumed.done);
    assert_eq!(resumed.text(), words("c"));
    assert_eq!(resumed.of_type("finish")[0]["finishReason"], "stop");
    // And it is stored whole, as complete.
    let mut stored = reader.stored_messages(thread, 2).await;
    for _ in 0..200 {
        if stored[1]["status"] == "complete" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        stored = reader.stored_messages(thread, 2).await;
    }
    assert_eq!(stored[1]["status"], "complete");
    let answer = stored_text(&stored[1]);
    assert_eq!(answer, words("c"));
    assert_eq!(upstream.calls(), 1);
}

/// The model-facing text of the tool result for `call_id` in a recorded upstream request.
pub fn tool_message(request: &Value, call_id: &str) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .unwrap_or_else(|| panic!("no tool message for {call_id}: {request}"))["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The names of the tools offered in a recorded upstream request (none when it offered no tools).
pub fn offered_tools(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The model-facing text of every tool result in a recorded upstream request, in order.
pub fn tool_results(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// The names of the tools a prompt preview (`GET /v1/threads/{id}/prompt`) lists.
pub fn preview_tools(preview: &Value) -> Vec<String> {
    preview["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Far longer than `/healthz` takes on a server that is not stalled.
pub const HEALTH_PATIENCE: std::time::Duration = std::time::Duration::from_secs(3);

/// A runtime of its own for a gateway under load (two workers, as on a two-core machine), for
/// [`Gateway::start_on`].
pub fn server_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

impl Gateway {
    /// A gateway on `server`, a runtime of its own (two workers, as on a two-core machine, say),
    /// while the test's client and upstreams stay on the test's runtime, which nothing stalls.
    pub async fn start_on(server: &tokio::runtime::Runtime, config: Config) -> Gateway {
        // Started from a thread of its own, so what it spawns (the accept loop, turns) lands on `server`.
        let server = server.handle().clone();
        tokio::task::spawn_blocking(move || server.block_on(Gateway::start(Backend::Sqlite, config)))
            .await
            .unwrap()
    }

    /// Waits for `work`, asking `/healthz` again and again meanwhile: each must answer 200 within
    /// [`HEALTH_PATIENCE`].
    pub async fn healthy_during<T>(&self, work: impl std::future::Future<Output = T>) -> T {
        tokio::pin!(work);
        loop {
            let probe = self
                .http
                .get(self.url("/healthz"))
                .timeout(HEALTH_PATIENCE)
                .send();
            let health = tokio::select! {
                done = &mut work => return done,
                health = probe => health.expect("/healthz did not answer meanwhile"),
            };
            assert_eq!(health.status(), StatusCode::OK);
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
}

/// The directory of the installed node peers (`PROMPTGATE_TEST_NODE_PEERS_DIR`); see
/// [`peer_setting`].
pub fn node_peers_dir(scenario: &str) -> Option<String> {
    peer_setting("PROMPTGATE_TEST_NODE_PEERS_DIR", scenario)
}

/// The Python that runs the MCP peers (`PROMPTGATE_TEST_PY_PEER_PYTHON`); see [`peer_setting`].
pub fn py_peer_python(scenario: &str) -> Option<String> {
    peer_setting("PROMPTGATE_TEST_PY_PEER_PYTHON", scenario)
}

/// The string `key` of each item of the JSON array `list`.
pub fn strings_at<'a>(list: &'a Value, key: &str) -> Vec<&'a str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|item| item[key].as_str().unwrap())
        .collect()
}

/// The items of the JSON array `list` whose `key` is `value`.
pub fn where_eq<'a>(list: &'a Value, key: &str, value: &str) -> Vec<&'a Value> {
    list.as_array()
        .unwrap()
        .iter()
        .filter(|item| item[key] == value)
        .collect()
}

/// Runs an outside program (`what`) to its end on a blocking thread, so the gateway it talks to,
/// served on the test's runtime, keeps answering it.
pub async fn output_of(mut command: std::process::Command, what: &str) -> std::process::Output {
    tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("{what} does not run: {e}"))
}

/// Asserts that a process a test ran (`what`) succeeded, showing what it printed where it did not.
pub fn assert_succeeded(out: &std::process::Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// For a test whose outside part (a venv, node_modules, a peer) is missing: fails under `CI=true`,
/// which installs everything, saying `missing`; elsewhere notes `note` and gives None to skip on.
pub fn skip_without<T>(missing: &str, note: &str) -> Option<T> {
    assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "{missing}");
    #[allow(clippy::print_stderr)]
    {
        eprintln!("note: {note}");
    }
    None
}

/// A setting `crates/promptgate-mcp/tests/peers/install.sh` prints; without it `scenario` is
/// skipped with a note, except in CI, where it must be there.
fn peer_setting(variable: &str, scenario: &str) -> Option<String> {
    match std::env::var(variable) {
        Ok(value) if !value.is_empty() => Some(value),
        _ => skip_without(
            &format!("{variable} is not set: CI must run crates/promptgate-mcp/tests/peers/install.sh"),
            &format!("{variable} is not set, so {scenario} is skipped"),
        ),
    }
}

/// A child process a test started (a peer, a second `promptgate serve`), killed and reaped when the
/// test ends, passed or failed, so that no process outlives it.
pub struct Killed(pub std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A loopback port free a moment ago (bound and released), for a process that binds it itself.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Serves `app` on a loopback port until the test's runtime ends; its address.
pub async fn serve_router(app: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

/// The JSON array of strings `list` as strings.
pub fn strs(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|item| item.as_str().unwrap())
        .collect()
}

/// Scripts the model's next send: it calls `tool` once (call `id`, with the JSON `arguments`), then
/// answers `answer` once it has read the result.
pub fn one_call(
    upstream: &promptgate_llm::scripted::ScriptedUpstream,
    id: &str,
    tool: &str,
    arguments: &str,
    answer: &str,
) {
    upstream.push(promptgate_llm::scripted::tool_calls(&[(id, tool, &[arguments])]));
    upstream.push(promptgate_llm::scripted::text([answer]));
}

/// The query parameter `name` of the URL `url` (an authorization URL's `state`, `scope`...).
pub fn query_param(url: &str, name: &str) -> Option<String> {
    url::Url::parse(url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// A provider answering `429` with the wait it asks for (`retry-after`, seconds).
pub fn rate_limited(wait: &str) -> promptgate_llm::scripted::Script {
    use promptgate_llm::scripted::{Script, Step};
    Script::new()
        .step(Step::Header("retry-after".into(), wait.into()))
        .step(Step::Status(
            429,
            serde_json::json!({"error": {"message": "slow down"}}).to_string(),
        ))
}
