//! Where the process's log lines go and which are written.
//!
//! rmcp, the MCP client library, logs a failed handshake or request at ERROR with the text of the
//! error, and for an unexpected status that text carries the MCP server's whole response body: an
//! internal service's error page, or whatever a user's URL points at, would land in the operator's
//! log, and every failed background reconnect adds another. Its events are off unless the log filter
//! names rmcp itself (`PROMPTGATE_LOG=info,rmcp=debug` to debug the protocol); our MCP hub logs one
//! line per failure that says which server failed and how, without the body.
//!
//! With traces on, the log output and the trace exporter are two layers of one subscriber, each
//! with its own filter: `PROMPTGATE_LOG` decides what is logged and nothing else.

use std::io::IsTerminal;

use tracing_subscriber::filter::Directive;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::config::TelemetryConfig;

/// The filter for a `PROMPTGATE_LOG` value (`None`: unset or unreadable, which means `info`).
pub fn filter(spec: Option<&str>) -> EnvFilter {
    let spec = spec.map(str::trim).filter(|s| !s.is_empty());
    let mut filter = spec
        .and_then(|s| EnvFilter::try_new(s).ok())
        .unwrap_or_else(|| EnvFilter::new("info"));
    if !spec.is_some_and(|s| s.contains("rmcp")) {
        let quiet: Result<Directive, _> = "rmcp=off".parse();
        if let Ok(quiet) = quiet {
            filter = filter.add_directive(quiet);
        }
    }
    // The GenAI spans are for the trace exporter; in the logs they would only repeat the turn's
    // fields, and with export off this makes their callsites free.
    let trace_only: Result<Directive, _> = format!("{}=off", crate::telemetry::TRACE_ONLY_TARGET).parse();
    if let Ok(trace_only) = trace_only {
        filter = filter.add_directive(trace_only);
    }
    filter
}

/// Installs the process's subscriber: `PROMPTGATE_LOG` filters, `PROMPTGATE_LOG_FORMAT` picks text
/// or JSON, and everything goes to stderr. With `telemetry` on, the trace exporter's layer is
/// installed beside the log output (see [`crate::telemetry`]); otherwise there is no such layer.
pub fn init(telemetry: Option<&TelemetryConfig>) {
    let spec = std::env::var("PROMPTGATE_LOG").ok();
    let names_spans = spec.as_deref().is_some_and(names_spans);
    let filter = filter(spec.as_deref());
    // JSON for log collectors; text for people, coloured only when a terminal shows it (escape codes
    // in a file or a collector are noise).
    let format = std::env::var("PROMPTGATE_LOG_FORMAT").unwrap_or_default();
    let json = format.eq_ignore_ascii_case("json");
    let capture_content = telemetry.is_some_and(|config| config.capture_content);
    let provider = telemetry
        .filter(|config| config.enabled)
        .map(crate::telemetry::provider);
    match provider {
        Some(Ok(provider)) => {
            let log_output = log_layer(json).with_filter(filter);
            // The log output writes no line when a span is entered or left, and its filter needs
            // to see those only for directives scoped to spans; without such directives it is
            // spared them, which otherwise cost a lookup of the span on every poll of every
            // exported span's future (docs/benchmarks.md).
            let log_output = if names_spans {
                log_output.boxed()
            } else {
                crate::telemetry_polls::WithoutPolls(log_output).boxed()
            };
            let installed = tracing_subscriber::registry()
                .with(log_output)
                .with(crate::telemetry::layer(&provider, capture_content))
                .try_init();
            // Only one subscriber per process; a second call keeps the first and exports nothing.
            if installed.is_ok() {
                crate::telemetry::keep(provider);
            }
        }
        unset_or_failed => {
            let builder = tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_writer(std::io::stderr);
            if json {
                builder.json().with_current_span(true).with_span_list(true).init();
            } else {
                builder.with_ansi(std::io::stderr().is_terminal()).init();
            }
            if let Some(Err(err)) = unset_or_failed {
                tracing::error!(error = %err, "cannot export traces; running without them");
            }
        }
    }
    if !json && !format.is_empty() && !format.eq_ignore_ascii_case("text") {
        tracing::warn!(value = %format, "PROMPTGATE_LOG_FORMAT is neither json nor text; writing text");
    }
}

/// Whether a `PROMPTGATE_LOG` value has directives scoped to spans (`target[span{field}]=level`),
/// for which the filter follows span entries and exits.
fn names_spans(spec: &str) -> bool {
    spec.contains('[')
}

/// The log output as a layer, for a subscriber that also exports traces.
fn log_layer<S>(json: bool) -> Box<dyn Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span>,
{
    let layer = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    if json {
        layer.json().with_current_span(true).with_span_list(true).boxed()
    } else {
        layer.with_ansi(std::io::stderr().is_terminal()).boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rmcp_is_quiet_unless_the_filter_names_it() {
        for spec in [
            None,
            Some("info"),
            Some("debug"),
            Some("promptgate_server=debug,warn"),
            Some(""),
        ] {
            let directives = filter(spec).to_string();
            assert!(directives.contains("rmcp=off"), "{spec:?}: {directives}");
        }
        let chosen = filter(Some("info,rmcp=debug")).to_string();
        assert!(
            chosen.contains("rmcp=debug") && !chosen.contains("rmcp=off"),
            "{chosen}"
        );
    }
}
