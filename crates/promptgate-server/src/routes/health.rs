//! Liveness and readiness.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::state::AppState;

/// The process is up.
pub async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// An orchestrator's probe has its own timeout (often 1 s); answering within it says more than
/// being cut off.
const READY_CHECK_TIMEOUT: Duration = Duration::from_millis(800);

/// The process can serve: the database answers.
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    let ping = tokio::time::timeout(READY_CHECK_TIMEOUT, state.service.ping()).await;
    match ping {
        Ok(Ok(())) => (StatusCode::OK, Json(json!({"status": "ready"}))),
        Ok(Err(err)) => unready(&err.to_string()),
        Err(_) => unready("no answer in time"),
    }
}

fn unready(why: &str) -> (StatusCode, Json<Value>) {
    tracing::warn!(error = %why, "readiness check failed: database unreachable");
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(json!({"status": "unavailable", "reason": "database unreachable"})),
    )
}
