//! The `promptgate` binary: logging as `PROMPTGATE_LOG` and `PROMPTGATE_LOG_FORMAT` say, the TLS
//! provider, a runtime, then the command line ([`promptgate_server::cli`]).

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;
use promptgate_server::cli::{Cli, run};
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    let filter = EnvFilter::try_from_env("PROMPTGATE_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
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
    // One TLS crypto provider for every HTTP client in the process (reqwest is built without a default).
    let _ = rustls::crypto::ring::default_provider().install_default();

    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(err) => {
            tracing::error!(error = %err, "cannot start the async runtime");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!("{err:#}");
            ExitCode::FAILURE
        }
    }
}
