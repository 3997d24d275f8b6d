//! The facades' ledger rows, written in batches. A facade request stores nothing but its row, and
//! one write per request through the store's writer costs every other request a wait behind it
//! (on SQLite a write is a trip to the one writer and a commit). So the rows of the requests that
//! end within [`GATHER_FOR`] of each other go to the store together, in one statement; a row
//! waits at most that long, never the client (it is written after the client's answer).
//!
//! Each batch is written by a task of the service's task tracker, so a shutdown waits for the rows
//! gathered before it as it waits for turns. A batch the store refuses is tried again, as a single
//! row was.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use promptgate_store::{Store, StoreError, UsageRecord};
use tokio_util::task::TaskTracker;

use crate::ledger::UsageTag;

/// How long the first row of a batch waits for others.
const GATHER_FOR: Duration = Duration::from_millis(5);
/// A batch this large is written at once.
const FULL: usize = 128;
/// How often a batch is tried while the store refuses it, a second apart.
const ATTEMPTS: u32 = 3;

/// A row to write and what counts it in the metrics once it is stored.
type Row = (UsageRecord, UsageTag);

#[derive(Default)]
struct Gathering {
    rows: Vec<Row>,
    /// A task will take the rows once [`GATHER_FOR`] is over.
    timer_set: bool,
}

/// One instance's collector of facade rows.
pub(crate) struct LedgerBatch {
    store: Store,
    tasks: TaskTracker,
    gathering: Mutex<Gathering>,
}

impl LedgerBatch {
    pub(crate) fn new(store: Store, tasks: TaskTracker) -> Arc<Self> {
        Arc::new(Self {
            store,
            tasks,
            gathering: Mutex::default(),
        })
    }

    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    pub(crate) fn tasks(&self) -> &TaskTracker {
        &self.tasks
    }

    fn lock(&self) -> MutexGuard<'_, Gathering> {
        self.gathering.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a row to the next batch. Called from a task of the tracker, so the batch's own task
    /// is spawned before that one ends and a shutdown cannot miss it.
    pub(crate) fn push(self: &Arc<Self>, record: UsageRecord, tag: UsageTag) {
        let mut gathering = self.lock();
        gathering.rows.push((record, tag));
        if gathering.rows.len() >= FULL {
            let rows = std::mem::take(&mut gathering.rows);
            drop(gathering);
            self.tasks.spawn(write(self.store.clone(), rows));
        } else if !gathering.timer_set {
            gathering.timer_set = true;
            drop(gathering);
            let batch = Arc::clone(self);
            self.tasks.spawn(async move {
                tokio::time::sleep(GATHER_FOR).await;
                let rows = {
                    let mut gathering = batch.lock();
                    gathering.timer_set = false;
                    std::mem::take(&mut gathering.rows)
                };
                write(batch.store.clone(), rows).await;
            });
        }
    }
}

/// Writes `rows` in one transaction, tried again while the store refuses it; counts them in the
/// metrics once stored. A row the store finds invalid (a bug) is left out alone, not with its batch.
async fn write(store: Store, rows: Vec<Row>) {
    if rows.is_empty() {
        return;
    }
    let (records, tags): (Vec<UsageRecord>, Vec<UsageTag>) = rows.into_iter().unzip();
    for attempt in 1..=ATTEMPTS {
        match store.record_usages(&records).await {
            Ok(()) => {
                records
                    .iter()
                    .zip(&tags)
                    .for_each(|(record, tag)| tag.count(record));
                return;
            }
            Err(StoreError::Invalid(_)) if records.len() > 1 => {
                for (record, tag) in records.into_iter().zip(tags) {
                    Box::pin(write(store.clone(), vec![(record, tag)])).await;
                }
                return;
            }
            Err(err) if attempt == ATTEMPTS || matches!(err, StoreError::Invalid(_)) => {
                for record in &records {
                    tracing::error!(turn = %record.turn_id, error = %err, "the request's usage could not be recorded");
                }
                return;
            }
            Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
        }
    }
}
