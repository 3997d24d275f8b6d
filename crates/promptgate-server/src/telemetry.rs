//! Traces: the OpenTelemetry layer under `tracing`, exporting over OTLP/HTTP (protobuf) or OTLP/gRPC
//! when `[telemetry]` or the standard `OTEL_*` variables turn it on.
//!
//! Which spans are exported: the ones on targets under `promptgate::` (the HTTP request's server
//! span and the GenAI and MCP spans of turns, tools and upstream calls); the rest of the code's
//! spans and every log event stay in the logs only. The exporter batches on its own thread, so a
//! request pays for building its spans and queueing them, never for the network. When export is off
//! no layer is installed: the GenAI spans' callsites are disabled in the log filter and cost one
//! check each.

use std::sync::OnceLock;

use opentelemetry::KeyValue;
use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{Status, TraceContextExt, TracerProvider as _};
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, filter_fn};
use tracing_subscriber::registry::LookupSpan;

use crate::config::{OtlpProtocol, TelemetryConfig};

/// The target prefix of the spans that are exported; the GenAI spans use `promptgate::otel`, which
/// the logs leave out.
pub const EXPORTED_TARGETS: &str = "promptgate::";
pub const TRACE_ONLY_TARGET: &str = "promptgate::otel";

/// The provider behind the installed layer, kept to flush it at shutdown.
static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// The runtime the gRPC exporter's connection lives on (see [`grpc_exporter`]).
static GRPC_RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();

/// The tracer provider `config` asks for: an OTLP exporter behind a batch processor. Plain
/// OTLP/HTTP goes through our own encoder ([`crate::telemetry_export`]); gRPC, and HTTP with
/// compression, through the SDK's exporter.
pub fn provider(config: &TelemetryConfig) -> anyhow::Result<SdkTracerProvider> {
    let resource = Resource::builder()
        .with_service_name(config.service_name.clone())
        .build();
    let env = |name: &str| std::env::var(name).ok();
    let builder = SdkTracerProvider::builder().with_resource(resource);
    let builder = match config.protocol {
        OtlpProtocol::HttpProtobuf if crate::telemetry_export::handles(&env) => builder.with_batch_exporter(
            crate::telemetry_export::HttpSpanExporter::new(config.endpoint.as_deref(), &env)?,
        ),
        OtlpProtocol::HttpProtobuf => builder.with_batch_exporter(http_exporter(config)?),
        OtlpProtocol::Grpc => builder.with_batch_exporter(grpc_exporter(config)?),
    };
    Ok(builder.build())
}

fn http_exporter(config: &TelemetryConfig) -> anyhow::Result<SpanExporter> {
    let mut exporter = SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary);
    if let Some(endpoint) = config.endpoint.as_deref() {
        exporter = exporter.with_endpoint(format!("{}/v1/traces", endpoint.trim_end_matches('/')));
    }
    Ok(exporter.build()?)
}

/// tonic's client is built, and its connection driven, on a Tokio runtime. The exporter is made
/// before the server's runtime exists and sends from the batch processor's own thread, so the
/// connection gets a one-thread runtime of its own, kept for the life of the process.
fn grpc_exporter(config: &TelemetryConfig) -> anyhow::Result<SpanExporter> {
    let runtime = match GRPC_RUNTIME.get() {
        Some(runtime) => runtime,
        None => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("otlp-grpc")
                .enable_all()
                .build()?;
            GRPC_RUNTIME.get_or_init(|| runtime)
        }
    };
    let _inside = runtime.enter();
    let mut exporter = SpanExporter::builder().with_tonic();
    if let Some(endpoint) = config.endpoint.as_deref() {
        exporter = exporter.with_endpoint(endpoint);
    }
    Ok(exporter.build()?)
}

/// The layer that turns the exported spans of `provider` into OpenTelemetry spans. With
/// `capture_content` it also lets through the callsite the turn asks before it records what was
/// said (see `promptgate_service::deployment::CONTENT_TARGET`).
pub fn layer<S>(provider: &SdkTracerProvider, capture_content: bool) -> impl Layer<S> + use<S>
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    let tracer = provider.tracer("promptgate");
    let exporting = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        // Source locations and thread names on every span cost more than they tell here.
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        // Nothing here reads the active OpenTelemetry context (propagation asks the `tracing`
        // span for its context), so entering a span need not activate it; the layer is then
        // kept out of enters and exits altogether (see `telemetry_polls`).
        .with_context_activation(false)
        .with_target(false)
        // The filter reads only a callsite's metadata, so it is asked once per callsite. Every
        // exported span is at INFO: the hint keeps DEBUG and TRACE callsites, which only the log
        // filter could want, from being registered with this layer at all.
        .with_filter(
            filter_fn(move |meta| {
                (meta.is_span() && meta.target().starts_with(EXPORTED_TARGETS))
                    || (capture_content && meta.target() == promptgate_service::deployment::CONTENT_TARGET)
            })
            .with_max_level_hint(LevelFilter::INFO),
        );
    crate::telemetry_polls::WithoutPolls(exporting)
}

/// Keeps the provider, so [`shutdown`] can flush what is still queued.
pub fn keep(provider: SdkTracerProvider) {
    let _ = PROVIDER.set(provider);
}

/// Whether spans are exported in this process.
pub fn enabled() -> bool {
    PROVIDER.get().is_some()
}

/// Sends what is queued now, waiting for the collector's answer (blocks the calling thread).
pub fn flush() {
    if let Some(provider) = PROVIDER.get()
        && let Err(err) = provider.force_flush()
    {
        tracing::warn!(error = %err, "the trace exporter could not send its queue");
    }
}

/// Sends what is queued and stops the exporter; at the end of `serve`.
pub fn shutdown() {
    if let Some(provider) = PROVIDER.get()
        && let Err(err) = provider.shutdown()
    {
        tracing::warn!(error = %err, "the trace exporter did not shut down cleanly");
    }
}

/// The OpenTelemetry span behind a request's server span, read once when the request starts, for
/// the response's attributes ([`record_response`]).
pub struct ServerTrace(opentelemetry::Context);

/// The server span's OpenTelemetry span and its trace id (as the W3C Trace Context writes it, for
/// the logs and error bodies); `None` when no trace is recorded. Reading it starts the span, so
/// the turn's spans find a started parent; the request's method (the span's name until the route
/// is known) and path are set on it then, in one call, the method borrowed (as `tracing` fields
/// each was copied into a new `String`, the method twice).
pub fn server_trace(span: &tracing::Span, method: &'static str, path: &str) -> Option<(ServerTrace, String)> {
    if !enabled() || span.is_disabled() {
        return None;
    }
    let context = span.context();
    let otel_span = context.span();
    let span_context = otel_span.span_context().clone();
    if !span_context.is_valid() {
        return None;
    }
    otel_span.update_name(method);
    otel_span.set_attributes([
        KeyValue::new("http.request.method", method),
        KeyValue::new("url.path", path.to_owned()),
    ]);
    // Into a buffer: `hex::encode` goes through an iterator of chars, and the formatter's hex of a
    // `u128` through padding; this is on every request.
    let mut id = [0u8; 32];
    hex::encode_to_slice(span_context.trace_id().to_bytes(), &mut id).ok()?;
    let id = String::from_utf8(id.to_vec()).ok()?;
    Some((ServerTrace(context), id))
}

/// The server span of an HTTP request, continuing the caller's trace when the request carries a
/// valid `traceparent`. Nothing is read from the headers when traces are off. The name, method
/// and path are set when the span is started ([`server_trace`]), the route and the status when
/// the response is known ([`record_response`]); the fields are declared `Empty` so that the
/// exporting layer sizes the span's attribute list for them.
pub fn server_span(request: &axum::extract::Request) -> tracing::Span {
    let span = tracing::info_span!(
        target: "promptgate::otel",
        "http_request",
        // The kind is read when the layer makes the span; it cannot be set afterwards.
        otel.kind = "server",
        "http.request.method" = tracing::field::Empty,
        "url.path" = tracing::field::Empty,
        "http.route" = tracing::field::Empty,
        "http.response.status_code" = tracing::field::Empty,
    );
    if enabled() && request.headers().contains_key(&TRACEPARENT) {
        let parent = TraceContextPropagator::new().extract(&Headers(request.headers()));
        if parent.span().span_context().is_valid() {
            let _ = span.set_parent(parent);
        }
    }
    span
}

/// The route and status of a request, on its server span (named `{method} {route}` as the HTTP
/// conventions say; a 5xx is an error of ours).
///
/// They go straight to the OpenTelemetry span read when the request started: no lookup of the
/// span at all, where recording each as a `tracing` field looked it up once per layer and field.
pub fn record_response(trace: Option<&ServerTrace>, method: &str, route: &str, status: u16) {
    let Some(trace) = trace else {
        return;
    };
    let otel_span = trace.0.span();
    otel_span.update_name(format!("{method} {route}"));
    otel_span.set_attributes([
        KeyValue::new("http.route", route.to_owned()),
        // Signed: the exporter sends unsigned values as strings.
        KeyValue::new("http.response.status_code", i64::from(status)),
    ]);
    if status >= 500 {
        otel_span.set_status(Status::error(""));
    }
}

/// A name given as text would be parsed again on every request.
static TRACEPARENT: axum::http::HeaderName = axum::http::HeaderName::from_static("traceparent");

/// A request's headers as the propagator reads them.
struct Headers<'a>(&'a axum::http::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(axum::http::HeaderName::as_str).collect()
    }
}

/// The trace of the request being handled, for an answer's metadata: its id, and its page in the
/// operator's trace UI when `[telemetry] trace_ui_url` is set.
pub fn trace_link(config: &TelemetryConfig) -> Option<promptgate_service::TraceLink> {
    let id = crate::observe::current_trace_id()?;
    let url = config.trace_url(&id);
    Some(promptgate_service::TraceLink { id, url })
}
