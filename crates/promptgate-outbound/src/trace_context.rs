//! W3C Trace Context for requests the gateway makes: the `traceparent` (and `tracestate`) of the
//! span that is current where the request starts, so a model upstream or an MCP server that traces
//! too continues the caller's trace.
//!
//! It lives here, below every crate that makes requests, because the context comes from whichever
//! span is current (entered, or attached as an OpenTelemetry context) and not from anything passed
//! down: the server installs the OpenTelemetry layer
//! (or not), and code that only makes requests needs no knowledge of it. Without the layer every
//! span context is invalid and nothing is added.

use opentelemetry::trace::{SpanContext, TraceContextExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The header names, as the W3C Trace Context recommendation spells them.
pub const TRACEPARENT: &str = "traceparent";
pub const TRACESTATE: &str = "tracestate";

/// `00-{trace id}-{span id}-{flags}`: 2 + 1 + 32 + 1 + 16 + 1 + 2 characters.
const TRACEPARENT_LEN: usize = 55;

/// The trace context of the current span, ready for a header or an MCP request's `_meta`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    pub traceparent: String,
    /// Set only when the vendors upstream of us put something in it.
    pub tracestate: Option<String>,
}

/// The OpenTelemetry context of the span current here: the entered `tracing` span's when it is
/// exported, else the attached one (the spans every request makes are made with the tracer
/// directly and attached, not entered).
pub fn current_context() -> opentelemetry::Context {
    let entered = tracing::Span::current().context();
    if entered.has_active_span() {
        entered
    } else {
        opentelemetry::Context::current()
    }
}

/// The current span's trace context ([`current_context`]); `None` when no trace is being recorded.
pub fn current() -> Option<TraceContext> {
    let context = current_context();
    let span = context.span();
    let span_context = span.span_context();
    if !span_context.is_valid() {
        return None;
    }
    let traceparent = traceparent(span_context)?;
    let tracestate = Some(span_context.trace_state().header()).filter(|s| !s.is_empty());
    Some(TraceContext {
        traceparent,
        tracestate,
    })
}

/// The `traceparent` of `context`, written digit by digit: every model request carries one, and
/// the formatting machinery cost more than the rest of reading the context.
fn traceparent(context: &SpanContext) -> Option<String> {
    let mut text = [b'-'; TRACEPARENT_LEN];
    text[..2].copy_from_slice(b"00");
    hex::encode_to_slice(context.trace_id().to_bytes(), &mut text[3..35]).ok()?;
    hex::encode_to_slice(context.span_id().to_bytes(), &mut text[36..52]).ok()?;
    hex::encode_to_slice([context.trace_flags().to_u8()], &mut text[53..]).ok()?;
    String::from_utf8(text.to_vec()).ok()
}

/// Adds the current trace context to a request's headers (nothing when no trace is recorded).
pub fn inject(request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    let mut headers = HeaderMap::new();
    inject_headers(&mut headers);
    if headers.is_empty() {
        request
    } else {
        request.headers(headers)
    }
}

/// [`inject`] for a request already built: the current trace context added to `headers`.
pub fn inject_headers(headers: &mut HeaderMap) {
    let Some(context) = current() else {
        return;
    };
    let values = [
        (TRACEPARENT, Some(context.traceparent)),
        (TRACESTATE, context.tracestate),
    ];
    for (name, value) in values {
        // A value that is not a valid header is left out rather than failing the request. Static
        // names: a name given as text is parsed, and copied, on every request.
        if let Some(value) = value.and_then(|v| HeaderValue::try_from(v).ok()) {
            headers.insert(HeaderName::from_static(name), value);
        }
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};

    #[test]
    fn traceparent_is_written_as_the_recommendation_spells_it() {
        let context = SpanContext::new(
            TraceId::from(0x0af7_6519_16cd_43dd_8448_eb21_1c80_319c),
            SpanId::from(0x00f0_67aa_0ba9_02b7),
            TraceFlags::SAMPLED,
            false,
            TraceState::NONE,
        );
        assert_eq!(
            super::traceparent(&context).as_deref(),
            Some("00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01")
        );
    }
}
