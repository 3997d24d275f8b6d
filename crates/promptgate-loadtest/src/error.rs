//! The load driver's one error type.

use std::time::Duration;

/// Everything that can stop a load run before it has numbers to show.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("the rate must be a positive number of requests per second, got {0}")]
    BadRate(f64),
    #[error("{rate} req/s for {duration:?} is {count} requests, more than the {max} one run may send")]
    TooManyRequests {
        rate: f64,
        duration: Duration,
        count: u64,
        max: u64,
    },
    #[error(
        "the Postgres scenario needs a database URL: pass --postgres-url or set PROMPTGATE_TEST_POSTGRES_URL"
    )]
    NoPostgresUrl,
    #[error("cannot start the scripted upstream: {0}")]
    Upstream(#[source] std::io::Error),
    #[error("the upstream's script cannot be served as fixed bytes (it pauses, cuts or fails)")]
    UnplayableScript,
    #[error("holding turns open failed: {0}")]
    Held(String),
    #[error("load targets are plain http://IP:PORT/path URLs, not {0:?}")]
    BadUrl(String),
    #[error("cannot build the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    #[error("the gateway configuration is invalid: {0}")]
    Config(String),
    #[error("cannot start the gateway process: {0}")]
    Spawn(#[source] std::io::Error),
    #[error("the gateway exited before it was ready ({0})")]
    GatewayExited(String),
    #[error("the gateway was not ready within {0:?}")]
    GatewayNotReady(Duration),
    #[error("cannot write the gateway's files: {0}")]
    Files(#[source] std::io::Error),
    #[error("a request task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
    #[error("the store could not be filled: {0}")]
    Store(String),
    #[error("a send failed: {0}")]
    Send(String),
}
