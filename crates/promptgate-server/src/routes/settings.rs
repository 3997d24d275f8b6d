//! `GET/PUT /v1/settings`.

use std::borrow::Cow;
use std::str::FromStr;

use aide::axum::ApiRouter;
use aide::axum::routing::get_with;
use axum::Json;
use axum::extract::State;
use promptgate_core::settings::UserSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};

use super::validate::{bounded_text, merge_json};
use crate::auth::CurrentUser;
use crate::error::{ApiError, ApiResult, preview};
use crate::extract::ApiJson;
use crate::state::AppState;

pub fn routes() -> ApiRouter<AppState> {
    ApiRouter::new().api_route(
        "/v1/settings",
        get_with(get_settings, |op| {
            op.summary("The user's settings (defaults where never set)")
        })
        .put_with(put_settings, |op| {
            op.summary("Update settings").description(
                "Fields you send replace the stored ones (nested objects merge key by key); fields you \
                     omit keep their values. `null` clears an optional field.",
            )
        }),
    )
}

async fn get_settings(State(state): State<AppState>, user: CurrentUser) -> ApiResult<Json<UserSettings>> {
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

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        UserSettings::json_schema(generator)
    }
}

async fn put_settings(
    State(state): State<AppState>,
    user: CurrentUser,
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
    Ok(())
}
