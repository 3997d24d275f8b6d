//! The `promptgate` binary: logging as `PROMPTGATE_LOG` and `PROMPTGATE_LOG_FORMAT` say
//! ([`promptgate_server::logging`]), the TLS provider, a runtime, then the command line
//! ([`promptgate_server::cli`]).

use std::process::ExitCode;

use clap::Parser;
use promptgate_server::cli::{Cli, run};

fn main() -> ExitCode {
    promptgate_server::logging::init();
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
