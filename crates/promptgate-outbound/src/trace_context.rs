//! W3C Trace Context for requests the gateway makes: the `traceparent` (and `tracestate`) of the
//! span that is current where the request starts, so a model upstream or an MCP server that traces
//! too continues the caller's trace.
//!
//! It lives here, below every crate that makes requests, because the context comes from whichever
//! span is current and not from anything passed down: the server installs the OpenTelemetry layer
//! (or not), and code that only makes requests needs no knowledge of it. Without the layer every
//! span context is invalid and nothing is added.

use opentelemetry::trace::TraceContextExt;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The header names, as the W3C Trace Context recommendation spells them.
pub const TRACEPARENT: &str = "traceparent";
pub const TRACESTATE: &str = "tracestate";

/// The trace context of the current span, ready for a header or an MCP request's `_meta`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    pub traceparent: String,
    /// Set only when the vendors upstream of us put something in it.
    pub tracestate: Option<String>,
}

/// The current span's trace context; `None` when no trace is being recorded.
pub fn current() -> Option<TraceContext> {
    let context = tracing::Span::current().context();
    let span = context.span();
    let span_context = span.span_context();
    if !span_context.is_valid() {
        return None;
    }
    let traceparent = format!(
        "00-{}-{}-{:02x}",
        span_context.trace_id(),
        span_context.span_id(),
        span_context.trace_flags().to_u8()
    );
    let tracestate = Some(span_context.trace_state().header()).filter(|s| !s.is_empty());
    Some(TraceContext {
        traceparent,
        tracestate,
    })
}

/// Adds the current trace context to a request's headers (nothing when no trace is recorded).
pub fn inject(request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    match current() {
        None => request,
        Some(context) => {
            let request = request.header(TRACEPARENT, context.traceparent);
            match context.tracestate {
                Some(state) => request.header(TRACESTATE, state),
                None => request,
            }
        }
    }
}
