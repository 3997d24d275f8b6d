//! A client generated from the live `/openapi.json` with openapi-typescript's defaults, compiled with
//! `tsc --strict` and run against the gateway (tests/openapi-client; `.ci/run` installs it). Without
//! its node_modules the test fails under CI and is skipped with a note elsewhere.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stderr)]

use std::path::PathBuf;
use std::process::Command;

use crate::common::{Backend, Gateway};
use promptgate_server::config::{AuthMode, Config, EMBEDDED_DEFAULT};
use serde_json::Value;

fn client_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/openapi-client"));
    if dir.join("node_modules/openapi-typescript").is_dir() {
        return Some(dir);
    }
    crate::common::skip_without(
        "tests/openapi-client/node_modules is missing: run `npm ci` there",
        "skipping the generated client check; run `npm ci` in tests/openapi-client",
    )
}

#[tokio::test]
async fn a_generated_typescript_client_compiles_and_talks_to_the_gateway() {
    let Some(dir) = client_dir() else { return };
    let mut config = Config::parse(EMBEDDED_DEFAULT).unwrap();
    config.auth.mode = AuthMode::SingleUser;
    let gw = Gateway::start(Backend::Sqlite, config).await;
    let base = gw.url("");
    let mut check = Command::new(dir.join("check.sh"));
    check.arg(base);
    let out = crate::common::output_of(check, "the generated client's check").await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    crate::common::assert_succeeded(&out, "the generated client's check");
    let seen: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(seen["settings_status"], 200, "{seen}");
    assert_eq!(seen["time_zone_before"], "UTC", "{seen}");
    // The partial update changed what it named and kept the rest, nested fields included.
    assert_eq!(seen["put_status"], 200, "{seen}");
    assert_eq!(seen["preferred_name"], "Ada", "{seen}");
    assert_eq!(seen["currency"], "EUR", "{seen}");
    assert_eq!(seen["time_format"], "12h", "{seen}");
    assert_eq!(seen["thread_status"], 201, "{seen}");
    assert_eq!(seen["thread_title"], "from a generated client", "{seen}");
    assert_eq!(seen["threads_status"], 200, "{seen}");
    assert_eq!(seen["missing_status"], 404, "{seen}");
    assert_eq!(seen["missing_code"], "not_found", "{seen}");
}
