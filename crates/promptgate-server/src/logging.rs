//! Where the process's log lines go and which are written.
//!
//! rmcp, the MCP client library, logs a failed handshake or request at ERROR with the text of the
//! error, and for an unexpected status that text carries the MCP server's whole response body: an
//! internal service's error page, or whatever a user's URL points at, would land in the operator's
//! log, and every failed background reconnect adds another. Its events are off unless the log filter
//! names rmcp itself (`PROMPTGATE_LOG=info,rmcp=debug` to debug the protocol); our MCP hub logs one
//! line per failure that says which server failed and how, without the body.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::Directive;

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
    filter
}

/// Installs the process's subscriber: `PROMPTGATE_LOG` filters, `PROMPTGATE_LOG_FORMAT` picks text
/// or JSON, and everything goes to stderr.
pub fn init() {
    let filter = filter(std::env::var("PROMPTGATE_LOG").ok().as_deref());
    // JSON for log collectors; text for people, coloured only when a terminal shows it (escape codes
    // in a file or a collector are noise).
    let format = std::env::var("PROMPTGATE_LOG_FORMAT").unwrap_or_default();
    let json = format.eq_ignore_ascii_case("json");
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if json {
        builder.json().with_current_span(true).with_span_list(true).init();
    } else {
        builder.with_ansi(std::io::stderr().is_terminal()).init();
    }
    if !json && !format.is_empty() && !format.eq_ignore_ascii_case("text") {
        tracing::warn!(value = %format, "PROMPTGATE_LOG_FORMAT is neither json nor text; writing text");
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
