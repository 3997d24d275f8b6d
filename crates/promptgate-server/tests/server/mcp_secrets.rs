//! MCP header values and bearer tokens at rest: sealed with the gateway's key on both stores (the
//! SQLite file's bytes and the Postgres rows never hold them in clear), still used when connecting,
//! never returned by the API, sealed at start-up when an older version stored them in clear, and a
//! clear start-up error when sealed rows exist but no key is configured.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, StatusCode as AxumStatus};
use common::{Backend, Gateway, test_config};
use promptgate_server::config::{AuthMode, Config, Env};
use promptgate_server::state::AppState;
use promptgate_store::McpSecrets;
use promptgate_store::testing::TestDb;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::Row;

const TOKEN: &str = "tok-bearer-secret-5521";
const HEADER: &str = "hdr-api-key-secret-9034";
/// base64 of 32 bytes of 7s, and of 32 bytes of 8s.
const KEY: &str = "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=";
const OTHER_KEY: &str = "CAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAg=";

struct FakeEnv(HashMap<&'static str, &'static str>);

impl Env for FakeEnv {
    fn var(&self, name: &str) -> Option<String> {
        self.0.get(name).map(|v| (*v).to_owned())
    }
}

fn with_key(key: &'static str) -> FakeEnv {
    FakeEnv(HashMap::from([("PROMPTGATE_TOKEN_KEY", key)]))
}

fn no_env() -> FakeEnv {
    FakeEnv(HashMap::new())
}

/// The server's start over `db` as `promptgate serve` runs it, with `env` as its environment.
async fn start(config: &Config, db: &TestDb, env: &FakeEnv) -> anyhow::Result<AppState> {
    let database = promptgate_service::Database::from_store(db.store().clone());
    promptgate_server::cli::prepare_with_env(config.clone(), database, env).await
}

/// The secrets of the row `plain_row` inserted, as a started server reads them.
async fn old_row_secrets(state: &AppState, user: &str) -> McpSecrets {
    state
        .service
        .store()
        .mcp_server_secrets(user, "old-1")
        .await
        .unwrap()
}

/// An MCP endpoint that records the credentials it is sent and refuses them.
async fn credential_recorder() -> (String, Arc<Mutex<Vec<(String, String)>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::any(move |headers: HeaderMap| {
            let record = record.clone();
            async move {
                let get = |name: &str| {
                    headers
                        .get(name)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned()
                };
                record
                    .lock()
                    .unwrap()
                    .push((get("authorization"), get("x-api-key")));
                AxumStatus::UNAUTHORIZED
            }
        }),
    );
    let addr = common::serve_router(app).await;
    (format!("http://{addr}/mcp"), seen)
}

fn loopback_open(mode: AuthMode) -> Config {
    let mut config = test_config(mode);
    config.mcp.allow_loopback = Some(true);
    config.mcp.probe_timeout_ms = 2_000;
    config
}

async fn token_for(gw: &Gateway) -> Option<String> {
    if gw.state.config.auth.mode == AuthMode::SingleUser {
        return None;
    }
    let user = gw.store.create_user("alice").await.unwrap();
    Some(gw.store.issue_token(&user.id).await.unwrap())
}

async fn register_with_secrets(gw: &Gateway, token: Option<&str>, url: &str) -> (StatusCode, Value) {
    gw.call(
        Method::POST,
        "/v1/mcp-servers",
        Some(json!({"name": "Private", "url": url,
                    "headers": {"X-Api-Key": HEADER}, "bearer_token": TOKEN})),
        token,
    )
    .await
}

/// Every stored row's secret columns, as the database holds them.
async fn raw_rows(url: &str) -> Vec<(String, Option<String>, i64)> {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(url).await.unwrap();
    let rows = sqlx::query("SELECT headers, bearer_token, secrets_sealed FROM mcp_servers")
        .fetch_all(&pool)
        .await
        .unwrap();
    pool.close().await;
    rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect()
}

/// The SQLite database file and its write-ahead log, as bytes on disk.
fn sqlite_bytes(url: &str) -> Vec<u8> {
    let path = url
        .strip_prefix("sqlite://")
        .unwrap()
        .split('?')
        .next()
        .unwrap()
        .to_owned();
    let mut bytes = std::fs::read(&path).unwrap();
    for suffix in ["-wal", "-journal"] {
        if let Ok(more) = std::fs::read(format!("{path}{suffix}")) {
            bytes.extend(more);
        }
    }
    bytes
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

async fn secrets_are_sealed_and_still_used(gw: Gateway) {
    let (url, seen) = credential_recorder().await;
    let token = token_for(&gw).await;
    let (status, created) = register_with_secrets(&gw, token.as_deref(), &url).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();

    // The API only says which secrets are set.
    let (_, one) = gw
        .call(
            Method::GET,
            &format!("/v1/mcp-servers/{id}"),
            None,
            token.as_deref(),
        )
        .await;
    let (_, all) = gw
        .call(Method::GET, "/v1/mcp-servers", None, token.as_deref())
        .await;
    for body in [&created, &one, &all] {
        let text = body.to_string();
        assert!(!text.contains(TOKEN) && !text.contains(HEADER), "{text}");
    }
    assert_eq!(one["header_names"], json!(["X-Api-Key"]));
    assert_eq!(one["has_bearer_token"], true);

    // The database holds them sealed.
    let db_url = gw.state.config.database_url.clone();
    let rows = raw_rows(&db_url).await;
    assert_eq!(rows.len(), 1);
    let (headers, bearer, sealed) = &rows[0];
    assert_eq!(*sealed, 1);
    assert!(!headers.contains(HEADER), "{headers}");
    assert!(headers.contains("X-Api-Key"), "names stay readable: {headers}");
    let bearer = bearer.as_deref().unwrap();
    assert!(bearer.starts_with("v1.") && !bearer.contains(TOKEN), "{bearer}");
    if db_url.starts_with("sqlite:") {
        let bytes = sqlite_bytes(&db_url);
        assert!(
            !contains(&bytes, TOKEN),
            "the bearer token is in the database file"
        );
        assert!(
            !contains(&bytes, HEADER),
            "the header value is in the database file"
        );
    }

    // Connecting still sends the real values.
    let (status, probe) = gw
        .call(
            Method::POST,
            &format!("/v1/mcp-servers/{id}/probe"),
            Some(json!({})),
            token.as_deref(),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(probe["error"]["kind"], "unauthorized", "{probe}");
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty());
    assert!(
        seen.iter()
            .all(|(auth, key)| auth == &format!("Bearer {TOKEN}") && key == HEADER),
        "{seen:?}"
    );
}

#[tokio::test]
async fn single_user_sqlite_seals_with_a_generated_key_file() {
    let gw = Gateway::start_with_env(Backend::Sqlite, loopback_open(AuthMode::SingleUser), &no_env()).await;
    let db_url = gw.state.config.database_url.clone();
    let dir = std::path::Path::new(
        db_url
            .strip_prefix("sqlite://")
            .unwrap()
            .split('?')
            .next()
            .unwrap(),
    )
    .parent()
    .unwrap()
    .to_owned();
    let key_file = dir.join("promptgate.key");
    assert!(key_file.exists(), "the key file was generated");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "only the owner may read the key");
    }
    secrets_are_sealed_and_still_used(gw).await;
}

async fn tokens_mode_seals_with_the_configured_key(backend: Backend) {
    let gw = Gateway::start_with_env(backend, loopback_open(AuthMode::Tokens), &with_key(KEY)).await;
    secrets_are_sealed_and_still_used(gw).await;
}

common::on_both_backends!(tokens_mode_seals_with_the_configured_key);

#[tokio::test]
async fn without_a_key_secrets_are_refused_and_servers_without_them_still_work() {
    let gw = Gateway::start_with_env(Backend::Sqlite, loopback_open(AuthMode::Tokens), &no_env()).await;
    let token = token_for(&gw).await;
    let (status, body) = register_with_secrets(&gw, token.as_deref(), "http://127.0.0.1:9/mcp").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("PROMPTGATE_TOKEN_KEY"), "{message}");
    assert!(!message.contains(TOKEN) && !message.contains(HEADER), "{message}");
    let (status, body) = gw
        .call(
            Method::POST,
            "/v1/mcp-servers",
            Some(json!({"name": "Open", "url": "http://127.0.0.1:9/mcp"})),
            token.as_deref(),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert!(
        raw_rows(&gw.state.config.database_url)
            .await
            .iter()
            .all(|r| r.1.is_none())
    );
}

/// Writes a row the way versions before sealing did: values in clear, `secrets_sealed` left at 0.
async fn plain_row(db: &TestDb, user: &str) {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(db.url()).await.unwrap();
    sqlx::query(
        "INSERT INTO mcp_servers (id, user_id, name, url, enabled, headers, bearer_token, created_at, updated_at) \
         VALUES ('old-1', $1, 'Old', 'http://127.0.0.1:9/mcp', 1, $2, $3, 1, 1)",
    )
    .bind(user)
    .bind(json!({"X-Api-Key": HEADER}).to_string())
    .bind(TOKEN)
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;
}

async fn start_up_seals_plain_rows_then_needs_the_key(db: TestDb) {
    let user = db.store().create_user("alice").await.unwrap();
    plain_row(&db, &user.id).await;
    if db.url().starts_with("sqlite:") {
        // The byte search below does find a value stored in clear.
        assert!(contains(&sqlite_bytes(db.url()), TOKEN));
    }
    let mut config = test_config(AuthMode::Tokens);
    config.database_url = db.url().to_owned();

    // Without a key the old rows keep working (and a warning is logged).
    let state = start(&config, &db, &no_env()).await.unwrap();
    let secrets = old_row_secrets(&state, &user.id).await;
    assert_eq!(secrets.bearer_token.as_deref(), Some(TOKEN));

    // The first start with a key seals them, and they still open.
    let state = start(&config, &db, &with_key(KEY)).await.unwrap();
    let rows = raw_rows(db.url()).await;
    assert_eq!(rows[0].2, 1);
    assert!(!rows[0].0.contains(HEADER) && !rows[0].1.as_deref().unwrap().contains(TOKEN));
    if db.url().starts_with("sqlite:") {
        let bytes = sqlite_bytes(db.url());
        assert!(
            !contains(&bytes, TOKEN) && !contains(&bytes, HEADER),
            "clear values left on disk"
        );
    }
    let secrets = old_row_secrets(&state, &user.id).await;
    assert_eq!(secrets.bearer_token.as_deref(), Some(TOKEN));
    assert_eq!(secrets.headers.get("X-Api-Key").map(String::as_str), Some(HEADER));

    // Now a start without the key, or with another one, is refused with a reason.
    let err = start(&config, &db, &no_env())
        .await
        .err()
        .expect("the start is refused")
        .to_string();
    assert!(err.contains("sealed MCP server secrets"), "{err}");
    assert!(
        err.contains("no key is configured") && err.contains("PROMPTGATE_TOKEN_KEY"),
        "{err}"
    );
    let err = start(&config, &db, &with_key(OTHER_KEY))
        .await
        .err()
        .expect("the start is refused")
        .to_string();
    assert!(err.contains("does not open"), "{err}");
}

promptgate_store::on_both_backends!(start_up_seals_plain_rows_then_needs_the_key);
