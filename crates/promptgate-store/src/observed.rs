//! Latency and failures of every database round trip, as Prometheus series.
//!
//! Each query site names its operation (`"messages.append"`), so an operator sees which call is slow or
//! failing without a label per SQL text. Not-found and unique-key outcomes are answers, not failures, and
//! are not counted as errors.

use std::future::Future;
use std::time::Instant;

use crate::error::ErrorClass;

/// Adds [`Observed::observed`] to every future that ends in a driver result.
pub(crate) trait Observed<T>: Future<Output = Result<T, sqlx::Error>> + Sized {
    /// Runs the round trip and records how long it took and, when it failed, how.
    async fn observed(self, op: &'static str) -> Result<T, sqlx::Error> {
        let started = Instant::now();
        let result = self.await;
        metrics::histogram!("promptgate_store_query_duration_seconds", "op" => op)
            .record(started.elapsed().as_secs_f64());
        if let Err(err) = &result {
            let kind = match ErrorClass::of(err) {
                ErrorClass::NotFound | ErrorClass::Conflict => None,
                ErrorClass::Unavailable => Some("unavailable"),
                ErrorClass::Database => Some("database"),
            };
            if let Some(kind) = kind {
                metrics::counter!("promptgate_store_errors_total", "op" => op, "kind" => kind).increment(1);
            }
        }
        result
    }
}

impl<T, F: Future<Output = Result<T, sqlx::Error>>> Observed<T> for F {}
