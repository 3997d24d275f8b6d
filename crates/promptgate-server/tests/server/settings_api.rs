//! `/v1/settings` and `/v1/integrations` over HTTP, on both backends.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{Backend, Gateway, error_code};
use reqwest::{Method, StatusCode};
use serde_json::json;

async fn settings_round_trip(backend: Backend) {
    let gw = Gateway::single_user(backend).await;
    let (status, defaults) = gw.get("/v1/settings").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(defaults["time_zone"], "UTC");
    assert_eq!(defaults["localization"]["distance_unit"], "imperial");
    assert_eq!(defaults["web_tools_enabled"], true);

    let (status, saved) = gw
        .put(
            "/v1/settings",
            json!({
                "preferred_name": "Ada",
                "location": {"name": "London", "lat": 51.5, "lng": -0.12},
                "localization": {"distance_unit": "metric", "temperature_unit": "c", "time_format": "24h", "currency": "GBP"},
                "time_zone": "Europe/London",
                "app_language": "pt-BR"
            }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{saved}");
    assert_eq!(saved["preferred_name"], "Ada");

    // A partial update keeps everything it does not mention.
    let (status, _) = gw
        .put("/v1/settings", json!({"localization": {"currency": "EUR"}}))
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, now) = gw.get("/v1/settings").await;
    assert_eq!(now["preferred_name"], "Ada");
    assert_eq!(now["localization"]["currency"], "EUR");
    assert_eq!(now["localization"]["distance_unit"], "metric");
    assert_eq!(now["location"]["lat"], 51.5);
    assert_eq!(now["app_language"], "pt-BR");

    // null clears an optional field.
    let (status, cleared) = gw
        .put("/v1/settings", json!({"location": {"lat": null, "lng": null}}))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(cleared["location"].get("lat").is_none(), "{cleared}");
    assert_eq!(cleared["location"]["name"], "London");
}

common::on_both_backends!(settings_round_trip);

#[tokio::test]
async fn bad_settings_get_json_errors_and_change_nothing() {
    let gw = Gateway::single_user(Backend::Sqlite).await;
    gw.put("/v1/settings", json!({"preferred_name": "Kept"})).await;

    let cases = [
        (json!({"time_zone": "Mars/Olympus_Mons"}), "IANA"),
        (json!({"localization": {"temperature_unit": "kelvin"}}), "kelvin"),
        (json!({"preferred_name": 42}), "invalid type"),
        (json!({"favourite_colour": "blue"}), "favourite_colour"),
        (json!({"location": {"lat": 123.0}}), "location.lat"),
        (json!({"localization": {"currency": "euro"}}), "ISO 4217"),
        (json!({"default_model": "no-such-model"}), "no-such-model"),
        (json!(["not", "an", "object"]), "object"),
    ];
    for (body, needle) in cases {
        let (status, err) = gw.put("/v1/settings", body.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body} -> {err}");
        assert_eq!(error_code(&err), "invalid_body");
        let message = err["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(needle),
            "{body}: message {message:?} should mention {needle:?}"
        );
    }

    let (status, err) = gw
        .raw(
            Method::PUT,
            "/v1/settings",
            "application/json",
            b"{\"preferred_name\": ".to_vec(),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&err), "malformed_json");

    let (status, err) = gw
        .raw(Method::PUT, "/v1/settings", "text/plain", b"{}".to_vec())
        .await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(error_code(&err), "unsupported_media_type");

    // Only plain JSON: the `+json` family names semantics (JSON Patch, merge patch) this API does
    // not promise, and a form or text body is what a cross-site page can send without asking.
    for kind in [
        "text/plain",
        "application/jsonx",
        "json",
        "application/xml",
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/x-www-form-urlencoded",
    ] {
        let (status, _) = gw.raw(Method::PUT, "/v1/settings", kind, b"{}".to_vec()).await;
        assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{kind}");
    }
    for kind in ["application/json; charset=utf-8", "Application/JSON"] {
        let (status, body) = gw
            .raw(
                Method::PUT,
                "/v1/settings",
                kind,
                br#"{"preferred_name": "Kept"}"#.to_vec(),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{kind}: {body}");
    }

    let huge = format!("{{\"preferred_name\": \"{}\"}}", "x".repeat(2 * 1024 * 1024));
    let (status, err) = gw
        .raw(Method::PUT, "/v1/settings", "application/json", huge.into_bytes())
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(error_code(&err), "payload_too_large");

    let (_, after) = gw.get("/v1/settings").await;
    assert_eq!(
        after["preferred_name"], "Kept",
        "a rejected update must not change anything"
    );
}

#[tokio::test]
async fn integrations_are_listed_and_toggled() {
    let gw = Gateway::single_user(Backend::Sqlite).await;
    let (status, list) = gw.get("/v1/integrations").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        list,
        json!([
            {"provider": "google", "connected": false, "enabled": false},
            {"provider": "microsoft", "connected": false, "enabled": false}
        ])
    );
    let (status, google) = gw.put("/v1/integrations/google", json!({"enabled": true})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(google["enabled"], true);
    let (_, again) = gw.get("/v1/integrations/google").await;
    assert_eq!(
        again,
        json!({"provider": "google", "connected": false, "enabled": true})
    );
    // Only a completed authorization connects an integration.
    let (status, err) = gw
        .put("/v1/integrations/google", json!({"connected": true}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");

    let (status, err) = gw.get("/v1/integrations/yahoo").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_code(&err), "not_found");
    let (status, err) = gw.put("/v1/integrations/google", json!({"enabled": "yes"})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
}

#[tokio::test]
async fn unknown_routes_and_methods_answer_in_json() {
    let gw = Gateway::single_user(Backend::Sqlite).await;
    let (status, err) = gw.get("/v1/nothing-here").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_code(&err), "not_found");
    let (status, err) = gw
        .call(Method::PATCH, "/v1/settings", Some(json!({})), None)
        .await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(error_code(&err), "method_not_allowed");
}

#[tokio::test]
async fn health_and_readiness() {
    let gw = Gateway::single_user(Backend::Sqlite).await;
    assert_eq!(gw.get("/healthz").await.0, StatusCode::OK);
    let (status, body) = gw.get("/readyz").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["status"], "ready");
}
