//! A scripted OpenAI-compatible server on loopback, speaking the real wire format. Tests queue
//! scripts and then assert what was sent; the load driver replays one answer as fast as it can.

pub mod anthropic;
mod completion;
mod script;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::serve::ListenerExt;
use bytes::Bytes;
use serde_json::Value;
use tokio::task::JoinHandle;

pub use script::{
    Script, Step, choice_chunk, content_chunk, finish_chunk, reasoning_chunk, role_chunk, text,
    tool_call_chunk, tool_calls, usage_chunk,
};

/// Request bodies kept for assertions; a load run must not grow without bound.
const MAX_RECORDED: usize = 10_000;

/// The server. It stops when dropped.
pub struct ScriptedUpstream {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: JoinHandle<()>,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<VecDeque<Script>>,
    default: Mutex<Option<Arc<RenderedScript>>>,
    requests: Mutex<Vec<(HeaderMap, Bytes)>>,
    recording: AtomicBool,
    calls: AtomicUsize,
    connections: AtomicUsize,
    disconnects: AtomicUsize,
}

/// A script rendered once, so replaying it costs no JSON work.
struct RenderedScript {
    script: Script,
    /// The whole SSE body, when the script has no pauses or tricks.
    sse: Option<Bytes>,
    completion: Bytes,
}

impl ScriptedUpstream {
    /// Binds 127.0.0.1 on a free port and serves `POST /v1/chat/completions` and
    /// `POST /v1/messages`.
    pub async fn start() -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            recording: AtomicBool::new(true),
            ..Shared::default()
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            // The same scripts, for clients of Anthropic's Messages API; the scripts of
            // [`anthropic`] speak that wire format.
            .route("/v1/messages", post(chat))
            .with_state(shared.clone());
        let counter = shared.clone();
        let listener = listener.tap_io(move |_| {
            counter.connections.fetch_add(1, Ordering::Relaxed);
        });
        let server = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                tracing::warn!(%error, "the scripted upstream stopped");
            }
        });
        Ok(Self { addr, shared, server })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL a provider config should use (`http://127.0.0.1:PORT/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Queues a script for the next request; scripts are used in order, once each.
    pub fn push(&self, script: impl Into<Script>) {
        lock(&self.shared.queue).push_back(script.into());
    }

    /// The answer for every request that finds the queue empty. Without one, such a request gets
    /// a 500 that says the script ran out.
    pub fn replay_by_default(&self, script: impl Into<Script>) {
        *lock(&self.shared.default) = Some(Arc::new(RenderedScript::new(script.into())));
    }

    /// Stops keeping request bodies (calls are still counted), for load runs.
    pub fn set_recording(&self, on: bool) {
        self.shared.recording.store(on, Ordering::Relaxed);
    }

    /// How many requests arrived.
    pub fn calls(&self) -> usize {
        self.shared.calls.load(Ordering::Relaxed)
    }

    /// How many TCP connections were accepted; fewer than calls means clients reuse connections.
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::Relaxed)
    }

    /// How many streamed answers the client abandoned before their script ended.
    pub fn disconnects(&self) -> usize {
        self.shared.disconnects.load(Ordering::Relaxed)
    }

    /// Every recorded request body, parsed (bodies that are not JSON appear as strings).
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.shared.requests)
            .iter()
            .map(|(_, body)| {
                serde_json::from_slice(body)
                    .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()))
            })
            .collect()
    }

    /// The most recent request body.
    pub fn last_request(&self) -> Option<Value> {
        self.requests().pop()
    }

    /// The headers of every recorded request, in arrival order.
    pub fn request_headers(&self) -> Vec<HeaderMap> {
        lock(&self.shared.requests)
            .iter()
            .map(|(headers, _)| headers.clone())
            .collect()
    }
}

impl Drop for ScriptedUpstream {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// The two answers a plain script stands for, as bytes: its SSE body, and the same answer as one
/// `chat.completion` for a request that did not ask for a stream. `None` when the script pauses,
/// cuts, hangs or fails, which only a live replay can do.
pub fn rendered(script: &Script) -> Option<(Bytes, Bytes)> {
    let rendered = RenderedScript::new(script.clone());
    rendered.sse.map(|sse| (sse, rendered.completion))
}

impl RenderedScript {
    fn new(script: Script) -> Self {
        let plain = script
            .steps
            .iter()
            .all(|s| matches!(s, Step::Chunk(_) | Step::Raw(_) | Step::Comment | Step::Done));
        let sse = plain.then(|| {
            let mut body = Vec::new();
            for step in &script.steps {
                if let Some(bytes) = step_bytes(step) {
                    body.extend_from_slice(&bytes);
                }
            }
            Bytes::from(body)
        });
        let completion = Bytes::from(completion::from_script(&script).to_string());
        Self {
            script,
            sse,
            completion,
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[derive(serde::Deserialize)]
struct StreamFlag {
    #[serde(default)]
    stream: bool,
}

async fn chat(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    shared.calls.fetch_add(1, Ordering::Relaxed);
    let Ok(flag) = serde_json::from_slice::<StreamFlag>(&body) else {
        return error(StatusCode::BAD_REQUEST, "the request body is not JSON");
    };
    if shared.recording.load(Ordering::Relaxed) {
        let mut requests = lock(&shared.requests);
        if requests.len() < MAX_RECORDED {
            requests.push((headers, body));
        }
    }

    let queued = lock(&shared.queue).pop_front();
    let rendered = match queued {
        Some(script) => Arc::new(RenderedScript::new(script)),
        None => match lock(&shared.default).clone() {
            Some(rendered) => rendered,
            None => {
                return error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the scripted upstream has no script left",
                );
            }
        },
    };

    let mut steps: VecDeque<Step> = rendered.script.steps.iter().cloned().collect();
    let mut extra_headers = HeaderMap::new();
    // Leading steps decide when, and whether, the headers go out.
    while let Some(step) = steps.front() {
        match step {
            Step::Delay(delay) => tokio::time::sleep(*delay).await,
            Step::Hang => std::future::pending::<()>().await,
            Step::Header(name, value) => {
                if let (Ok(name), Ok(value)) = (
                    header::HeaderName::try_from(name.as_str()),
                    header::HeaderValue::try_from(value.as_str()),
                ) {
                    extra_headers.insert(name, value);
                }
            }
            Step::Status(status, body) => {
                let status = StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                return (
                    status,
                    extra_headers,
                    [(header::CONTENT_TYPE, "application/json")],
                    body.clone(),
                )
                    .into_response();
            }
            _ => break,
        }
        steps.pop_front();
    }

    if !flag.stream {
        return whole_answer(steps, extra_headers, &rendered, shared).await;
    }
    let body = match &rendered.sse {
        Some(sse) => Body::from(sse.clone()),
        None => Body::from_stream(play(steps, shared.clone())),
    };
    (
        extra_headers,
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// The answer to a request that did not ask for a stream: the script's `chat.completion` in one
/// body, once the script's pauses have passed, as a server says nothing while its model writes. A
/// hang (or an endless repeat) never answers, a cut drops the connection after the headers, and
/// a status in the body's place answers with that status. A client that leaves before the answer
/// counts as a disconnect.
async fn whole_answer(
    steps: VecDeque<Step>,
    headers: HeaderMap,
    rendered: &RenderedScript,
    shared: Arc<Shared>,
) -> Response {
    let mut waiting = Playback {
        steps: VecDeque::new(),
        shared,
        complete: false,
    };
    let json = [(header::CONTENT_TYPE, "application/json")];
    for step in steps {
        match step {
            Step::Delay(delay) => tokio::time::sleep(delay).await,
            Step::Hang | Step::Repeat(_) => std::future::pending::<()>().await,
            Step::Cut => {
                waiting.mark_complete();
                let cut = std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "scripted cut");
                let body = Body::from_stream(futures::stream::once(async { Err::<Bytes, _>(cut) }));
                return (headers, json, body).into_response();
            }
            Step::Status(status, body) => {
                waiting.mark_complete();
                let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                return (status, headers, json, body).into_response();
            }
            Step::Chunk(_) | Step::Raw(_) | Step::Comment | Step::Done | Step::Header(..) => {}
        }
    }
    waiting.mark_complete();
    (headers, json, rendered.completion.clone()).into_response()
}

fn error(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({ "error": { "message": message } }).to_string();
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// The SSE bytes of a step that writes something.
fn step_bytes(step: &Step) -> Option<Bytes> {
    match step {
        Step::Chunk(chunk) => Some(Bytes::from(format!("data: {chunk}\n\n"))),
        Step::Raw(bytes) => Some(bytes.clone()),
        Step::Comment => Some(Bytes::from_static(b": keep-alive\n\n")),
        Step::Done => Some(Bytes::from_static(b"data: [DONE]\n\n")),
        // Headers are gone by now; report a late status the way providers report late errors.
        Step::Status(status, body) => {
            let chunk = serde_json::json!({ "error": { "message": body, "code": status } });
            Some(Bytes::from(format!("data: {chunk}\n\n")))
        }
        Step::Delay(_) | Step::Cut | Step::Hang | Step::Header(..) | Step::Repeat(_) => None,
    }
}

/// Counts a disconnect when the body is dropped before its script ended.
struct Playback {
    steps: VecDeque<Step>,
    shared: Arc<Shared>,
    complete: bool,
}

impl Playback {
    fn mark_complete(&mut self) {
        self.complete = true;
    }
}

impl Drop for Playback {
    fn drop(&mut self) {
        if !self.complete {
            self.shared.disconnects.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn play(
    steps: VecDeque<Step>,
    shared: Arc<Shared>,
) -> impl futures::Stream<Item = std::io::Result<Bytes>> + Send {
    let playback = Playback {
        steps,
        shared,
        complete: false,
    };
    futures::stream::unfold(playback, |mut playback| async move {
        loop {
            let Some(step) = playback.steps.pop_front() else {
                playback.mark_complete();
                return None;
            };
            match step {
                Step::Delay(delay) => tokio::time::sleep(delay).await,
                Step::Hang => std::future::pending::<()>().await,
                // Nothing to repeat sends nothing, like a hang.
                Step::Repeat(steps) if steps.is_empty() => std::future::pending::<()>().await,
                Step::Repeat(steps) => {
                    let again = Step::Repeat(steps.clone());
                    for step in std::iter::once(again).chain(steps.into_iter().rev()) {
                        playback.steps.push_front(step);
                    }
                }
                Step::Cut => {
                    playback.mark_complete();
                    let cut = std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "scripted cut");
                    return Some((Err(cut), playback));
                }
                other => {
                    if let Some(bytes) = step_bytes(&other) {
                        return Some((Ok(bytes), playback));
                    }
                }
            }
        }
    })
}
