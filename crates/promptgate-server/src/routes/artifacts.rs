//! The HTML artifacts that `render_html` stores, served sandboxed: `GET /v1/artifacts/{id}` with the
//! bearer header, and signed links for an `<iframe src>`, which cannot send one. An authenticated client
//! asks for a short-lived link that names the artifact, its owner and an expiry, signed with a server
//! key (HMAC-SHA256). The user's token never appears in a URL.

use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use aide::axum::ApiRouter;
use aide::axum::routing::{get_with, post_with};
use aide::generate::GenContext;
use aide::openapi::{MediaType, Operation, Response as ApiResponse};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::summary;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::extract::ApiQuery;
use crate::state::AppState;

/// The `[artifacts]` section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ArtifactsConfig {
    /// Scheme, host and port clients reach this server at (`https://gate.example.com`); by default
    /// taken from the request (`Host`, and `X-Forwarded-Proto` when a proxy sets it).
    pub public_url: Option<String>,
    /// How long a signed artifact link stays valid.
    pub link_ttl_secs: u64,
    /// Environment variable with the link signing key (any secret text). Without it each process
    /// draws a random key, so links do not survive a restart or work across instances.
    pub link_key_env: Option<String>,
}

impl Default for ArtifactsConfig {
    fn default() -> Self {
        Self {
            public_url: None,
            link_ttl_secs: 600,
            link_key_env: None,
        }
    }
}

pub fn routes() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/v1/artifacts/{id}",
            get_with(artifact, summary("An HTML artifact, served sandboxed")),
        )
        .api_route(
            "/v1/artifacts/{id}/link",
            post_with(
                link,
                summary("A short-lived signed URL of an artifact, loadable without a header (for an iframe)"),
            ),
        )
        .api_route(
            "/v1/artifacts/{id}/view",
            get_with(
                view,
                summary("An HTML artifact through a signed link (no Authorization header), sandboxed"),
            ),
        )
}

fn signing_key(config: &ArtifactsConfig) -> &'static [u8] {
    static KEY: OnceLock<Vec<u8>> = OnceLock::new();
    KEY.get_or_init(|| {
        config
            .link_key_env
            .as_deref()
            .and_then(|name| std::env::var(name).ok())
            .filter(|k| !k.is_empty())
            .map(String::into_bytes)
            .unwrap_or_else(|| rand::random::<[u8; 32]>().to_vec())
    })
}

pub(crate) fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.map(|b| b ^ byte);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

fn signature(key: &[u8], user: &str, artifact: &str, expires: u64) -> String {
    hex::encode(hmac_sha256(
        key,
        format!("{user}\n{artifact}\n{expires}").as_bytes(),
    ))
}

/// Compares without stopping at the first difference, so timing tells nothing about the signature.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn base_url(config: &ArtifactsConfig, headers: &HeaderMap) -> String {
    if let Some(url) = &config.public_url {
        return url.trim_end_matches('/').to_owned();
    }
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1");
    let scheme = match headers.get("x-forwarded-proto").and_then(|h| h.to_str().ok()) {
        Some("https") => "https",
        _ => "http",
    };
    format!("{scheme}://{host}")
}

#[derive(Serialize, JsonSchema)]
pub struct ArtifactLink {
    /// Absolute URL of the artifact; works without credentials until `expires_at`.
    pub url: String,
    /// Unix time (seconds) after which the URL is refused.
    pub expires_at: u64,
}

async fn link(
    Caller { state, user }: Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Json<ArtifactLink>> {
    // A link is only handed out for an artifact the user has.
    state.service.artifact_html(&user.id, &id).await?;
    let config = &state.config.artifacts;
    let expires_at = now_secs() + config.link_ttl_secs;
    let sig = signature(signing_key(config), &user.id, &id, expires_at);
    let url = format!(
        "{}/v1/artifacts/{}/view?user={}&expires={expires_at}&sig={sig}",
        base_url(config, &headers),
        url::form_urlencoded::byte_serialize(id.as_bytes()).collect::<String>(),
        url::form_urlencoded::byte_serialize(user.id.as_bytes()).collect::<String>(),
    );
    Ok(Json(ArtifactLink { url, expires_at }))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SignedQuery {
    pub user: String,
    pub expires: u64,
    pub sig: String,
}

async fn view(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<SignedQuery>,
) -> ApiResult<Html> {
    let key = signing_key(&state.config.artifacts);
    let expected = signature(key, &query.user, &id, query.expires);
    if !same(&expected, &query.sig) || query.expires < now_secs() {
        return Err(ApiError::new(
            ErrorCode::InvalidLink,
            "the artifact link is invalid or has expired; ask for a new one",
        ));
    }
    Ok(Html::new(state.service.artifact_html(&query.user, &id).await?))
}

/// Content Security Policy for artifacts: inline code only, no network, in an opaque-origin sandbox.
const ARTIFACT_CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
     img-src data: blob:; font-src data:; media-src data: blob:; sandbox allow-scripts";

async fn artifact(Caller { state, user }: Caller, Path(id): Path<String>) -> ApiResult<Html> {
    Ok(Html(state.service.artifact_html(&user.id, &id).await?))
}

/// A sandboxed HTML document.
pub struct Html(String);

impl Html {
    pub fn new(html: String) -> Self {
        Self(html)
    }
}

impl IntoResponse for Html {
    fn into_response(self) -> Response {
        let mut res = self.0.into_response();
        let headers = res.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(ARTIFACT_CSP),
        );
        headers.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
        headers.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("private, no-cache"),
        );
        res
    }
}

/// How the document answer is published: HTML, not JSON.
fn documented_html(_ctx: &mut GenContext, _op: &mut Operation) -> Option<ApiResponse> {
    let mut res = ApiResponse {
        description: "The HTML document, under a sandboxing CSP".into(),
        ..Default::default()
    };
    res.content.insert("text/html".into(), MediaType::default());
    Some(res)
}

crate::api_doc::ok_output!(Html, String, documented_html);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_the_rfc_4231_vector() {
        // Test case 2 of RFC 4231.
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(
            hex::encode(mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn a_signature_binds_user_artifact_and_expiry() {
        let key = b"k";
        let sig = signature(key, "u", "a", 10);
        assert!(same(&sig, &signature(key, "u", "a", 10)));
        assert!(!same(&sig, &signature(key, "v", "a", 10)));
        assert!(!same(&sig, &signature(key, "u", "b", 10)));
        assert!(!same(&sig, &signature(key, "u", "a", 11)));
    }
}
