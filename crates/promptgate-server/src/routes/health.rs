//! Liveness and readiness.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::state::AppState;

/// The process is up.
pub async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// The process can serve: the database answers.
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    match state.store.ping().await {
        Ok(()) => (StatusCode::OK, Json(json!({"status": "ready"}))),
        Err(err) => {
            tracing::warn!(error = %err, "readiness check failed: database unreachable");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({"status": "unavailable", "reason": "database unreachable"})),
            )
        }
    }
}
