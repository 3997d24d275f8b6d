//! The `promptgate` command line.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use std::time::Duration;

use clap::{Parser, Subcommand};
use promptgate_service::{Database, Service};
use tokio_util::sync::CancellationToken;

use crate::config::{Config, Env, ProcessEnv};
use crate::state::{AppState, Shared};

#[derive(Debug, Parser)]
#[command(
    name = "promptgate",
    version,
    about = "A prompt-and-tools gateway for AI chat frontends"
)]
pub struct Cli {
    /// Configuration file (TOML). Default: $PROMPTGATE_CONFIG, else the embedded default.
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP server (migrates the database first).
    Serve {
        /// Listen on this address:port, over PROMPTGATE_LISTEN and the config's `listen`.
        #[arg(long)]
        listen: Option<std::net::SocketAddr>,
    },
    /// Apply database migrations and exit.
    Migrate,
    /// Manage users.
    Users {
        #[command(subcommand)]
        command: UsersCommand,
    },
    /// Ask the running server's /readyz (exit 0 when ready): a container health check that needs
    /// no curl. Probes the configured listen address, over loopback when it listens on all interfaces.
    Healthcheck {
        /// Probe this address:port instead of the configured one.
        #[arg(long)]
        address: Option<std::net::SocketAddr>,
        /// Seconds to wait for the answer.
        #[arg(long, default_value_t = 3)]
        timeout: u64,
    },
    /// Print the OpenAPI document (YAML; --json for JSON).
    Openapi {
        #[arg(long)]
        json: bool,
    },
    /// Run eval scenarios against the configured model and web tools, score them, and exit non-zero
    /// when any fails. Needs a real model provider (and a search backend for web scenarios).
    Eval {
        /// The scenario file (YAML).
        scenarios: PathBuf,
        /// Model id for every scenario, overriding the scenarios' own and the config's default.
        #[arg(long)]
        model: Option<String>,
        /// Print the results as JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum UsersCommand {
    /// Create a user and print a bearer token for it. The token is shown only this once.
    Create {
        name: String,
        /// Make the user an admin, who manages users and budgets over the API.
        #[arg(long)]
        admin: bool,
    },
    /// Make a user (by name or id) an admin, or with --revoke take the role away.
    Admin {
        name: String,
        #[arg(long)]
        revoke: bool,
    },
    /// List the users with their ids, creation times and how many tokens each holds.
    List,
    /// Revoke every token of a user (by name or id); requests with them get 401 from then on.
    Revoke { name: String },
    /// Replace a user's tokens (by name or id) with a new one, printed this once.
    Rotate { name: String },
}

/// The trace settings of a `serve` run, read before anything logs (the exporter's layer is part of
/// the subscriber). Other commands export nothing; a config that does not load is reported by `run`.
pub fn telemetry(cli: &Cli) -> Option<crate::config::TelemetryConfig> {
    match cli.command {
        Command::Serve { .. } => Config::load(cli.config.as_deref(), &ProcessEnv)
            .ok()
            .map(|config| config.telemetry),
        _ => None,
    }
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Openapi { json } => {
            let api = crate::app::openapi();
            let text = if json {
                serde_json::to_string_pretty(&api)?
            } else {
                yaml_serde::to_string(&api)?
            };
            write_stdout(&text)
        }
        Command::Healthcheck { address, timeout } => {
            let address = match address {
                Some(address) => address,
                None => {
                    crate::deploy::probe_address(Config::load(cli.config.as_deref(), &ProcessEnv)?.listen)
                }
            };
            crate::deploy::healthcheck(address, std::time::Duration::from_secs(timeout)).await
        }
        Command::Migrate => {
            let config = Config::load(cli.config.as_deref(), &ProcessEnv)?;
            let database = open_database(&config).await?;
            tracing::info!("migrations applied");
            drop(database);
            Ok(())
        }
        Command::Users { command } => {
            let config = Config::load(cli.config.as_deref(), &ProcessEnv)?;
            let database = open_database(&config).await?;
            let text = crate::users::run(&database, command, config.auth.mode).await?;
            write_stdout(&text)
        }
        Command::Eval {
            scenarios,
            model,
            json,
        } => {
            let config = Config::load(cli.config.as_deref(), &ProcessEnv)?;
            let file = promptgate_eval::load(&scenarios)?;
            let outcomes = eval(config, &file, model.as_deref()).await?;
            let text = if json {
                serde_json::to_string_pretty(&outcomes)?
            } else {
                promptgate_eval::table(&outcomes)
            };
            write_stdout(&text)?;
            let failed = outcomes.iter().filter(|o| !o.passed).count();
            anyhow::ensure!(failed == 0, "{failed} of {} scenarios failed", outcomes.len());
            Ok(())
        }
        Command::Serve { listen } => {
            let mut config = Config::load(cli.config.as_deref(), &ProcessEnv)?;
            if let Some(listen) = listen {
                config.listen = listen;
                config.validate()?;
            }
            serve(config).await
        }
    }
}

/// Runs the scenarios through a service built from `config` over an in-memory SQLite store, so an
/// evaluation never touches the deployment's database.
async fn eval(
    config: Config,
    file: &promptgate_eval::ScenarioFile,
    model: Option<&str>,
) -> anyhow::Result<Vec<promptgate_eval::Outcome>> {
    let database = Database::connect("sqlite::memory:")
        .await
        .context("cannot open an in-memory database")?;
    database.migrate().await.context("database migration failed")?;
    let default_model = config.default_model.clone();
    let state = prepare_with(config, database).await?;
    promptgate_eval::run(&state.service, &default_model, file, model).await
}

fn write_stdout(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")?;
    out.flush()?;
    Ok(())
}

async fn open_database(config: &Config) -> anyhow::Result<Database> {
    tracing::info!(database = %crate::deploy::describe_database(&config.database_url), "opening the database");
    let database = crate::deploy::connect_with_retry(&config.database_url, crate::deploy::DATABASE_WAIT)
        .await
        .with_context(|| format!("cannot open the database at {}", redact(&config.database_url)))?;
    database.migrate().await.context("database migration failed")?;
    Ok(database)
}

/// Hides a password in a database URL before it is logged.
pub(crate) fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &url[scheme + 3..at];
            match creds.find(':') {
                Some(colon) => format!("{}{}:***{}", &url[..scheme + 3], &creds[..colon], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

/// Prepares the state a server needs: the database (migrated), system models, the local user.
pub async fn prepare(config: Config) -> anyhow::Result<AppState> {
    let database = open_database(&config).await?;
    prepare_with(config, database).await
}

/// Like [`prepare`], over a database that is already open and migrated.
pub async fn prepare_with(config: Config, database: Database) -> anyhow::Result<AppState> {
    prepare_with_env(config, database, &ProcessEnv).await
}

/// Like [`prepare_with`], reading secrets (API keys, the token key) from `env`.
pub async fn prepare_with_env(config: Config, database: Database, env: &dyn Env) -> anyhow::Result<AppState> {
    let settings = crate::runtime::settings(&config, env)?;
    let service = Service::start(database, settings).await?;
    Ok(AppState::new(Shared {
        config: Arc::new(config),
        service,
    }))
}

pub async fn serve(config: Config) -> anyhow::Result<()> {
    let listen = config.listen;
    let mode = config.auth.mode;
    let grace = Duration::from_secs(config.server.shutdown_grace_secs);
    let flush = Duration::from_secs(config.server.shutdown_flush_secs);
    let state = prepare(config).await?;
    // An answer left streaming that no live claim covers belongs to a turn whose instance died.
    let interrupted = state
        .service
        .interrupt_unclaimed_answers()
        .await
        .context("marking the answers of a previous run as interrupted failed")?;
    if interrupted > 0 {
        tracing::warn!(
            answers = interrupted,
            "answers left streaming by a previous run are now marked interrupted"
        );
    }
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let limits = crate::listen::ConnectionLimits::from_config(&state.config.server);
    let bound = listener.local_addr().unwrap_or(listen);
    tracing::info!(address = %bound, auth = ?mode, backend = ?state.service.backend(), "promptgate listening");
    say_where_to_open(bound, state.config.ui.root().is_some());
    let stopping = CancellationToken::new();
    let metrics_server = match state.config.server.metrics_listen {
        Some(address) => {
            let listener = tokio::net::TcpListener::bind(address)
                .await
                .with_context(|| format!("cannot listen on {address} for metrics"))?;
            tracing::info!(address = %address, "metrics served on their own address");
            #[expect(
                clippy::disallowed_methods,
                reason = "the metrics listener lives as long as the process; `stopping` ends it and exit aborts it"
            )]
            let task = tokio::spawn(crate::observe::serve_metrics(listener, stopping.clone()));
            Some(task)
        }
        None => None,
    };
    #[expect(
        clippy::disallowed_methods,
        reason = "a process-lifetime timer, aborted at exit; nothing to wait for"
    )]
    let near_timer = tokio::spawn(keep_a_timer_due_soon());
    let service = state.service.clone();
    let server = crate::listen::serve_connections(
        listener,
        crate::app::build(state),
        limits,
        stopping.clone().cancelled_owned(),
    );
    tokio::pin!(server);
    tokio::select! {
        served = &mut server => {
            near_timer.abort();
            return served.context("the server stopped");
        }
        () = shutdown_signal() => {}
    }
    tracing::info!(
        turns_running = service.turns_in_flight(),
        grace_secs = grace.as_secs(),
        "shutdown signal received: no new connections; running turns may finish within the grace"
    );
    stopping.cancel();
    wind_down(&service, grace, flush).await;
    // The streams of the stopped turns end with their last chunks; give the connections a moment
    // to write them, but do not wait on a client that stopped reading.
    if tokio::time::timeout(CONNECTIONS_CLOSE, &mut server)
        .await
        .is_err()
    {
        tracing::warn!("some connections were still open at exit");
    }
    near_timer.abort();
    if let Some(metrics_server) = metrics_server {
        metrics_server.abort();
    }
    tracing::info!("promptgate stopped");
    Ok(())
}

/// The line a newcomer looks for in the start-up log: the URL to open in a browser (over loopback
/// when the server listens on every interface), or how to get the app when it is not built.
fn say_where_to_open(bound: std::net::SocketAddr, app_built: bool) {
    let url = format!("http://{}/", crate::deploy::probe_address(bound));
    if app_built {
        tracing::info!("open {url} for the app");
    } else {
        tracing::info!("the web app is not built (make web); the API answers at {url}");
    }
}

/// How long connections get to close once every turn has ended.
const CONNECTIONS_CLOSE: Duration = Duration::from_secs(2);

/// Lets running turns finish within `grace`, stops the rest (their partial answers are stored as
/// stopped), then waits up to `flush` for answers still being saved and names those left unsaved.
pub async fn wind_down(service: &Service, grace: Duration, flush: Duration) {
    let deadline = tokio::time::Instant::now() + grace;
    while service.turns_in_flight() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let running = service.turns_in_flight();
    if running > 0 {
        tracing::warn!(
            turns = running,
            "the shutdown grace is over: stopping the turns still running"
        );
    }
    service.stop_all();
    let unsaved = service.drain(flush).await;
    if unsaved.is_empty() {
        tracing::info!("every answer is stored");
    }
    for answer in &unsaved {
        tracing::error!(
            thread = %answer.thread_id, turn = %answer.turn_id, message = %answer.message_id,
            "exiting with this answer not stored: the database did not take it"
        );
    }
}

/// tokio wakes its I/O driver (an eventfd write, then an extra trip through epoll) whenever a
/// timer is registered that is due before every other pending timer. Each request registers its
/// timeouts (a minute and more) and drops them when it is done, so with nothing else pending each
/// request paid two such wake-ups. A timer that is always pending and due within a second means a
/// request's timeouts are never the earliest; it costs one wake-up a second.
async fn keep_a_timer_due_soon() {
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    let signal = tokio::select! {
        () = ctrl_c => "SIGINT",
        () = terminate => "SIGTERM",
    };
    tracing::info!(signal, "shutdown signal received; finishing requests in flight");
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn database_passwords_never_reach_the_log() {
        assert_eq!(
            redact("postgres://gw:secret@127.0.0.1:5432/gw"),
            "postgres://gw:***@127.0.0.1:5432/gw"
        );
        assert_eq!(redact("postgres://gw@host/db"), "postgres://gw@host/db");
        assert_eq!(
            redact("sqlite://data/x.db?mode=rwc"),
            "sqlite://data/x.db?mode=rwc"
        );
    }
}
