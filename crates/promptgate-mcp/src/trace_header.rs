//! The HTTP client MCP sessions speak through: reqwest's, plus the W3C `traceparent` (and
//! `tracestate`) header on each request that carries one in its `_meta`.
//!
//! The trace context of a tool call is put into the request's `_meta` where the call starts (see
//! `Session::call_tool`), because rmcp sends the request from its own transport task, where the
//! tool call's span is no longer current. Servers behind a proxy or a tracing middleware look at
//! the header rather than the JSON-RPC body, so the same context is copied onto it here, from the
//! message itself: the header and the `_meta` can never disagree.

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use promptgate_outbound::trace_context::{TRACEPARENT, TRACESTATE};
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, RequestParamsMeta};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

/// reqwest's MCP client, with the trace context of each tool call copied onto its headers.
#[derive(Clone)]
pub(crate) struct TracedHttp(pub reqwest::Client);

type Outcome<T> = Result<T, StreamableHttpError<reqwest::Error>>;

/// rmcp posts a message three ways, which differ only in their name and a last limit argument; each
/// copies the trace context onto the headers, then hands everything to reqwest's client as it came.
/// All three are overridden (not just the one rmcp's transport calls) so that no path falls back on a
/// default that would drop the SSE size limit. Written once here, so the three cannot drift apart.
macro_rules! traced_posts {
    ($($method:ident($($limit:ident: $limit_type:ty)?)),* $(,)?) => {$(
        async fn $method(
            &self,
            uri: Arc<str>,
            message: ClientJsonRpcMessage,
            session_id: Option<Arc<str>>,
            auth_header: Option<String>,
            mut custom_headers: HashMap<HeaderName, HeaderValue>,
            $($limit: $limit_type,)?
        ) -> Outcome<StreamableHttpPostResponse> {
            copy_trace_context(&message, &mut custom_headers);
            self.0
                .$method(uri, message, session_id, auth_header, custom_headers $(, $limit)?)
                .await
        }
    )*};
}

/// The two ways rmcp opens the server's event stream carry no tool call, so they go to reqwest's
/// client untouched; both are overridden for the same reason as the posts.
macro_rules! forwarded_streams {
    ($($method:ident($($limit:ident: $limit_type:ty)?)),* $(,)?) => {$(
        async fn $method(
            &self,
            uri: Arc<str>,
            session_id: Option<Arc<str>>,
            last_event_id: Option<String>,
            auth_header: Option<String>,
            custom_headers: HashMap<HeaderName, HeaderValue>,
            $($limit: $limit_type,)?
        ) -> Outcome<BoxStream<'static, Result<Sse, SseError>>> {
            self.0
                .$method(uri, session_id, last_event_id, auth_header, custom_headers $(, $limit)?)
                .await
        }
    )*};
}

impl StreamableHttpClient for TracedHttp {
    type Error = reqwest::Error;

    traced_posts! {
        post_message(),
        post_message_with_max_sse_event_size(max_sse_event_size: usize),
        post_message_with_response_limits(limits: StreamableHttpResponseLimits),
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Outcome<()> {
        self.0
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    forwarded_streams! {
        get_stream(),
        get_stream_with_max_sse_event_size(max_sse_event_size: usize),
    }
}

/// Puts a tool call's `_meta` trace context onto the request's headers. Other messages carry none.
fn copy_trace_context(message: &ClientJsonRpcMessage, headers: &mut HashMap<HeaderName, HeaderValue>) {
    let JsonRpcMessage::Request(request) = message else {
        return;
    };
    let ClientRequest::CallToolRequest(call) = &request.request else {
        return;
    };
    let pairs = [
        (TRACEPARENT, call.params.traceparent()),
        (TRACESTATE, call.params.tracestate()),
    ];
    for (name, value) in pairs {
        let Some(value) = value.and_then(|v| HeaderValue::from_str(v).ok()) else {
            continue;
        };
        headers.insert(HeaderName::from_static(name), value);
    }
}
