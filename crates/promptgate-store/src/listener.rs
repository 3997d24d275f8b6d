//! The Postgres connection that hears about setup changes made anywhere.
//!
//! The `config_versions` triggers `NOTIFY` on [`CHANNEL`] with the changed owner as payload, at
//! commit. This task listens on its own connection and passes each owner to the setup cache. When the
//! connection drops, the cache stops trusting anything until the listener is back, so a notification
//! lost in between can only cost a database round trip, never a stale send.

use std::str::FromStr;
use std::sync::Weak;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};

use crate::setup::SetupCache;
use crate::turn_claims::{TURNS_CHANNEL, TurnSignals};

/// The notification channel the triggers of migration 0003 publish on.
pub const CHANNEL: &str = "promptgate_config";

/// How the listener's connection names itself in `pg_stat_activity`.
pub const APPLICATION_NAME: &str = "promptgate-setup-listener";

const FIRST_RETRY: Duration = Duration::from_millis(100);
const LONGEST_RETRY: Duration = Duration::from_secs(30);

/// Runs until the cache is gone (every store clone dropped) or the task is aborted.
/// The same connection also listens on [`TURNS_CHANNEL`] and passes those to `turns`: one
/// listening connection per instance, whatever it hears about.
pub(crate) async fn follow_changes(url: String, cache: Weak<SetupCache>, turns: Weak<TurnSignals>) {
    let mut retry = FIRST_RETRY;
    loop {
        match listen(&url).await {
            Ok(mut listener) => {
                retry = FIRST_RETRY;
                let Some(live) = cache.upgrade() else { return };
                live.listener_connected();
                drop(live);
                if let Some(turns) = turns.upgrade() {
                    turns.listening();
                }
                tracing::debug!("listening for setup changes");
                loop {
                    match listener.try_recv().await {
                        Ok(Some(notification)) if notification.channel() == TURNS_CHANNEL => {
                            if let Some(turns) = turns.upgrade() {
                                turns.heard(notification.payload());
                            }
                        }
                        Ok(Some(notification)) => {
                            let Some(live) = cache.upgrade() else { return };
                            live.changed(notification.payload());
                        }
                        Ok(None) => {
                            tracing::warn!(
                                "the setup change listener lost its connection; sends ask the database until it is back"
                            );
                            break;
                        }
                        Err(err) => {
                            tracing::warn!(error = %err, "the setup change listener failed; sends ask the database until it is back");
                            break;
                        }
                    }
                }
                if let Some(turns) = turns.upgrade() {
                    turns.deaf();
                }
                let Some(live) = cache.upgrade() else { return };
                live.listener_lost();
            }
            Err(err) => {
                tracing::warn!(error = %err, retry_in_ms = retry.as_millis() as u64, "cannot listen for setup changes");
            }
        }
        tokio::time::sleep(retry).await;
        retry = (retry * 2).min(LONGEST_RETRY);
        if cache.strong_count() == 0 {
            return;
        }
    }
}

async fn listen(url: &str) -> Result<PgListener, sqlx::Error> {
    let options = PgConnectOptions::from_str(url)?.application_name(APPLICATION_NAME);
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .connect_with(options)
        .await?;
    let mut listener = PgListener::connect_with(&pool).await?;
    listener.listen_all([CHANNEL, TURNS_CHANNEL]).await?;
    Ok(listener)
}
