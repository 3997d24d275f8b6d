//! The spans every request makes when traces are exported (the HTTP request's server span, the
//! turn's agent span and each model call's), made with the OpenTelemetry tracer directly, and the
//! context the work under them runs in.
//!
//! Why not through `tracing`, like every other exported span: a span the tracing layer makes costs
//! a registry entry, the layer's own builder, starting it and closing it through every layer, on
//! top of what the SDK's span costs, about twice the SDK's work (docs/benchmarks.md); those three
//! spans on every request were most of what exporting cost. The tool, MCP, web and store spans stay
//! `tracing` spans: they are fewer, and made in crates that know only `tracing`.
//!
//! How the two kinds meet. A span made here is handed on as an OpenTelemetry [`Context`]: a
//! `tracing` span made while it is attached (polled under [`in_context`], or called [`within`]) and
//! with no exported `tracing` span entered above it takes it as its parent (the layer falls back to
//! the attached context), and a `tracing` span that must hang under one explicitly is given it with
//! `set_parent`. Work moved to a task of its own takes both along in a [`Scope`]. When nothing is
//! exported no tracer is installed, nothing is made and nothing is attached.

use std::future::Future;
use std::sync::OnceLock;

use futures::future::Either;
use opentelemetry::context::{FutureExt as _, WithContext};
use opentelemetry::trace::{SpanBuilder, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::SdkTracer;
use promptgate_outbound::trace_context::current_context;
use tracing::Instrument as _;
use tracing::instrument::Instrumented;

/// The exporter's tracer, set once when the server installs the exporter.
static TRACER: OnceLock<SdkTracer> = OnceLock::new();

/// Makes spans with `tracer` from now on (the first call wins; the server calls it once).
pub fn install(tracer: SdkTracer) {
    let _ = TRACER.set(tracer);
}

/// Whether spans are exported in this process.
pub fn exporting() -> bool {
    TRACER.get().is_some()
}

/// A span started under `parent` with what `builder` gives (called only when spans are exported),
/// as the context of the work under it; `None` when nothing is exported. The span ends when the
/// last clone of the context is dropped.
pub fn start(parent: &Context, builder: impl FnOnce() -> SpanBuilder) -> Option<Context> {
    let tracer = TRACER.get()?;
    let span = tracer.build_with_context(builder(), parent);
    Some(parent.with_span(span))
}

/// A span's first attributes, in a list with room for `more`: the span keeps the list, and
/// growing it when the span ends would copy it once more.
pub fn with_room<const N: usize>(first: [KeyValue; N], more: usize) -> Vec<KeyValue> {
    let mut attributes = Vec::with_capacity(N + more);
    attributes.extend(first);
    attributes
}

/// [`start`] under the span current here: the entered `tracing` span when it is exported, else the
/// attached context.
pub fn start_here(builder: impl FnOnce() -> SpanBuilder) -> Option<Context> {
    if !exporting() {
        return None;
    }
    start(&current_context(), builder)
}

/// The trace id of the span current here, as the W3C Trace Context writes it (for error bodies and
/// an answer's link to its trace); `None` when no trace is recorded.
pub fn current_trace_id() -> Option<String> {
    if !exporting() {
        return None;
    }
    trace_id(&current_context())
}

/// The trace id of `context`'s span, as the W3C Trace Context writes it; `None` when it has none.
pub fn trace_id(context: &Context) -> Option<String> {
    let span = context.span();
    let span_context = span.span_context();
    if !span_context.is_valid() {
        return None;
    }
    // Into a buffer: `hex::encode` goes through an iterator of chars, and the formatter's hex of a
    // `u128` through padding; this is on every request.
    let mut id = [0u8; 32];
    hex::encode_to_slice(span_context.trace_id().to_bytes(), &mut id).ok()?;
    String::from_utf8(id.to_vec()).ok()
}

/// `future`, with `context` attached while it is polled (as it is, when there is none).
pub fn in_context<F: Future>(context: Option<Context>, future: F) -> Either<WithContext<F>, F> {
    match context {
        Some(context) => Either::Left(future.with_context(context)),
        None => Either::Right(future),
    }
}

/// Runs `work` with `context` attached.
pub fn within<T>(context: Option<&Context>, work: impl FnOnce() -> T) -> T {
    let _attached = context.map(|context| context.clone().attach());
    work()
}

/// Where work that moves to a task of its own belongs: the `tracing` span current where it was
/// handed over (for its log lines) and the OpenTelemetry context attached there (for its spans).
#[derive(Debug, Clone)]
pub struct Scope {
    span: tracing::Span,
    context: Option<Context>,
}

impl Scope {
    /// The scope of the code running now.
    pub fn current() -> Self {
        let context = exporting()
            .then(Context::current)
            .filter(TraceContextExt::has_active_span);
        Self {
            span: tracing::Span::current(),
            context,
        }
    }

    /// `future`, polled in this scope.
    pub fn instrument<F: Future>(self, future: F) -> Instrumented<Either<WithContext<F>, F>> {
        in_context(self.context, future).instrument(self.span)
    }
}
