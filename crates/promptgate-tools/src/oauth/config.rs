//! Where a provider's OAuth endpoints live and what we ask it for.

use url::Url;

/// One provider's OAuth 2.0 client registration. Every URL is a plain field so a deployment (or a
/// test on loopback) can point it anywhere.
#[derive(Clone)]
pub struct OAuthProviderConfig {
    /// Shown in error messages ("Google", "Microsoft").
    pub display_name: String,
    pub client_id: String,
    pub client_secret: String,
    pub auth_url: String,
    pub token_url: String,
    /// `None` for providers without a revocation endpoint; disconnecting then only forgets the tokens.
    pub revoke_url: Option<String>,
    pub scopes: Vec<String>,
    pub redirect_url: String,
    /// Provider-specific additions to the authorization URL (Google needs `access_type=offline`
    /// before it hands out a refresh token).
    pub extra_auth_params: Vec<(String, String)>,
}

impl std::fmt::Debug for OAuthProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthProviderConfig")
            .field("display_name", &self.display_name)
            .field("client_id", &self.client_id)
            .field("client_secret", &"<redacted>")
            .field("auth_url", &self.auth_url)
            .field("token_url", &self.token_url)
            .field("revoke_url", &self.revoke_url)
            .field("scopes", &self.scopes)
            .field("redirect_url", &self.redirect_url)
            .finish()
    }
}

impl OAuthProviderConfig {
    /// Google's production endpoints with the Gmail (read + compose) and Calendar (read) scopes.
    pub fn google(
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
        redirect_url: impl Into<String>,
    ) -> Self {
        Self {
            display_name: "Google".to_owned(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            auth_url: "https://accounts.google.com/o/oauth2/v2/auth".to_owned(),
            token_url: "https://oauth2.googleapis.com/token".to_owned(),
            revoke_url: Some("https://oauth2.googleapis.com/revoke".to_owned()),
            scopes: [
                "openid",
                "email",
                "https://www.googleapis.com/auth/gmail.readonly",
                "https://www.googleapis.com/auth/gmail.compose",
                "https://www.googleapis.com/auth/calendar.readonly",
            ]
            .map(str::to_owned)
            .to_vec(),
            redirect_url: redirect_url.into(),
            // Without `prompt=consent` a user who connected before gets no new refresh token.
            extra_auth_params: vec![
                ("access_type".to_owned(), "offline".to_owned()),
                ("prompt".to_owned(), "consent".to_owned()),
                ("include_granted_scopes".to_owned(), "true".to_owned()),
            ],
        }
    }

    /// Microsoft identity platform (multi-tenant) endpoints with mail and OneDrive read scopes.
    pub fn microsoft(
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
        redirect_url: impl Into<String>,
    ) -> Self {
        Self {
            display_name: "Microsoft".to_owned(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            auth_url: "https://login.microsoftonline.com/common/oauth2/v2.0/authorize".to_owned(),
            token_url: "https://login.microsoftonline.com/common/oauth2/v2.0/token".to_owned(),
            revoke_url: None,
            // `offline_access` is what makes Microsoft return a refresh token.
            scopes: [
                "offline_access",
                "openid",
                "email",
                "User.Read",
                "Mail.Read",
                "Files.Read.All",
            ]
            .map(str::to_owned)
            .to_vec(),
            redirect_url: redirect_url.into(),
            extra_auth_params: vec![("response_mode".to_owned(), "query".to_owned())],
        }
    }

    /// The URL the user's browser is sent to. `state` must be unguessable and checked on the
    /// callback; `code_challenge` is the S256 challenge of a verifier kept server-side.
    pub fn authorization_url(
        &self,
        state: &str,
        code_challenge: &str,
    ) -> Result<String, promptgate_core::tools::ToolError> {
        let mut url = Url::parse(&self.auth_url).map_err(|err| {
            promptgate_core::tools::ToolError::Failed(format!(
                "the {} authorization URL is not valid: {err}",
                self.display_name
            ))
        })?;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &self.client_id)
                .append_pair("redirect_uri", &self.redirect_url)
                .append_pair("scope", &self.scopes.join(" "))
                .append_pair("state", state)
                .append_pair("code_challenge", code_challenge)
                .append_pair("code_challenge_method", "S256");
            for (key, value) in &self.extra_auth_params {
                query.append_pair(key, value);
            }
        }
        Ok(url.into())
    }
}

/// What the authorize endpoint hands the browser, and what it must keep (server-side, keyed by
/// `state`) until the callback arrives.
#[derive(Clone)]
pub struct PendingAuthorization {
    pub url: String,
    pub state: String,
    pub code_verifier: String,
}

impl std::fmt::Debug for PendingAuthorization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingAuthorization")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl OAuthProviderConfig {
    /// A fresh state and PKCE pair, and the authorization URL built from them.
    pub fn start_authorization(&self) -> Result<PendingAuthorization, promptgate_core::tools::ToolError> {
        let pkce = super::pkce_pair();
        let state = super::new_state();
        let url = self.authorization_url(&state, &pkce.challenge)?;
        Ok(PendingAuthorization {
            url,
            state,
            code_verifier: pkce.verifier,
        })
    }
}
