//! The floor under the facade's cost: a proxy made of the gateway's own HTTP parts (the server's
//! accept loop and connection handling, a reqwest client set up as the model client is) that
//! forwards `POST /v1/chat/completions` to the upstream and streams the answer back.
//! What promptgate spends above this on a completion is its own work (middleware, prompt, turn,
//! translation); what this spends is the HTTP stack and the kernel's on this machine.
//!
//! The gateway asks its model for a stream even when its client wants the whole answer, so this
//! does too: a request with `"stream":false` goes upstream with `"stream":true`, and the stream is
//! read to its end and answered in one body, untranslated (the floor reads what the gateway reads,
//! and leaves the translation out).

use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use promptgate_server::config::ServerConfig;
use promptgate_server::listen::{ConnectionLimits, serve_connections};

struct Upstream {
    http: reqwest::Client,
    completions: String,
}

/// Serves on `listen` until the process is killed.
pub async fn serve(listen: &str, upstream_base_url: &str) -> anyhow::Result<()> {
    let upstream = Arc::new(Upstream {
        http: reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .tcp_nodelay(true)
            .build()?,
        completions: format!("{}/chat/completions", upstream_base_url.trim_end_matches('/')),
    });
    let app = Router::new()
        .route("/readyz", get(|| async { "ready" }))
        .route("/v1/chat/completions", post(forward))
        .with_state(upstream);
    let listener = tokio::net::TcpListener::bind(listen).await?;
    // The gateway's own defaults, so the floor handles connections exactly as promptgate does.
    let limits = ConnectionLimits::from_config(&ServerConfig::default());
    serve_connections(listener, app, limits, std::future::pending()).await?;
    Ok(())
}

async fn forward(State(upstream): State<Arc<Upstream>>, body: Bytes) -> Response {
    let changed = as_stream_request(&body);
    let whole = changed.is_some();
    let streamed_body = changed.map_or(body, Bytes::from);
    let sent = upstream
        .http
        .post(&upstream.completions)
        .header(header::CONTENT_TYPE, "application/json")
        .body(streamed_body)
        .send()
        .await;
    match sent {
        Ok(answer) => {
            let status = answer.status();
            let content_type = answer.headers().get(header::CONTENT_TYPE).cloned();
            let body = if whole {
                match answer.bytes().await {
                    Ok(bytes) => Body::from(bytes),
                    Err(error) => return (StatusCode::BAD_GATEWAY, error.to_string()).into_response(),
                }
            } else {
                Body::from_stream(answer.bytes_stream())
            };
            let mut response = Response::new(body);
            *response.status_mut() = status;
            if let Some(content_type) = content_type {
                response.headers_mut().insert(header::CONTENT_TYPE, content_type);
            }
            response
        }
        Err(error) => (StatusCode::BAD_GATEWAY, error.to_string()).into_response(),
    }
}

/// The body of a request that asks for a whole answer (`"stream":false`), changed to ask for a
/// stream; `None` for any other body, which goes upstream as it came. The driver's requests are
/// compact JSON with a `stream` member.
fn as_stream_request(body: &[u8]) -> Option<Vec<u8>> {
    const WHOLE: &[u8] = b"\"stream\":false";
    let at = memchr::memmem::find(body, WHOLE)?;
    let mut changed = Vec::with_capacity(body.len());
    changed.extend_from_slice(&body[..at]);
    changed.extend_from_slice(b"\"stream\":true");
    changed.extend_from_slice(&body[at + WHOLE.len()..]);
    Some(changed)
}

#[cfg(test)]
mod tests {
    use super::as_stream_request;

    #[test]
    fn a_request_for_a_whole_answer_goes_upstream_as_a_stream() {
        assert_eq!(
            as_stream_request(br#"{"model":"m","stream":false,"messages":[]}"#).as_deref(),
            Some(&br#"{"model":"m","stream":true,"messages":[]}"#[..])
        );
        assert_eq!(as_stream_request(br#"{"model":"m","stream":true}"#), None);
    }
}
