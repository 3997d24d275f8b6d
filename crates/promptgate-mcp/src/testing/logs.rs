//! The log events a test sees: a subscriber layer that records every event logged on the test's
//! thread while its guard lives. A `#[tokio::test]` runs every task it spawns on its one thread, so
//! this sees background work too.

use std::sync::{Arc, Mutex, MutexGuard};

/// One log event as a test sees it.
#[derive(Debug, Clone)]
pub struct LogLine {
    pub level: tracing::Level,
    pub target: String,
    pub text: String,
}

/// The events recorded so far.
#[derive(Clone, Default)]
pub struct Logs(Arc<Mutex<Vec<LogLine>>>);

impl Logs {
    /// Records what this thread logs until the guard is dropped.
    pub fn capture() -> (Logs, tracing::subscriber::DefaultGuard) {
        use tracing_subscriber::layer::SubscriberExt;
        let logs = Logs::default();
        let subscriber = tracing_subscriber::registry().with(logs.clone());
        (logs, tracing::subscriber::set_default(subscriber))
    }

    fn recorded(&self) -> MutexGuard<'_, Vec<LogLine>> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn lines(&self) -> Vec<LogLine> {
        self.recorded().clone()
    }

    /// Lines at `level` or more severe.
    pub fn at_least(&self, level: tracing::Level) -> Vec<LogLine> {
        self.lines().into_iter().filter(|l| l.level <= level).collect()
    }
}

/// An event's message and fields as one line of text.
struct Text(String);

impl tracing::field::Visit for Text {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if !self.0.is_empty() {
            self.0.push(' ');
        }
        if field.name() == "message" {
            self.0.push_str(&format!("{value:?}"));
        } else {
            self.0.push_str(&format!("{}={value:?}", field.name()));
        }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Logs {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: tracing_subscriber::layer::Context<'_, S>) {
        let mut text = Text(String::new());
        event.record(&mut text);
        self.recorded().push(LogLine {
            level: *event.metadata().level(),
            target: event.metadata().target().to_owned(),
            text: text.0,
        });
    }
}
