//! `/v1/models`: the system models from the config file plus each user's own. The list is shaped like
//! OpenAI's (`{"object": "list", "data": [{"id", "object": "model", "created", "owned_by", ...}]}`) and
//! Anthropic's (`{"data": [{"type": "model", "id", "display_name", "created_at"}], "has_more",
//! "first_id", "last_id"}`) at once: the two share `data` and `id` and their other fields do not
//! clash, so both vendors' SDKs and the UIs that discover models that way read it without a switch
//! on headers. Every item carries promptgate's own fields (name, provider, engine, profile, ...)
//! alongside.

use std::borrow::Cow;

use aide::axum::ApiRouter;
use aide::axum::routing::get_with;
use axum::Json;
use axum::extract::Path;
use promptgate_core::ids::MODEL_ID;
use promptgate_core::request_fields::value_problem;
use promptgate_core::settings::Model;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Serialize;

use super::summary;
use super::validate::{check_id, optional_text, required_text};
use crate::api_doc::{Created, NoContent};
use crate::auth::Caller;
use crate::config::ModelDefinition;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::state::AppState;

pub fn routes() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/v1/models",
            get_with(list, |op| {
                op.summary(
                    "Models you can chat with (system models first), as an OpenAI or Anthropic model list",
                )
                .description(
                    "OpenAI's list shape and Anthropic's in one (one page: `has_more` is false); each \
                         item also carries promptgate's own fields (name, provider, engine, profile, ...). \
                         Auth: `Authorization: Bearer <token>` or, as Anthropic's SDKs send it, \
                         `x-api-key: <token>`.",
                )
            })
            .post_with(create, summary("Add a model that uses a configured provider")),
        )
        .api_route(
            "/v1/models/{id}",
            get_with(
                get_one,
                summary("One model with its profile (also an OpenAI model object)"),
            )
            .put_with(
                update,
                summary("Replace one of your models (system models are read-only)"),
            )
            .delete_with(delete, summary("Delete one of your models")),
        )
}

/// What `object` says in OpenAI's model list.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ListObject {
    List,
}

/// What `object` says in an OpenAI model object, and `type` in an Anthropic one.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ModelObject {
    Model,
}

/// When a model was added, as both vendors' lists say it. promptgate does not record it: the start
/// of Unix time, the same in both shapes.
const UNRECORDED_CREATED: i64 = 0;
const UNRECORDED_CREATED_AT: &str = "1970-01-01T00:00:00Z";

/// A model as OpenAI clients expect one and Anthropic's, with promptgate's own fields alongside
/// (the schema's description, [`ENTRY_DESCRIPTION`], says which fields are whose).
// Its schema is `allOf` the `Model` and the vendors' fields (below), so the document and the web
// app's types say "a Model, and more" rather than listing a Model's fields a second time.
#[derive(Debug, Serialize)]
pub struct ModelEntry {
    #[serde(flatten)]
    pub vendor: VendorFields,
    #[serde(flatten)]
    pub model: Model,
}

/// The fields OpenAI's and Anthropic's model objects have that a [`Model`] has not.
#[derive(Debug, Serialize, JsonSchema)]
pub struct VendorFields {
    pub object: ModelObject,
    /// Unix seconds. promptgate does not record when a model was added, so this is always 0.
    pub created: i64,
    /// `system` for the config file's models, `user` for your own.
    pub owned_by: String,
    #[serde(rename = "type")]
    pub kind: ModelObject,
    /// The model's name (Anthropic's field).
    pub display_name: String,
    /// RFC 3339; unrecorded, like `created`, so always the start of Unix time.
    pub created_at: String,
}

const ENTRY_DESCRIPTION: &str = "A model as OpenAI clients expect one (`id`, `object`, `created`, `owned_by`) and \
     Anthropic's\n(`type`, `display_name`, `created_at`), with promptgate's own fields alongside.";

impl JsonSchema for ModelEntry {
    fn schema_name() -> Cow<'static, str> {
        "ModelEntry".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let model = generator.subschema_for::<Model>();
        let mut vendor = VendorFields::json_schema(generator);
        vendor.remove("description");
        json_schema!({
            "description": ENTRY_DESCRIPTION,
            "allOf": [model, vendor],
        })
    }
}

impl From<Model> for ModelEntry {
    fn from(model: Model) -> Self {
        Self {
            vendor: VendorFields {
                object: ModelObject::Model,
                created: UNRECORDED_CREATED,
                owned_by: if model.system { "system" } else { "user" }.to_owned(),
                kind: ModelObject::Model,
                display_name: model.name.clone(),
                created_at: UNRECORDED_CREATED_AT.to_owned(),
            },
            model,
        }
    }
}

/// OpenAI's model list and Anthropic's, one page of everything.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ModelList {
    pub object: ListObject,
    pub data: Vec<ModelEntry>,
    /// Always false: every model is on this page.
    pub has_more: bool,
    pub first_id: Option<String>,
    pub last_id: Option<String>,
}

/// Checks a user's model definition against the limits of the API and this server's providers.
fn user_model(input: ModelDefinition, state: &AppState) -> Result<Model, ApiError> {
    check_id(MODEL_ID, "id", &input.id)?;
    if let Some(name) = &input.name {
        required_text("name", name, 200)?;
    }
    optional_text("upstream_model", input.upstream_model.as_deref(), 200)?;
    let Some(provider) = state.config.provider(&input.provider) else {
        let known: Vec<&str> = state.config.providers.iter().map(|p| p.name.as_str()).collect();
        return Err(ApiError::invalid(format!(
            "provider {} is not configured; configured providers: {}",
            crate::error::preview(&input.provider),
            known.join(", ")
        )));
    };
    if let Some(options) = &input.profile.provider_options {
        ApiError::fields_allowed(options, &provider.allow_request_fields)?;
    }
    if let Some(problem) = input
        .profile
        .temperature
        .and_then(|t| value_problem("temperature", &t.into()))
    {
        return Err(ApiError::invalid(format!("profile.temperature {problem}")));
    }
    if input.profile.max_steps == Some(0) {
        return Err(ApiError::invalid("profile.max_steps must be at least 1"));
    }
    for (field, value) in [
        ("profile.tools_override", &input.profile.tools_override),
        (
            "profile.link_previews_override",
            &input.profile.link_previews_override,
        ),
        ("profile.chat_mode_addendum", &input.profile.chat_mode_addendum),
        (
            "profile.citation_reinforcement_prompt",
            &input.profile.citation_reinforcement_prompt,
        ),
    ] {
        optional_text(field, value.as_deref(), 20_000)?;
    }
    Ok(input.into_model(false))
}

async fn list(Caller { state, user }: Caller) -> ApiResult<Json<ModelList>> {
    let models = state.service.models(&user.id).await?;
    Ok(Json(ModelList {
        object: ListObject::List,
        first_id: models.first().map(|m| m.id.clone()),
        last_id: models.last().map(|m| m.id.clone()),
        has_more: false,
        data: models.into_iter().map(ModelEntry::from).collect(),
    }))
}

async fn get_one(Caller { state, user }: Caller, Path(id): Path<String>) -> ApiResult<Json<ModelEntry>> {
    Ok(Json(state.service.model(&user.id, &id).await?.into()))
}

async fn create(
    Caller { state, user }: Caller,
    ApiJson(input): ApiJson<ModelDefinition>,
) -> ApiResult<Created<Json<Model>>> {
    let model = user_model(input, &state)?;
    let created = state.service.create_model(&user.id, &model).await?;
    tracing::info!(user = %user.id, model = %created.id, "model created");
    Ok(Created(Json(created)))
}

async fn update(
    Caller { state, user }: Caller,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<ModelDefinition>,
) -> ApiResult<Json<Model>> {
    if input.id != id {
        return Err(ApiError::invalid(format!(
            "the body's id {} does not match the URL's {}",
            crate::error::preview(&input.id),
            crate::error::preview(&id)
        )));
    }
    let model = user_model(input, &state)?;
    let updated = state.service.update_model(&user.id, &model).await?;
    Ok(Json(updated))
}

async fn delete(Caller { state, user }: Caller, Path(id): Path<String>) -> ApiResult<NoContent> {
    state.service.delete_model(&user.id, &id).await?;
    Ok(NoContent)
}
