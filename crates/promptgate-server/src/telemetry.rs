//! Traces: the OpenTelemetry layer under `tracing`, exporting over OTLP/HTTP (protobuf) or OTLP/gRPC
//! when `[telemetry]` or the standard `OTEL_*` variables turn it on.
//!
//! Which spans are exported: the HTTP request's server span, the turn's agent span and each model
//! call's, made with the tracer directly (`promptgate_service::trace`), and the `tracing` spans on
//! targets under `promptgate::` (tool calls, MCP requests, web fetches and searches, store calls);
//! the rest of the code's spans and every log event stay in the logs only. The exporter batches on
//! its own thread, so a request pays for building its spans and queueing them, never for the
//! network. When export is off no layer and no tracer is installed: nothing is made, and the
//! `tracing` spans' callsites are disabled in the log filter and cost one check each.

use std::sync::OnceLock;

use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{SpanBuilder, SpanKind, Status, TraceContextExt, TracerProvider as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
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

/// Keeps the provider, so [`shutdown`] can flush what is still queued, and gives its tracer to the
/// spans made without `tracing` (the request's, the turn's and the model calls').
pub fn keep(provider: SdkTracerProvider) {
    promptgate_service::trace::install(provider.tracer("promptgate"));
    let _ = PROVIDER.set(provider);
}

/// Whether spans are exported in this process (the tracer is installed with the provider).
pub fn enabled() -> bool {
    promptgate_service::trace::exporting()
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

/// A request's server span, as the context the handler runs in.
pub struct ServerTrace(Context);

impl ServerTrace {
    /// The context to attach while the request is handled.
    pub fn context(&self) -> Context {
        self.0.clone()
    }
}

/// The server span of an HTTP request, and its trace id (as the W3C Trace Context writes it, for
/// the request's log lines); `None` when no trace is recorded. It continues the caller's trace
/// when the request carries a valid `traceparent` (nothing is read from the headers when traces
/// are off). Named by the method until the route is known; the route and the status are set when
/// the response is ([`record_response`]). The span ends when the last clone of its context is
/// dropped: with the response head, or later when work the request handed to a task of its own
/// outlives it.
pub fn server_span(
    request: &axum::extract::Request,
    method: &'static str,
    path: &str,
) -> Option<(ServerTrace, String)> {
    if !enabled() {
        return None;
    }
    let parent = if request.headers().contains_key(&TRACEPARENT) {
        TraceContextPropagator::new().extract(&Headers(request.headers()))
    } else {
        Context::new()
    };
    let context = promptgate_service::trace::start(&parent, || {
        SpanBuilder::from_name(method)
            .with_kind(SpanKind::Server)
            // Room for the route and the status, set when the response is known.
            .with_attributes(promptgate_service::trace::with_room(
                [
                    KeyValue::new("http.request.method", method),
                    KeyValue::new("url.path", path.to_owned()),
                ],
                2,
            ))
    })?;
    let id = promptgate_service::trace::trace_id(&context)?;
    Some((ServerTrace(context), id))
}

/// The route and status of a request, on its server span (named `{method} {route}` as the HTTP
/// conventions say; a 5xx is an error of ours).
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
    let id = promptgate_service::trace::current_trace_id()?;
    let url = config.trace_url(&id);
    Some(promptgate_service::TraceLink { id, url })
}
