//! Running turns shared by every instance on one database: claims with leases, stop requests, the
//! state an automatic retry carries over, and the frames of a turn someone follows from elsewhere.
//!
//! A claim row per thread (its primary key) is what keeps a thread to one running turn, whichever
//! instance tries: the loser of a race gets a conflict, not a second turn. Its owner renews the
//! lease with one statement per heartbeat for all its turns; a claim whose lease ran out belongs to
//! an instance that died, and the next sweep (or the next claim of that thread) marks its answer
//! `interrupted` and frees the thread.
//!
//! Instances tell each other about a turn on [`TURNS_CHANNEL`] (Postgres `NOTIFY`, heard by the one
//! listening connection of `listener`). A notification is a hint that saves waiting: a stop request
//! is also a column the owner's heartbeat reads, and a follower also polls, so a notification lost
//! while the listener reconnects costs a heartbeat or a poll interval, never the request.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use crate::connect::{Backend, Store};
use crate::error::{Result, StoreError};
use crate::ledger::INTERRUPT_USAGE;
use crate::observed::Observed;
use crate::statement::Sql;
use crate::util::{Cols, expiry};
use crate::{approvals, questions};

/// The notification channel of turn signals.
pub const TURNS_CHANNEL: &str = "promptgate_turns";

/// A retry state that expired still answers "expired" (not "unknown") this long after.
const EXPIRED_RETRY_KEPT_MS: i64 = 60 * 60 * 1000;
/// Frames of a followed turn are kept this long after they were written; a follower reads them
/// within a poll interval.
const FRAMES_KEPT_MS: i64 = 5 * 60 * 1000;

/// What one instance asks of the instance running a turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TurnSignal {
    /// Stop the turn; its partial answer is stored as stopped.
    Stop { turn_id: String },
    /// A reader elsewhere follows the turn: write its frames to the store.
    Follow { turn_id: String },
    /// New frames of the turn are in the store.
    Frames { turn_id: String },
    /// A question one of the turn's calls waits on was answered: read it from the store.
    Answered { turn_id: String },
}

impl TurnSignal {
    pub fn turn_id(&self) -> &str {
        match self {
            Self::Stop { turn_id }
            | Self::Follow { turn_id }
            | Self::Frames { turn_id }
            | Self::Answered { turn_id } => turn_id,
        }
    }
}

/// Turn signals heard by this process, for whoever subscribed, and whether they can be heard now.
pub(crate) struct TurnSignals {
    sender: broadcast::Sender<TurnSignal>,
    /// Postgres: the listener is connected. SQLite signals stay in the process and are always heard.
    heard: AtomicBool,
    /// How often the listener lost its connection, so a gap between two looks is seen even when it
    /// is connected again at both.
    gaps: AtomicU64,
}

impl TurnSignals {
    pub(crate) fn new(heard: bool) -> Self {
        Self {
            sender: broadcast::channel(1024).0,
            heard: AtomicBool::new(heard),
            gaps: AtomicU64::new(0),
        }
    }

    pub(crate) fn listening(&self) {
        self.heard.store(true, Ordering::Release);
    }

    pub(crate) fn deaf(&self) {
        self.heard.store(false, Ordering::Release);
        self.gaps.fetch_add(1, Ordering::AcqRel);
    }

    /// A notification's payload; anything that does not parse is not ours and is ignored.
    pub(crate) fn heard(&self, payload: &str) {
        match serde_json::from_str::<TurnSignal>(payload) {
            Ok(signal) => {
                let _ = self.sender.send(signal);
            }
            Err(err) => tracing::debug!(error = %err, "ignoring a turn notification that does not parse"),
        }
    }
}

/// A turn about to run.
#[derive(Debug, Clone, Copy)]
pub struct NewTurnClaim<'a> {
    pub user_id: &'a str,
    pub thread_id: &'a str,
    pub turn_id: &'a str,
    /// The answer the turn writes; marked interrupted if its owner dies.
    pub message_id: &'a str,
    pub instance_id: &'a str,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    Claimed,
    /// The thread's claim had expired (its owner died): that turn is over and this one holds the
    /// thread.
    TookOver {
        interrupted_turn: String,
        /// Whether its answer was still `streaming` and is now `interrupted` (false: it was stored
        /// with its end before the owner died, or never written).
        answer_interrupted: bool,
    },
    /// Another turn holds the thread.
    Busy,
}

/// A turn running somewhere, by its live claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningTurn {
    pub turn_id: String,
    pub instance_id: String,
}

/// What other instances asked of an instance's running turns, as its heartbeat finds it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClaimRequests {
    /// Turns to stop.
    pub stop: Vec<String>,
    /// Turns a reader elsewhere follows.
    pub follow: Vec<String>,
}

/// A claim whose owner stopped renewing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpiredTurn {
    pub user_id: String,
    pub thread_id: String,
    pub turn_id: String,
    /// Whether its answer was still `streaming` and is now `interrupted`.
    pub answer_interrupted: bool,
}

/// What `retry_of` finds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryLookup {
    /// The carried-over state, as saved.
    Found(String),
    /// The turn is known but its retry window is over.
    Expired,
    /// No such turn of this user's thread.
    Unknown,
}

/// What an ended turn leaves for an automatic retry of it.
#[derive(Debug, Clone, Copy)]
pub struct RetrySave<'a> {
    /// The carried-over state (JSON).
    pub state: &'a str,
    /// How long a retry may come.
    pub window: Duration,
    /// The turn this one retried: a later retry naming it gets this turn's state, which is where the
    /// budget now stands.
    pub retried: Option<&'a str>,
}

/// Frames of a followed turn, in the order its owner wrote them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameBatch {
    pub seq: i64,
    pub frames: String,
    /// The turn's stream ended with this batch.
    pub done: bool,
}

/// Marks the answer of a turn whose owner died: $1 user, $2 thread, $3 the answer's id. Only an
/// answer still `streaming` is touched; one stored with its end keeps its status.
const INTERRUPT_ANSWER: &str = "UPDATE messages SET status = 'interrupted' \
     WHERE user_id = $1 AND thread_id = $2 AND id = $3 AND status = 'streaming'";

/// Frees a thread: $1 user, $2 thread, $3 the turn holding it. Returns whether a reader elsewhere
/// asked to follow the turn.
const RELEASE_CLAIM: &str = "DELETE FROM turn_claims WHERE user_id = $1 AND thread_id = $2 AND turn_id = $3 RETURNING follow_requested";

/// Whether the released claim (if there was one) carried a follow request.
fn followed(released: Option<&sqlx::any::AnyRow>) -> Result<bool> {
    released.map_or(Ok(false), |row| row.flag(0))
}

impl Store {
    /// Turn signals this process hears from now on (from every instance, itself included).
    pub fn turn_signals(&self) -> broadcast::Receiver<TurnSignal> {
        self.turn_signals.sender.subscribe()
    }

    /// Whether signals sent now would be heard here, and how many times hearing them has stopped so
    /// far: a signal sent while they were not heard is lost, and only the requests marked on the
    /// claims tell what it asked.
    pub fn turn_signals_heard(&self) -> (bool, u64) {
        (
            self.turn_signals.heard.load(Ordering::Acquire),
            self.turn_signals.gaps.load(Ordering::Acquire),
        )
    }

    /// Tells every instance (Postgres) or this process (SQLite, one instance) about a turn.
    pub async fn signal_turn(&self, signal: &TurnSignal) -> Result<()> {
        let payload = serde_json::to_string(signal).map_err(|e| StoreError::Invalid(e.to_string()))?;
        match self.backend() {
            Backend::Postgres => {
                "SELECT pg_notify($1, $2)"
                    .with_values((TURNS_CHANNEL, payload))
                    .execute(&self.writer, "turn_claims.signal_turn")
                    .await?;
            }
            Backend::Sqlite => self.turn_signals.heard(&payload),
        }
        Ok(())
    }

    /// Claims the thread for a turn, for `lease`. One statement when the thread is free; a claim
    /// whose lease ran out is taken over (its answer marked interrupted) in one transaction.
    ///
    /// A claim the same instance holds is replaced: the instance's memory keeps its own turns apart
    /// (a thread is claimed there first), so such a row belongs to a send that failed before its
    /// turn ran and whose release has not landed yet.
    pub async fn claim_turn(&self, claim: &NewTurnClaim<'_>, lease: Duration) -> Result<ClaimOutcome> {
        let _write = self.write_waits.wait();
        let now = self.now_ms();
        let inserted = "INSERT INTO turn_claims (user_id, thread_id, turn_id, message_id, instance_id, lease_until, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (user_id, thread_id) DO UPDATE SET \
             turn_id = excluded.turn_id, message_id = excluded.message_id, lease_until = excluded.lease_until, \
             created_at = excluded.created_at, stop_requested = 0, follow_requested = 0 \
             WHERE turn_claims.instance_id = excluded.instance_id".with_values((claim.user_id, claim.thread_id, claim.turn_id, claim.message_id, claim.instance_id, expiry(now, lease), now)).execute(&self.writer, "turn_claims.claim_turn")
        .await?;
        if inserted.rows_affected() == 1 {
            return Ok(ClaimOutcome::Claimed);
        }
        let mut tx = self.begin_writing_first().await?;
        // Deleting, not reading, is the take-over: of two instances trying at once, one deletes
        // the row and the other finds nothing to delete.
        let expired = "DELETE FROM turn_claims WHERE user_id = $1 AND thread_id = $2 AND lease_until < $3 \
                       RETURNING turn_id, message_id"
            .with_values((claim.user_id, claim.thread_id, now))
            .fetch_optional(&mut *tx, "turn_claims.claim_turn")
            .await?;
        let Some(expired) = expired else {
            return Ok(ClaimOutcome::Busy);
        };
        let interrupted_turn = expired.text(0)?;
        let marked = INTERRUPT_ANSWER
            .with_values((claim.user_id, claim.thread_id, expired.text(1)?))
            .execute(&mut *tx, "turn_claims.claim_turn")
            .await?;
        INTERRUPT_USAGE
            .with_values((claim.user_id, &interrupted_turn))
            .execute(&mut *tx, "turn_claims.claim_turn")
            .await?;
        let taken = "INSERT INTO turn_claims (user_id, thread_id, turn_id, message_id, instance_id, lease_until, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)".with_values((claim.user_id, claim.thread_id, claim.turn_id, claim.message_id, claim.instance_id, expiry(now, lease), now)).execute(&mut *tx, "turn_claims.claim_turn")
        .await;
        match taken.map_err(StoreError::from) {
            Ok(_) => {}
            Err(StoreError::Conflict(_)) => return Ok(ClaimOutcome::Busy),
            Err(err) => return Err(err),
        }
        tx.commit().observed("transaction.commit").await?;
        Ok(ClaimOutcome::TookOver {
            interrupted_turn,
            answer_interrupted: marked.rows_affected() > 0,
        })
    }

    /// Renews the lease of every turn `instance_id` runs, to `lease` from now. Returns what other
    /// instances asked of them.
    pub async fn renew_turn_claims(&self, instance_id: &str, lease: Duration) -> Result<ClaimRequests> {
        let rows = "UPDATE turn_claims SET lease_until = $2 WHERE instance_id = $1 \
                    RETURNING turn_id, stop_requested, follow_requested"
            .with_values((instance_id, expiry(self.now_ms(), lease)))
            .fetch_all(&self.writer, "turn_claims.renew_turn_claims")
            .await
            .map_err(StoreError::from);
        // The heartbeat runs through an outage: its failed waits spare the requests theirs (a Stop
        // of a turn running here needs nothing from the database but the token).
        self.reach.saw(&rows);
        let rows = rows?;
        let mut requests = ClaimRequests::default();
        for row in &rows {
            if row.flag(1)? {
                requests.stop.push(row.text(0)?);
            }
            if row.flag(2)? {
                requests.follow.push(row.text(0)?);
            }
        }
        Ok(requests)
    }

    /// Frees the thread of an ended turn and, in the same transaction, saves what a retry of it
    /// carries over (under this turn's id and, for a retry, the retried turn's too). Every send ends
    /// with this, so on Postgres it is one statement, the save in a `WITH` clause, instead of a
    /// transaction of four round trips. True when a reader elsewhere had asked to follow the turn
    /// (its owner may not have heard: the frames are still owed).
    pub async fn end_turn(
        &self,
        user_id: &str,
        thread_id: &str,
        turn_id: &str,
        retry: Option<RetrySave<'_>>,
    ) -> Result<bool> {
        let Some(retry) = retry else {
            let released = RELEASE_CLAIM
                .with_values((user_id, thread_id, turn_id))
                .fetch_optional(&self.writer, "turn_claims.end_turn")
                .await?;
            return followed(released.as_ref());
        };
        let rows = if retry.retried.is_some() {
            "($3, $1, $2, $4, $5), ($6, $1, $2, $4, $5)"
        } else {
            "($3, $1, $2, $4, $5)"
        };
        // Only this user's thread's rows are replaced: a turn id is not a capability.
        let save = format!(
            "INSERT INTO turn_retry_states (turn_id, user_id, thread_id, state, expires_at) VALUES {rows} \
             ON CONFLICT (turn_id) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at \
             WHERE turn_retry_states.user_id = excluded.user_id \
             AND turn_retry_states.thread_id = excluded.thread_id"
        );
        let expires_at = expiry(self.now_ms(), retry.window);
        let bind = |sql: String| {
            let query = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(user_id)
                .bind(thread_id)
                .bind(turn_id)
                .bind(retry.state)
                .bind(expires_at);
            match retry.retried {
                Some(retried) => query.bind(retried),
                None => query,
            }
        };
        let released = match self.backend() {
            Backend::Postgres => {
                // A data-modifying WITH runs to completion whether or not the DELETE reads it.
                bind(format!("WITH saved AS ({save}) {RELEASE_CLAIM}"))
                    .fetch_optional(&self.writer)
                    .observed("turn_claims.end_turn")
                    .await?
            }
            Backend::Sqlite => {
                let mut tx = self.begin_write().await?;
                bind(save)
                    .execute(&mut *tx)
                    .observed("turn_claims.end_turn")
                    .await?;
                let released = RELEASE_CLAIM
                    .with_values((user_id, thread_id, turn_id))
                    .fetch_optional(&mut *tx, "turn_claims.end_turn")
                    .await?;
                tx.commit().observed("transaction.commit").await?;
                released
            }
        };
        followed(released.as_ref())
    }

    /// The thread's running turn, if its claim is live.
    pub async fn running_turn(&self, user_id: &str, thread_id: &str) -> Result<Option<RunningTurn>> {
        let row = "SELECT turn_id, instance_id FROM turn_claims \
                   WHERE user_id = $1 AND thread_id = $2 AND lease_until >= $3"
            .with_values((user_id, thread_id, self.now_ms()))
            .fetch_optional(&self.pool, "turn_claims.running_turn")
            .await?;
        row.map(|r| {
            Ok(RunningTurn {
                turn_id: r.text(0)?,
                instance_id: r.text(1)?,
            })
        })
        .transpose()
    }

    /// Asks the thread's running turn to stop, wherever it runs: marks its claim and signals its
    /// owner. `None` when no turn runs in the thread.
    pub async fn request_turn_stop(&self, user_id: &str, thread_id: &str) -> Result<Option<RunningTurn>> {
        self.ask_owner("stop_requested", user_id, thread_id, |turn_id| TurnSignal::Stop {
            turn_id,
        })
        .await
    }

    /// Asks the owner of the thread's running turn to copy its stream into the store for a reader
    /// here: marks the claim and signals the owner. `None` when no turn runs in the thread.
    pub async fn request_turn_follow(&self, user_id: &str, thread_id: &str) -> Result<Option<RunningTurn>> {
        self.ask_owner("follow_requested", user_id, thread_id, |turn_id| {
            TurnSignal::Follow { turn_id }
        })
        .await
    }

    /// Marks a request on the thread's live claim (`flag`, one of the claim's request columns) and
    /// signals the owner; the mark is what the owner's heartbeat finds should the signal be lost.
    async fn ask_owner(
        &self,
        flag: &'static str,
        user_id: &str,
        thread_id: &str,
        signal: impl FnOnce(String) -> TurnSignal,
    ) -> Result<Option<RunningTurn>> {
        let row = sqlx::AssertSqlSafe(format!(
            "UPDATE turn_claims SET {flag} = 1 \
             WHERE user_id = $1 AND thread_id = $2 AND lease_until >= $3 RETURNING turn_id, instance_id"
        ))
        .with_values((user_id, thread_id, self.now_ms()))
        .fetch_optional(&self.writer, "turn_claims.ask_owner")
        .await?;
        let Some(row) = row else { return Ok(None) };
        let running = RunningTurn {
            turn_id: row.text(0)?,
            instance_id: row.text(1)?,
        };
        self.signal_turn(&signal(running.turn_id.clone())).await?;
        Ok(Some(running))
    }

    /// Frees the threads of claims whose lease ran out, marking their answers interrupted, and
    /// forgets retry states, frames, OAuth authorizations and client hand-offs past their time. Any instance may run
    /// it; each expired claim is handled by exactly one.
    pub async fn expire_turn_claims(&self) -> Result<Vec<ExpiredTurn>> {
        let now = self.now_ms();
        let mut tx = self.begin_writing_first().await?;
        let rows = "DELETE FROM turn_claims WHERE lease_until < $1 RETURNING user_id, thread_id, turn_id, message_id".with_values((now,)).fetch_all(&mut *tx, "turn_claims.expire_turn_claims")
        .await?;
        let mut expired = Vec::with_capacity(rows.len());
        for row in &rows {
            let (user_id, thread_id) = (row.text(0)?, row.text(1)?);
            let marked = INTERRUPT_ANSWER
                .with_values((&user_id, &thread_id, row.text(3)?))
                .execute(&mut *tx, "turn_claims.expire_turn_claims")
                .await?;
            let turn_id = row.text(2)?;
            INTERRUPT_USAGE
                .with_values((&user_id, &turn_id))
                .execute(&mut *tx, "turn_claims.expire_turn_claims")
                .await?;
            expired.push(ExpiredTurn {
                user_id,
                thread_id,
                turn_id,
                answer_interrupted: marked.rows_affected() > 0,
            });
        }
        tx.commit().observed("transaction.commit").await?;
        const OP: &str = "turn_claims.expire_turn_claims";
        self.drop_before("turn_retry_states", "expires_at", now - EXPIRED_RETRY_KEPT_MS, OP)
            .await?;
        self.drop_before("turn_frames", "created_at", now - FRAMES_KEPT_MS, OP)
            .await?;
        self.drop_before("oauth_pending", "expires_at", now, OP).await?;
        self.drop_before("client_handoffs", "expires_at", now, OP).await?;
        let kept_since = now - approvals::KEPT_AFTER_EXPIRY_MS;
        self.drop_before(
            "tool_approvals",
            "expires_at",
            kept_since,
            "approvals.forget_old_approvals",
        )
        .await?;
        let kept_since = now - questions::KEPT_AFTER_EXPIRY_MS;
        self.drop_before(
            "tool_questions",
            "expires_at",
            kept_since,
            "questions.forget_old_questions",
        )
        .await?;
        Ok(expired)
    }

    /// Drops the rows of `table` whose `column` (a time in ms) is before `cutoff`.
    async fn drop_before(
        &self,
        table: &'static str,
        column: &'static str,
        cutoff: i64,
        op: &'static str,
    ) -> Result<()> {
        sqlx::AssertSqlSafe(format!("DELETE FROM {table} WHERE {column} < $1"))
            .with_values((cutoff,))
            .execute(&self.writer, op)
            .await?;
        Ok(())
    }

    /// At start-up: marks `interrupted` the answers left streaming by turns that no live claim
    /// covers (their instance died), and their turns' `unfinished` ledger rows, which keep the
    /// tokens of the steps that ended. With `only_instance` (SQLite: one instance per database) every
    /// claim is a previous run's and is released first. Returns how many answers were marked.
    pub async fn interrupt_unclaimed_answers(&self, only_instance: bool) -> Result<u64> {
        if only_instance {
            sqlx::query("DELETE FROM turn_claims")
                .execute(&self.writer)
                .await?;
        } else {
            self.expire_turn_claims().await?;
        }
        let done = "UPDATE messages SET status = 'interrupted' WHERE status = 'streaming' AND NOT EXISTS \
                    (SELECT 1 FROM turn_claims c WHERE c.user_id = messages.user_id \
                     AND c.thread_id = messages.thread_id AND c.message_id = messages.id)"
            .with_values(())
            .execute(&self.writer, "turn_claims.interrupt_unclaimed_answers")
            .await?;
        "UPDATE usage_ledger SET status = 'interrupted' WHERE status = 'unfinished' AND NOT EXISTS \
         (SELECT 1 FROM turn_claims c WHERE c.user_id = usage_ledger.user_id \
          AND c.turn_id = usage_ledger.turn_id)"
            .with_values(())
            .execute(&self.writer, "turn_claims.interrupt_unclaimed_answers")
            .await?;
        Ok(done.rows_affected())
    }

    /// What a retry of `turn_id` (a turn of this user's thread) carries over.
    pub async fn retry_state(&self, user_id: &str, thread_id: &str, turn_id: &str) -> Result<RetryLookup> {
        let row = "SELECT state, expires_at FROM turn_retry_states WHERE turn_id = $1 AND user_id = $2 AND thread_id = $3".with_values((turn_id, user_id, thread_id)).fetch_optional(&self.pool, "turn_claims.retry_state")
        .await?;
        Ok(match row {
            None => RetryLookup::Unknown,
            Some(row) if row.int(1)? < self.now_ms() => RetryLookup::Expired,
            Some(row) => RetryLookup::Found(row.text(0)?),
        })
    }

    /// Stores a batch of a followed turn's frames and signals its followers. A batch already there
    /// under that number is kept: a write tried again after its answer was lost, or a second copy of
    /// an ended turn, adds nothing.
    pub async fn put_turn_frames(&self, turn_id: &str, batch: &FrameBatch) -> Result<()> {
        "INSERT INTO turn_frames (turn_id, seq, frames, done, created_at) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (turn_id, seq) DO NOTHING"
            .with_values((
                turn_id,
                batch.seq,
                &batch.frames,
                i64::from(batch.done),
                self.now_ms(),
            ))
            .execute(&self.writer, "turn_claims.put_turn_frames")
            .await?;
        self.signal_turn(&TurnSignal::Frames {
            turn_id: turn_id.to_owned(),
        })
        .await
    }

    /// The batches of a followed turn after `after_seq`, in order.
    pub async fn turn_frames_after(&self, turn_id: &str, after_seq: i64) -> Result<Vec<FrameBatch>> {
        let rows = "SELECT seq, frames, done FROM turn_frames WHERE turn_id = $1 AND seq > $2 ORDER BY seq"
            .with_values((turn_id, after_seq))
            .fetch_all(&self.pool, "turn_claims.turn_frames_after")
            .await?;
        rows.iter()
            .map(|r| {
                Ok(FrameBatch {
                    seq: r.int(0)?,
                    frames: r.text(1)?,
                    done: r.flag(2)?,
                })
            })
            .collect()
    }
}
