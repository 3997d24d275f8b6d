//! `GET /v1/usage/storage`: what the user keeps in the database beside their quota, so they can see
//! why a send is refused with `quota_exceeded` and how much deleting would give back.

use aide::axum::ApiRouter;
use aide::axum::routing::get_with;
use axum::Json;
use schemars::JsonSchema;
use serde::Serialize;

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::state::AppState;

pub fn routes() -> ApiRouter<AppState> {
    ApiRouter::new().api_route(
        "/v1/usage/storage",
        get_with(get_storage, |op| {
            op.summary("What you keep, and your storage quota").description(
                "Bytes count your messages, artifacts and workspace files. A send or a new thread is \
                 refused with 403 `quota_exceeded` once a bound is reached; deleting threads gives the \
                 room back. A `null` bound is off.",
            )
        }),
    )
}

/// The user's storage usage beside the quota.
#[derive(Debug, Serialize, JsonSchema)]
pub struct StorageUsageBody {
    /// Always `storage_usage`.
    pub object: &'static str,
    pub stored_bytes: u64,
    pub max_stored_bytes: Option<u64>,
    pub threads: u64,
    pub max_threads: Option<u64>,
}

async fn get_storage(Caller { state, user }: Caller) -> ApiResult<Json<StorageUsageBody>> {
    let report = state.service.storage_report(&user.id).await?;
    Ok(Json(StorageUsageBody {
        object: "storage_usage",
        stored_bytes: report.usage.bytes,
        max_stored_bytes: report.quota.max_bytes,
        threads: report.usage.threads,
        max_threads: report.quota.max_threads,
    }))
}
