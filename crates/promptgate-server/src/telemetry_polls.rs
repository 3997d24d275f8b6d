//! A layer wrapper that keeps the span exporter out of every poll.
//!
//! Each poll of an instrumented future enters and leaves its span, and a streamed answer is polled
//! once per upstream chunk through the request's and the turn's spans, a tool call's future through
//! its own span and those of the calls it makes. The exporting layer sat behind a per-layer
//! filter, so each enter and exit looked the span up in the registry to ask the filter, then
//! looked it up again, took its extension lock and read the clock to note a provisional end time.
//! None of that is needed: with context activation and busy/idle timing off the exporter does
//! nothing on enter, and a span with no noted end ends when it closes, which for these spans is
//! when their future is done. So the wrapper simply does not pass enters and exits on; every other
//! call goes through unchanged.
//!
//! The log output, beside the exporter, has a per-layer filter too, and pays the same lookup on
//! every enter and exit of every exported span (to find that it does not log them). It is wrapped
//! as well, unless its filter has directives scoped to spans (see `logging::init`).

use std::any::TypeId;

use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Dispatch, Event, Metadata, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::Context;

/// `L`, not told when a span is entered or left.
pub struct WithoutPolls<L>(pub L);

impl<S: Subscriber, L: Layer<S>> Layer<S> for WithoutPolls<L> {
    fn on_register_dispatch(&self, subscriber: &Dispatch) {
        self.0.on_register_dispatch(subscriber);
    }

    fn on_layer(&mut self, subscriber: &mut S) {
        self.0.on_layer(subscriber);
    }

    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        self.0.register_callsite(metadata)
    }

    fn enabled(&self, metadata: &Metadata<'_>, ctx: Context<'_, S>) -> bool {
        self.0.enabled(metadata, ctx)
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        self.0.on_new_span(attrs, id, ctx);
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        self.0.max_level_hint()
    }

    fn on_record(&self, span: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        self.0.on_record(span, values, ctx);
    }

    fn on_follows_from(&self, span: &Id, follows: &Id, ctx: Context<'_, S>) {
        self.0.on_follows_from(span, follows, ctx);
    }

    fn event_enabled(&self, event: &Event<'_>, ctx: Context<'_, S>) -> bool {
        self.0.event_enabled(event, ctx)
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        self.0.on_event(event, ctx);
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        self.0.on_close(id, ctx);
    }

    fn on_id_change(&self, old: &Id, new: &Id, ctx: Context<'_, S>) {
        self.0.on_id_change(old, new, ctx);
    }

    // The subscriber finds the wrapped layer's parts through this: the per-layer filter's marker,
    // and the exporter's hook that `OpenTelemetrySpanExt::context` uses to read a span's context.
    #[allow(unsafe_code)]
    unsafe fn downcast_raw(&self, id: TypeId) -> Option<*const ()> {
        if id == TypeId::of::<Self>() {
            return Some(std::ptr::from_ref(self).cast());
        }
        // SAFETY: forwards the same request to the wrapped layer, whose own implementation upholds
        // the contract (a returned pointer points at a value of the type `id` names, living as long
        // as `self`, which owns the wrapped layer).
        unsafe { self.0.downcast_raw(id) }
    }
}
