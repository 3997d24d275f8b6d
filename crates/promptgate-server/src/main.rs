//! The `promptgate` binary: the TLS provider, logging as `PROMPTGATE_LOG` and `PROMPTGATE_LOG_FORMAT`
//! say and traces as `[telemetry]` says ([`promptgate_server::logging`]), a runtime, then the command
//! line ([`promptgate_server::cli`]).

use std::process::ExitCode;

use clap::Parser;
use promptgate_server::cli::{Cli, run};

fn main() -> ExitCode {
    // One TLS crypto provider for every HTTP client in the process (reqwest is built without a
    // default), the trace exporter's included.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = Cli::parse();
    promptgate_server::logging::init(promptgate_server::cli::telemetry(&cli).as_ref());

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .event_interval(promptgate_server::listen::EVENT_INTERVAL)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            tracing::error!(error = %err, "cannot start the async runtime");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(cli));
    // The spans of the last requests are still queued; send them before the process ends.
    promptgate_server::telemetry::shutdown();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!("{err:#}");
            ExitCode::FAILURE
        }
    }
}
