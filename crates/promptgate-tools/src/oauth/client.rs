//! Talking to a provider's token and revocation endpoints.

use chrono::{DateTime, Duration, Utc};
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde::{Deserialize, Serialize};
use url::form_urlencoded;

use super::OAuthProviderConfig;
use super::http::{TOKEN_RESPONSE_LIMIT, read_bounded, request_failed};
use promptgate_core::tools::ToolError;

/// The tokens one user holds for one provider. Never logged: `Debug` hides the secrets.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenSet {
    pub access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token stops working; `None` when the provider did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

impl std::fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSet")
            .field("access_token", &"<redacted>")
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "<redacted>"),
            )
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .finish()
    }
}

impl TokenSet {
    /// True when the access token is gone or will be within `margin`.
    pub fn expires_within(&self, margin: Duration, now: DateTime<Utc>) -> bool {
        self.expires_at.is_some_and(|at| at <= now + margin)
    }
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    expires_in: Option<i64>,
    #[serde(default)]
    scope: Option<String>,
}

#[derive(Deserialize)]
struct TokenErrorResponse {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

/// A provider's OAuth endpoints plus the HTTP client to reach them.
#[derive(Debug, Clone)]
pub struct OAuthClient {
    config: std::sync::Arc<OAuthProviderConfig>,
    http: reqwest::Client,
}

/// Token endpoints answer within seconds; a hung one must not hold a tool call forever.
const TOKEN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

impl OAuthClient {
    pub fn new(config: OAuthProviderConfig, http: reqwest::Client) -> Self {
        Self {
            config: std::sync::Arc::new(config),
            http,
        }
    }

    pub fn config(&self) -> &OAuthProviderConfig {
        &self.config
    }

    /// Trades the authorization code from the callback for tokens.
    pub async fn exchange_code(&self, code: &str, code_verifier: &str) -> Result<TokenSet, ToolError> {
        let form = form_urlencoded::Serializer::new(String::new())
            .append_pair("grant_type", "authorization_code")
            .append_pair("code", code)
            .append_pair("redirect_uri", &self.config.redirect_url)
            .append_pair("client_id", &self.config.client_id)
            .append_pair("client_secret", &self.config.client_secret)
            .append_pair("code_verifier", code_verifier)
            .finish();
        let response = self.post_token(form).await?;
        Ok(response.into_token_set(None, Utc::now()))
    }

    /// Gets a new access token. Providers may omit the refresh token in the answer; the one we
    /// already hold then stays valid and is kept.
    pub async fn refresh(&self, refresh_token: &str) -> Result<TokenSet, ToolError> {
        let form = form_urlencoded::Serializer::new(String::new())
            .append_pair("grant_type", "refresh_token")
            .append_pair("refresh_token", refresh_token)
            .append_pair("client_id", &self.config.client_id)
            .append_pair("client_secret", &self.config.client_secret)
            .finish();
        let response = self.post_token(form).await?;
        Ok(response.into_token_set(Some(refresh_token), Utc::now()))
    }

    /// Asks the provider to invalidate `token` (a refresh token revokes the whole grant at Google).
    /// Returns `Ok(false)` when the provider has no revocation endpoint.
    pub async fn revoke(&self, token: &str) -> Result<bool, ToolError> {
        let Some(url) = &self.config.revoke_url else {
            return Ok(false);
        };
        let form = form_urlencoded::Serializer::new(String::new())
            .append_pair("token", token)
            .finish();
        let response = self
            .http
            .post(url)
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(form)
            .timeout(TOKEN_TIMEOUT)
            .send()
            .await
            .map_err(|err| request_failed(&self.config.display_name, "revocation", err))?;
        let status = response.status();
        // A token the provider no longer knows is as revoked as it gets.
        if status.is_success() || status == reqwest::StatusCode::BAD_REQUEST {
            return Ok(true);
        }
        Err(ToolError::Failed(format!(
            "{} did not revoke the access (HTTP {})",
            self.config.display_name,
            status.as_u16()
        )))
    }

    async fn post_token(&self, form: String) -> Result<TokenResponse, ToolError> {
        let name = &self.config.display_name;
        let response = self
            .http
            .post(&self.config.token_url)
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(ACCEPT, "application/json")
            .body(form)
            .timeout(TOKEN_TIMEOUT)
            .send()
            .await
            .map_err(|err| request_failed(name, "token", err))?;
        let status = response.status();
        let body = read_bounded(response, TOKEN_RESPONSE_LIMIT, name).await?;
        if status.is_success() {
            return serde_json::from_slice::<TokenResponse>(&body).map_err(|_| {
                ToolError::Failed(format!(
                    "{name} answered the token request with an unreadable body"
                ))
            });
        }
        match serde_json::from_slice::<TokenErrorResponse>(&body) {
            Ok(err) if err.error == "invalid_grant" => Err(ToolError::Unauthorized(format!(
                "{name} no longer accepts the stored authorization (it expired or was revoked); reconnect {name}"
            ))),
            Ok(err) => {
                let detail = err
                    .error_description
                    .map(|d| format!(": {}", clip(&d, 200)))
                    .unwrap_or_default();
                Err(ToolError::Failed(format!(
                    "{name} refused the token request ({}){detail}",
                    clip(&err.error, 60)
                )))
            }
            Err(_) => Err(ToolError::Failed(format!(
                "{name} refused the token request (HTTP {})",
                status.as_u16()
            ))),
        }
    }
}

impl TokenResponse {
    fn into_token_set(self, previous_refresh: Option<&str>, now: DateTime<Utc>) -> TokenSet {
        TokenSet {
            access_token: self.access_token,
            refresh_token: self.refresh_token.or_else(|| previous_refresh.map(str::to_owned)),
            expires_at: self
                .expires_in
                .map(|secs| now + Duration::seconds(secs.clamp(0, 366 * 24 * 3600))),
            scope: self.scope,
        }
    }
}

fn clip(text: &str, max_chars: usize) -> String {
    text.chars().take(max_chars).collect()
}
