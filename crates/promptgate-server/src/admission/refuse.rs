//! The answer to a request the gate refused, in the shape of the API it was sent to.
//!
//! Two refusals differ only in their reason and their request id, so each reason's body is written
//! once, when the server starts, by the same code that writes any other error, and a refusal copies
//! it around its id. Serialising the error anew was a fifth of what a refusal cost (callgrind, 8k of
//! 43k instructions), and under overload most requests are refusals.

use std::convert::Infallible;
use std::future::Ready;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use bytes::BytesMut;
use promptgate_core::admission::Refusal;
use tower::Service;

use crate::error::{ApiError, ErrorCode};

/// Answers a request the gate refused (its [`Refusal`] in the extensions).
#[derive(Clone)]
pub struct Refuse {
    retry_after: HeaderValue,
    /// None only if a body could not be cut around its id; then each refusal is written whole.
    written: Option<Arc<Written>>,
}

impl Refuse {
    /// Refusals that tell the client to come back after `retry_after` seconds.
    pub fn new(retry_after: HeaderValue) -> Self {
        Self {
            retry_after,
            written: Written::new().map(Arc::new),
        }
    }
}

impl Service<Request> for Refuse {
    type Response = Response;
    type Error = Infallible;
    type Future = Ready<Result<Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let reason = req
            .extensions()
            .get::<Refusal>()
            .copied()
            .unwrap_or(Refusal::Saturated);
        let api = Api::of(&req);
        let request_id = req.headers().get(&crate::observe::REQUEST_ID);
        let mut res = self
            .written
            .as_deref()
            .and_then(|written| written.answer(api, reason, request_id?))
            .unwrap_or_else(|| write_whole(api, reason, request_id));
        res.headers_mut()
            .insert(header::RETRY_AFTER, self.retry_after.clone());
        std::future::ready(Ok(res))
    }
}

/// Whose error shape a refusal takes.
#[derive(Clone, Copy)]
enum Api {
    Ours,
    Anthropic,
}

impl Api {
    fn of(req: &Request) -> Self {
        if req.uri().path() == "/v1/messages" {
            Self::Anthropic
        } else {
            Self::Ours
        }
    }
}

const REASONS: [Refusal; 3] = [Refusal::Saturated, Refusal::Ceiling, Refusal::StoreBusy];

fn index(reason: Refusal) -> usize {
    match reason {
        Refusal::Saturated => 0,
        Refusal::Ceiling => 1,
        Refusal::StoreBusy => 2,
    }
}

/// Each reason's body in each shape, cut where the request id goes.
struct Written {
    ours: [Around; 3],
    anthropic: [Around; 3],
}

/// A body's bytes before and after its request id.
#[derive(Default)]
struct Around {
    head: Box<[u8]>,
    tail: Box<[u8]>,
}

/// Stands where the id goes while the bodies are written; JSON writes it as it is.
const MARK: &str = "request-id-of-the-refusal";

impl Written {
    fn new() -> Option<Self> {
        let cut = |api| {
            let arounds = REASONS.map(|reason| Around::of(api, reason));
            arounds
                .iter()
                .all(Option::is_some)
                .then(|| arounds.map(Option::unwrap_or_default))
        };
        Some(Self {
            ours: cut(Api::Ours)?,
            anthropic: cut(Api::Anthropic)?,
        })
    }

    /// The refusal for `request_id`, or none unless the id is printable ASCII that JSON writes as
    /// it is: quotes, backslashes and tabs need escaping, and bytes outside ASCII are no text the
    /// whole writer would copy; it answers those itself.
    fn answer(&self, api: Api, reason: Refusal, request_id: &HeaderValue) -> Option<Response> {
        let id = request_id.as_bytes();
        let copied_as_is = |b: &u8| (b' '..=b'~').contains(b) && !matches!(b, b'"' | b'\\');
        if !id.iter().all(copied_as_is) {
            return None;
        }
        let around = match api {
            Api::Ours => &self.ours[index(reason)],
            Api::Anthropic => &self.anthropic[index(reason)],
        };
        let mut body = BytesMut::with_capacity(around.head.len() + id.len() + around.tail.len());
        body.extend_from_slice(&around.head);
        body.extend_from_slice(id);
        body.extend_from_slice(&around.tail);
        let mut res = Response::new(Body::from(body.freeze()));
        *res.status_mut() = ErrorCode::Overloaded.status();
        res.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Api::Anthropic = api {
            res.headers_mut().insert("request-id", request_id.clone());
        }
        Some(res)
    }
}

impl Around {
    fn of(api: Api, reason: Refusal) -> Option<Self> {
        let res = write_whole(api, reason, Some(&HeaderValue::from_static(MARK)));
        // The body is bytes already in memory: reading it never waits.
        let body = futures::executor::block_on(axum::body::to_bytes(res.into_body(), usize::MAX)).ok()?;
        let at = body.windows(MARK.len()).position(|w| w == MARK.as_bytes())?;
        Some(Self {
            head: body[..at].into(),
            tail: body[at + MARK.len()..].into(),
        })
    }
}

/// The refusal written as every other error is: the bodies above are cut from this.
fn write_whole(api: Api, reason: Refusal, request_id: Option<&HeaderValue>) -> Response {
    match api {
        Api::Anthropic => {
            crate::routes::messages::anthropic_error(ErrorCode::Overloaded, message(reason), request_id)
        }
        Api::Ours => {
            let id = request_id
                .and_then(|id| id.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            crate::observe::with_request_id(id, || {
                ApiError::new(ErrorCode::Overloaded, message(reason)).into_response()
            })
        }
    }
}

fn message(reason: Refusal) -> &'static str {
    match reason {
        Refusal::Saturated => {
            "the server is running as many turns as it can carry right now; try again shortly"
        }
        Refusal::Ceiling => {
            "the server is running as many turns as it may (turn.max_in_flight); try again shortly"
        }
        Refusal::StoreBusy => {
            "the server's database is taking all the writes it can right now; try again shortly"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn parts(res: Response) -> (String, Vec<(String, String)>, Vec<u8>) {
        let status = res.status().to_string();
        let mut headers: Vec<(String, String)> = res
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_owned()))
            .collect();
        headers.sort();
        let body = axum::body::to_bytes(res.into_body(), usize::MAX)
            .await
            .unwrap()
            .to_vec();
        (status, headers, body)
    }

    #[tokio::test]
    async fn a_refusal_copied_around_its_id_is_the_refusal_written_whole() {
        let written = Written::new().unwrap();
        for api in [Api::Ours, Api::Anthropic] {
            for reason in REASONS {
                for id in ["0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0", "client's own id", ""] {
                    let id = HeaderValue::from_str(id).unwrap();
                    let copied = parts(written.answer(api, reason, &id).unwrap()).await;
                    let whole = parts(write_whole(api, reason, Some(&id))).await;
                    assert_eq!(copied, whole, "{}", String::from_utf8_lossy(&whole.2));
                    let body: serde_json::Value = serde_json::from_slice(&copied.2).unwrap();
                    assert_eq!(body["error"]["message"], message(reason));
                }
            }
        }
    }

    #[test]
    fn an_id_that_json_must_escape_is_left_to_the_whole_writer() {
        let written = Written::new().unwrap();
        for id in ["say \"hi\"", "back\\slash", "tab\there"] {
            let id = HeaderValue::from_str(id).unwrap();
            assert!(written.answer(Api::Ours, Refusal::Saturated, &id).is_none());
        }
    }

    #[test]
    fn an_id_outside_ascii_is_left_to_the_whole_writer() {
        let written = Written::new().unwrap();
        let id = HeaderValue::from_bytes("café".as_bytes()).unwrap();
        for api in [Api::Ours, Api::Anthropic] {
            assert!(written.answer(api, Refusal::Saturated, &id).is_none());
        }
    }
}
