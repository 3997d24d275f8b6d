//! Where `bash` runs: on the runtime's blocking threads, never on its async workers, so a
//! CPU-heavy script cannot stall other requests. At most `threads` calls run at once and up to
//! `queue` more wait for a thread; a call past both is refused at once. A running call has a hard
//! deadline: the caller is answered when it passes, and the interpreter is told to stop.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How many `bash` calls run at once on one server, and how many more may wait for a thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShellPoolSize {
    pub threads: usize,
    pub queue: usize,
}

impl Default for ShellPoolSize {
    /// One running call per CPU; a queue long enough for bursts of harness turns.
    fn default() -> Self {
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        ShellPoolSize {
            threads: cpus,
            queue: 32,
        }
    }
}

/// Why a call did not give its result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoolRefusal {
    /// Every thread is busy and the queue is full, or the call waited its whole limit for a thread.
    #[error("the shell is busy: {running} calls are running and {queued} are waiting; try again in a moment")]
    Busy { running: usize, queued: usize },
    /// The call outlived its deadline; it was told to stop.
    #[error("stopped after {:.1} seconds", .0.as_secs_f64())]
    TimedOut(Duration),
    /// The interpreter failed (a bug in it, not the script's fault).
    #[error("the shell failed while running this command")]
    Failed,
}

/// The bounded pool. Clones share it.
#[derive(Debug, Clone)]
pub struct ShellPool {
    /// Permits for running and waiting calls together; a call without one is refused.
    admitted: Arc<Semaphore>,
    /// Permits for running calls.
    running: Arc<Semaphore>,
    size: ShellPoolSize,
}

impl Default for ShellPool {
    fn default() -> Self {
        ShellPool::new(ShellPoolSize::default())
    }
}

impl ShellPool {
    pub fn new(size: ShellPoolSize) -> ShellPool {
        let threads = size.threads.max(1);
        ShellPool {
            admitted: Arc::new(Semaphore::new(threads + size.queue)),
            running: Arc::new(Semaphore::new(threads)),
            size: ShellPoolSize {
                threads,
                queue: size.queue,
            },
        }
    }

    /// Runs `work` on a blocking thread within `limit`, after waiting at most `limit` for one.
    /// When the deadline passes, `cancel` is raised (the interpreter checks it between steps) and
    /// the call is answered as timed out; its thread stays counted until the work has ended.
    pub(crate) async fn run<T, F>(
        &self,
        limit: Duration,
        cancel: Arc<AtomicBool>,
        work: F,
    ) -> Result<T, PoolRefusal>
    where
        T: Send + 'static,
        F: Future<Output = T> + Send + 'static,
    {
        let admitted = Arc::clone(&self.admitted)
            .try_acquire_owned()
            .map_err(|_| self.busy())?;
        let running = match tokio::time::timeout(limit, Arc::clone(&self.running).acquire_owned()).await {
            Ok(Ok(permit)) => permit,
            Ok(Err(_)) | Err(_) => return Err(self.busy()),
        };
        let handle = tokio::runtime::Handle::current();
        let permits: (OwnedSemaphorePermit, OwnedSemaphorePermit) = (admitted, running);
        let thread = tokio::task::spawn_blocking(move || {
            let _held = permits;
            handle.block_on(work)
        });
        match tokio::time::timeout(limit, thread).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(err)) => {
                tracing::error!(error = %err, "a bash call's thread failed");
                Err(PoolRefusal::Failed)
            }
            Err(_) => {
                cancel.store(true, Ordering::Relaxed);
                Err(PoolRefusal::TimedOut(limit))
            }
        }
    }

    fn busy(&self) -> PoolRefusal {
        let running = self.size.threads - self.running.available_permits();
        let total = self.size.threads + self.size.queue;
        let queued = (total - self.admitted.available_permits()).saturating_sub(running);
        PoolRefusal::Busy { running, queued }
    }
}
