//! SQLite's one writer, taken in turn by this process's writes.
//!
//! SQLite lets one connection write at a time. A connection that finds another one writing sleeps in
//! its busy handler (1, 2, 5, 10, 15 ms …) and tries again, so under steady writes a send's few
//! writes can lose that race several times and wait 10–20 ms for a lock that each holder keeps well
//! under a millisecond. Writes that take a turn here queue instead and start as soon as the one
//! before them ends. The busy handler stays behind it for the writes that take no turn (the lease
//! heartbeat, a checkpoint of a growing answer). Postgres locks rows, not the database, and takes no
//! turn.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use sqlx::AnyConnection;
use sqlx::{Any, Transaction};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The queue for the writer; cheap to clone, clones share it.
#[derive(Clone, Default)]
pub(crate) struct WriterTurns(Option<Arc<Semaphore>>);

/// A write's turn; the next write starts when it is dropped.
pub(crate) struct WriterTurn {
    _permit: Option<OwnedSemaphorePermit>,
}

impl WriterTurns {
    /// One writer at a time, for a SQLite file (an in-memory database has one connection anyway).
    pub(crate) fn one_at_a_time() -> Self {
        Self(Some(Arc::new(Semaphore::new(1))))
    }

    /// Waits for the writer's turn (at once where writes take none).
    pub(crate) async fn take(&self) -> WriterTurn {
        match &self.0 {
            // The semaphore is never closed, so the wait ends with a permit.
            Some(queue) => WriterTurn {
                _permit: Arc::clone(queue).acquire_owned().await.ok(),
            },
            None => WriterTurn { _permit: None },
        }
    }
}

/// A write transaction that holds the writer's turn until it is committed, rolled back or dropped.
/// Statements run on it as on the transaction's connection (`&mut *tx`).
pub(crate) struct WriteTx {
    tx: Transaction<'static, Any>,
    _turn: WriterTurn,
}

impl WriteTx {
    pub(crate) fn new(tx: Transaction<'static, Any>, turn: WriterTurn) -> Self {
        Self { tx, _turn: turn }
    }

    pub(crate) async fn commit(self) -> Result<(), sqlx::Error> {
        self.tx.commit().await
    }

    pub(crate) async fn rollback(self) -> Result<(), sqlx::Error> {
        self.tx.rollback().await
    }
}

impl Deref for WriteTx {
    type Target = AnyConnection;

    fn deref(&self) -> &AnyConnection {
        &self.tx
    }
}

impl DerefMut for WriteTx {
    fn deref_mut(&mut self) -> &mut AnyConnection {
        &mut self.tx
    }
}
