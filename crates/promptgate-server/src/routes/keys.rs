//! `/v1/keys`: a user's own API keys. A key's secret is in the answer to its creation and nowhere
//! else; a deleted key is refused by every instance from the next request on.

use aide::axum::ApiRouter;
use aide::axum::routing::{delete_with, get_with};
use axum::Json;
use axum::extract::Path;
use promptgate_service::records::{self, MAX_KEYS_PER_USER};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::summary;
use super::validate::required_text;
use crate::api_doc::{Created, NoContent};
use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::ApiJson;
use crate::state::AppState;

pub fn routes() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/v1/keys",
            get_with(list_keys, summary("Your API keys (never their secrets)")).post_with(create_key, |op| {
                op.summary("Create an API key").description(
                    "The answer carries the key's `secret`, this once: send it as \
                     `Authorization: Bearer <secret>`. A user holds at most 100 keys.",
                )
            }),
        )
        .api_route(
            "/v1/keys/{id}",
            delete_with(
                delete_key,
                summary("Revoke and delete one of your keys; requests with it get 401 at once"),
            ),
        )
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewKey {
    /// What the key is for, 1-200 characters.
    pub name: String,
    /// When the key stops working (epoch milliseconds, in the future); none: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
}

/// An API key; `secret` only in the answer to its creation.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct KeyBody {
    pub id: String,
    pub name: String,
    /// Epoch milliseconds, as every time here.
    pub created_at: i64,
    pub expires_at: Option<i64>,
    /// The key's last use, to the minute (it is written at most once a minute).
    pub last_used_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

impl From<records::ApiKey> for KeyBody {
    fn from(key: records::ApiKey) -> Self {
        Self {
            id: key.id,
            name: key.name,
            created_at: key.created_at,
            expires_at: key.expires_at,
            last_used_at: key.last_used_at,
            secret: None,
        }
    }
}

impl From<records::IssuedKey> for KeyBody {
    fn from(issued: records::IssuedKey) -> Self {
        Self {
            secret: Some(issued.secret),
            ..issued.key.into()
        }
    }
}

#[derive(Serialize, JsonSchema)]
pub struct KeyList {
    pub data: Vec<KeyBody>,
    /// The most keys a user may hold.
    pub max_keys: i64,
}

async fn list_keys(Caller { state, user }: Caller) -> ApiResult<Json<KeyList>> {
    let keys = state.service.list_keys(&user.id).await?;
    Ok(Json(KeyList {
        data: keys.into_iter().map(KeyBody::from).collect(),
        max_keys: MAX_KEYS_PER_USER,
    }))
}

async fn create_key(
    Caller { state, user }: Caller,
    ApiJson(body): ApiJson<NewKey>,
) -> ApiResult<Created<Json<KeyBody>>> {
    required_text("name", &body.name, 200)?;
    let issued = state
        .service
        .create_key(&user.id, body.name.trim(), body.expires_at)
        .await?;
    Ok(Created(Json(issued.into())))
}

async fn delete_key(Caller { state, user }: Caller, Path(id): Path<String>) -> ApiResult<NoContent> {
    state.service.delete_key(&user.id, &id).await?;
    Ok(NoContent)
}
