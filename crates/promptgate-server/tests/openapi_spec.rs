//! The committed openapi.yaml is what the code generates (regenerate with `make openapi`).

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[test]
fn committed_openapi_yaml_is_current() {
    let generated = yaml_serde::to_string(&promptgate_server::app::openapi()).unwrap();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../openapi.yaml");
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        generated.trim_end() == committed.trim_end(),
        "openapi.yaml is stale: run `make openapi` and commit the result"
    );
}

#[test]
fn every_route_is_documented_with_the_error_envelope() {
    let spec = serde_json::to_value(promptgate_server::app::openapi()).unwrap();
    assert_eq!(spec["openapi"], "3.1.0");
    let paths = spec["paths"].as_object().unwrap();
    for path in [
        "/v1/settings",
        "/v1/threads/{id}/prompt",
        "/v1/mcp-servers/{id}",
        "/v1/models",
    ] {
        assert!(paths.contains_key(path), "{path} is not documented");
    }
    let schemas = spec["components"]["schemas"].as_object().unwrap();
    assert!(
        schemas.contains_key("ErrorBody"),
        "the error envelope is not in the spec"
    );
}
