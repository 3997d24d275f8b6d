//! Loopback stand-ins for the Google, Microsoft and OAuth servers, speaking their JSON, plus an
//! in-memory token vault. Every request the fakes receive is recorded for assertions.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod gmail;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Once};

use async_trait::async_trait;
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use chrono::{Duration, Utc};
use promptgate_core::settings::IntegrationProvider;
use promptgate_core::storage::{StorageError, TokenVault, VaultKey};
use promptgate_tools::oauth::{
    AccessTokens, OAuthClient, OAuthProviderConfig, RefreshLocks, TokenSealer, TokenSet,
};

pub fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

pub fn http() -> reqwest::Client {
    init();
    reqwest::Client::builder().build().expect("client")
}

/// One request as the fake saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub authorization: Option<String>,
    pub body: Vec<u8>,
}

impl Recorded {
    pub fn query_value(&self, key: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    pub fn query_values(&self, key: &str) -> Vec<&str> {
        self.query
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    pub fn form(&self) -> HashMap<String, String> {
        url::form_urlencoded::parse(&self.body).into_owned().collect()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }
}

#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<Recorded>>>);

impl Log {
    pub fn all(&self) -> Vec<Recorded> {
        self.0.lock().unwrap().clone()
    }

    pub fn to_path(&self, path: &str) -> Vec<Recorded> {
        self.all().into_iter().filter(|r| r.path == path).collect()
    }
}

pub struct FakeServer {
    pub base: String,
    pub log: Log,
}

/// Serves `router` on 127.0.0.1:0, recording every request before it reaches a handler.
pub async fn serve(router: Router) -> FakeServer {
    init();
    let log = Log::default();
    let app = router.layer(middleware::from_fn_with_state(log.clone(), record));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    FakeServer {
        base: format!("http://{addr}"),
        log,
    }
}

async fn record(State(log): State<Log>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 16 * 1024 * 1024).await.unwrap();
    let query = parts
        .uri
        .query()
        .map(|q| url::form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default();
    log.0.lock().unwrap().push(Recorded {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        query,
        authorization: parts
            .headers
            .get("authorization")
            .map(|v| v.to_str().unwrap().to_owned()),
        body: body.to_vec(),
    });
    next.run(Request::from_parts(parts, Body::from(body))).await
}

/// A token vault in memory, as the store would provide it.
#[derive(Default)]
pub struct MemoryVault {
    blobs: Mutex<HashMap<(String, IntegrationProvider), String>>,
    pub loads: std::sync::atomic::AtomicUsize,
}

#[async_trait]
impl TokenVault for MemoryVault {
    async fn load(&self, key: VaultKey<'_>) -> Result<Option<String>, StorageError> {
        self.loads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(self.raw(key.user_id, key.provider))
    }
    async fn store(&self, key: VaultKey<'_>, sealed: &str) -> Result<(), StorageError> {
        self.blobs
            .lock()
            .unwrap()
            .insert((key.user_id.to_owned(), key.provider), sealed.to_owned());
        Ok(())
    }
    async fn delete(&self, key: VaultKey<'_>) -> Result<(), StorageError> {
        self.blobs
            .lock()
            .unwrap()
            .remove(&(key.user_id.to_owned(), key.provider));
        Ok(())
    }
}

impl MemoryVault {
    pub fn raw(&self, user_id: &str, provider: IntegrationProvider) -> Option<String> {
        self.blobs
            .lock()
            .unwrap()
            .get(&(user_id.to_owned(), provider))
            .cloned()
    }
}

pub const USER: &str = "user-1";

pub fn sealer() -> Arc<TokenSealer> {
    Arc::new(TokenSealer::from_key(&[7u8; 32]))
}

/// Provider config whose every endpoint is on the fake OAuth server at `oauth_base`.
pub fn provider_config(provider: IntegrationProvider, oauth_base: &str) -> OAuthProviderConfig {
    let mut config = match provider {
        IntegrationProvider::Google => {
            OAuthProviderConfig::google("client-abc", "secret-xyz", "http://127.0.0.1/callback")
        }
        IntegrationProvider::Microsoft => {
            OAuthProviderConfig::microsoft("client-abc", "secret-xyz", "http://127.0.0.1/callback")
        }
    };
    config.auth_url = format!("{oauth_base}/authorize");
    config.token_url = format!("{oauth_base}/token");
    if config.revoke_url.is_some() {
        config.revoke_url = Some(format!("{oauth_base}/revoke"));
    }
    config
}

/// Tokens for `USER` at `provider`, already stored sealed in a fresh vault.
pub struct Connected {
    pub tokens: AccessTokens,
    pub vault: Arc<MemoryVault>,
    pub sealer: Arc<TokenSealer>,
}

pub async fn connected(provider: IntegrationProvider, oauth_base: &str, initial: TokenSet) -> Connected {
    let vault = Arc::new(MemoryVault::default());
    let sealer = sealer();
    vault
        .store(
            VaultKey {
                user_id: USER,
                provider,
            },
            &sealer.seal(&initial).unwrap(),
        )
        .await
        .unwrap();
    let oauth = OAuthClient::new(provider_config(provider, oauth_base), http());
    let tokens = AccessTokens::new(
        oauth,
        vault.clone(),
        sealer.clone(),
        RefreshLocks::new(),
        USER,
        provider,
    );
    Connected {
        tokens,
        vault,
        sealer,
    }
}

/// A token set valid for another hour.
pub fn valid_tokens(access: &str) -> TokenSet {
    TokenSet {
        access_token: access.to_owned(),
        refresh_token: Some("refresh-1".to_owned()),
        expires_at: Some(Utc::now() + Duration::hours(1)),
        scope: None,
    }
}

/// The OAuth token endpoint: every refresh hands out `fresh-token`; code exchange `first-token`.
pub fn oauth_routes() -> Router {
    use axum::routing::post;
    Router::new()
        .route(
            "/token",
            post(|body: String| async move {
                let form: HashMap<String, String> = url::form_urlencoded::parse(body.as_bytes())
                    .into_owned()
                    .collect();
                match form.get("grant_type").map(String::as_str) {
                    Some("authorization_code")
                        if form.get("code").map(String::as_str) == Some("good-code") =>
                    {
                        axum::Json(serde_json::json!({
                            "access_token": "first-token", "refresh_token": "refresh-1",
                            "expires_in": 3599, "scope": "mail", "token_type": "Bearer"
                        }))
                        .into_response()
                    }
                    Some("refresh_token")
                        if form.get("refresh_token").map(String::as_str) == Some("refresh-1") =>
                    {
                        axum::Json(serde_json::json!({
                            "access_token": "fresh-token", "expires_in": 3599, "token_type": "Bearer"
                        }))
                        .into_response()
                    }
                    _ => (
                        axum::http::StatusCode::BAD_REQUEST,
                        axum::Json(
                            serde_json::json!({"error": "invalid_grant", "error_description": "Bad Request"}),
                        ),
                    )
                        .into_response(),
                }
            }),
        )
        .route("/revoke", post(|| async { "" }))
}

/// The access tokens of `provider`, connected with a valid `access_token` and renewed on `server`.
async fn connected_tokens(
    provider: IntegrationProvider,
    server: &FakeServer,
    access_token: &str,
) -> AccessTokens {
    connected(provider, &server.base, valid_tokens(access_token))
        .await
        .tokens
}

/// A Gmail + Calendar client whose APIs and token endpoint all live on `server`.
pub async fn google_client(
    server: &FakeServer,
    access_token: &str,
) -> promptgate_tools::google::GoogleClient {
    let tokens = connected_tokens(IntegrationProvider::Google, server, access_token).await;
    let mut client = promptgate_tools::google::GoogleClient::new(http(), tokens);
    client.gmail_base = format!("{}/gmail/v1", server.base);
    client.calendar_base = format!("{}/calendar/v3", server.base);
    client
}

/// A Graph client whose API and token endpoint live on `server`.
pub async fn graph_client(
    server: &FakeServer,
    access_token: &str,
) -> promptgate_tools::microsoft::GraphClient {
    let tokens = connected_tokens(IntegrationProvider::Microsoft, server, access_token).await;
    let mut client = promptgate_tools::microsoft::GraphClient::new(http(), tokens);
    client.base = format!("{}/v1.0", server.base);
    client
}
