//! `GET/PUT /v1/settings`.

use std::borrow::Cow;
use std::str::FromStr;

use aide::axum::ApiRouter;
use aide::axum::routing::get_with;
use axum::Json;
use promptgate_core::settings::UserSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};

use super::summary;
use super::validate::{bounded_text, merge_json};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult, preview};
use crate::extract::ApiJson;
use crate::state::AppState;

pub fn routes() -> ApiRouter<AppState> {
    ApiRouter::new().api_route(
        "/v1/settings",
        get_with(
            get_settings,
            summary("The user's settings (defaults where never set)"),
        )
        .put_with(put_settings, |op| {
            op.summary("Update settings").description(
                "Fields you send replace the stored ones (nested objects merge key by key); fields you \
                     omit keep their values. `null` clears an optional field.",
            )
        }),
    )
}

async fn get_settings(Caller { state, user }: Caller) -> ApiResult<Json<UserSettings>> {
    Ok(Json(state.service.settings(&user.id).await?))
}

/// A partial [`UserSettings`] object.
pub struct SettingsPatch(serde_json::Value);

impl<'de> serde::Deserialize<'de> for SettingsPatch {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde_json::Value::deserialize(d).map(Self)
    }
}

impl JsonSchema for SettingsPatch {
    fn schema_name() -> Cow<'static, str> {
        "SettingsPatch".into()
    }

    /// [`UserSettings`] with every field optional: no `default` anywhere (generators such as
    /// openapi-typescript read a default as "always present", which would make a partial update
    /// list every field) and the nested objects inlined the same way, since they merge key by key.
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut value = UserSettings::json_schema(generator).to_value();
        as_patch(&mut value, generator.definitions(), PATCH_DEPTH);
        if let Some(object) = value.as_object_mut() {
            object.insert(
                "description".into(),
                "Any subset of the settings; what is left out keeps its value.".into(),
            );
        }
        Schema::try_from(value).unwrap_or_default()
    }
}

/// How deep nested settings objects are inlined (the settings nest one level today).
const PATCH_DEPTH: usize = 4;

/// Turns a settings schema into its partial-update form in place: drops `default` and `required`,
/// and inlines referenced object schemas (in the same form) so their fields are optional too.
/// References to anything else (enums) stay references.
fn as_patch(
    value: &mut serde_json::Value,
    definitions: &serde_json::Map<String, serde_json::Value>,
    depth: usize,
) {
    match value {
        serde_json::Value::Object(object) => {
            object.remove("default");
            object.remove("required");
            let referenced = object
                .get("$ref")
                .and_then(serde_json::Value::as_str)
                .and_then(|r| r.rsplit('/').next())
                .and_then(|name| definitions.get(name))
                .filter(|d| d.get("properties").is_some() && depth > 0)
                .cloned();
            if let Some(mut inlined) = referenced {
                as_patch(&mut inlined, definitions, depth - 1);
                *value = inlined;
                return;
            }
            for child in object.values_mut() {
                as_patch(child, definitions, depth);
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                as_patch(item, definitions, depth);
            }
        }
        _ => {}
    }
}

async fn put_settings(
    Caller { state, user }: Caller,
    ApiJson(SettingsPatch(patch)): ApiJson<SettingsPatch>,
) -> ApiResult<Json<UserSettings>> {
    if !patch.is_object() {
        return Err(ApiError::invalid(
            "the body must be a JSON object of settings fields",
        ));
    }
    let current = state.service.settings(&user.id).await?;
    let mut merged = serde_json::to_value(&current).map_err(|_| ApiError::internal())?;
    merge_json(&mut merged, patch);
    let settings: UserSettings =
        serde_json::from_value(merged).map_err(|e| ApiError::invalid(e.to_string()))?;
    validate(&settings)?;
    state.service.put_settings(&user.id, &settings).await?;
    tracing::info!(user = %user.id, "settings updated");
    Ok(Json(settings))
}

fn validate(s: &UserSettings) -> Result<(), ApiError> {
    bounded_text("preferred_name", &s.preferred_name, 200)?;
    if let Some(name) = &s.location.name {
        bounded_text("location.name", name, 200)?;
    }
    for (field, value, limit) in [
        ("location.lat", s.location.lat, 90.0),
        ("location.lng", s.location.lng, 180.0),
    ] {
        if let Some(v) = value
            && !(v.is_finite() && (-limit..=limit).contains(&v))
        {
            return Err(ApiError::invalid(format!(
                "{field} must be between -{limit} and {limit}"
            )));
        }
    }
    if chrono_tz::Tz::from_str(&s.time_zone).is_err() {
        return Err(ApiError::invalid(format!(
            "time_zone {} is not an IANA time zone name (such as Europe/Berlin or America/New_York)",
            preview(&s.time_zone)
        )));
    }
    let currency = &s.localization.currency;
    if !(currency.len() == 3 && currency.bytes().all(|b| b.is_ascii_uppercase())) {
        return Err(ApiError::invalid(format!(
            "localization.currency {} must be an ISO 4217 code such as USD or EUR",
            preview(currency)
        )));
    }
    validate_tool_approval(&s.tool_approval)
}

/// Bounds the approval choices: a bounded number of entries with names of a sane length.
fn validate_tool_approval(choices: &promptgate_core::approval::ApprovalSettings) -> Result<(), ApiError> {
    use promptgate_core::approval::MAX_APPROVAL_ENTRIES;
    for (field, map) in [
        ("tool_approval.mcp_servers", &choices.mcp_servers),
        ("tool_approval.tools", &choices.tools),
    ] {
        if map.len() > MAX_APPROVAL_ENTRIES {
            return Err(ApiError::invalid(format!(
                "{field} has {} entries; at most {MAX_APPROVAL_ENTRIES} are accepted",
                map.len()
            )));
        }
        for name in map.keys() {
            bounded_text(&format!("{field} key"), name, 200)?;
        }
    }
    Ok(())
}
