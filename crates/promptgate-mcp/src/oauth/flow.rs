//! The authorization-code flow against a discovered authorization server: registering a client,
//! the URL the user's browser opens, the callback's `iss` check, and the token requests. Every
//! token request carries the RFC 8707 `resource`, so the tokens are for this MCP server only.

use reqwest::header::{HeaderMap, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::McpOAuth;
use super::discovery::{AuthServer, refused};
use super::http::{Answer, Body, parse, send};
use crate::error::McpError;

/// The client identity promptgate uses at one authorization server.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientCredentials {
    pub client_id: String,
    /// Set for a confidential client (the registration gave one, or the operator did).
    #[serde(default)]
    pub client_secret: Option<String>,
}

impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

/// Tokens for one user at one MCP server.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenSet {
    pub access_token: String,
    #[serde(default)]
    pub refresh_token: Option<String>,
    /// Milliseconds since the epoch; `None` when the server gave no lifetime.
    #[serde(default)]
    pub expires_at_ms: Option<i64>,
    /// The scopes granted, as the server said (else as asked).
    #[serde(default)]
    pub scope: Option<String>,
}

impl std::fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSet")
            .field("expires_at_ms", &self.expires_at_ms)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl TokenSet {
    /// The access token lapses within `margin_ms` of `now_ms`.
    pub fn expires_within(&self, margin_ms: i64, now_ms: i64) -> bool {
        self.expires_at_ms
            .is_some_and(|at| at <= now_ms.saturating_add(margin_ms))
    }
}

/// The error codes of RFC 6749 §5.2 and §4.1.2.1: the only part of an authorization server's
/// error answer an error text repeats.
const KNOWN_ERRORS: &[&str] = &[
    "invalid_request",
    "invalid_client",
    "invalid_grant",
    "unauthorized_client",
    "unsupported_grant_type",
    "invalid_scope",
    "access_denied",
    "unsupported_response_type",
    "server_error",
    "temporarily_unavailable",
    "invalid_redirect_uri",
    "invalid_client_metadata",
];

impl McpOAuth {
    /// Registers promptgate as a client (RFC 7591) with `redirect_uri`, as a web application with
    /// no client secret unless the server insists on issuing one.
    pub async fn register(
        &self,
        server: &AuthServer,
        redirect_uri: &str,
        client_name: &str,
    ) -> Result<ClientCredentials, McpError> {
        let endpoint = server
            .registration_endpoint
            .as_deref()
            .ok_or_else(|| refused("the authorization server offers no client registration"))?;
        let mut metadata = super::client::client_metadata(redirect_uri, client_name);
        if let Some(scope) = &server.scope {
            metadata["scope"] = json!(scope);
        }
        let answer = send(
            self,
            reqwest::Method::POST,
            endpoint,
            Body::Json(&metadata),
            HeaderMap::new(),
        )
        .await?;
        let document = success(answer, "client registration")?;
        let client_id = field(&document, "client_id")
            .ok_or_else(|| refused("the client registration answer has no client_id"))?;
        Ok(ClientCredentials {
            client_id,
            client_secret: field(&document, "client_secret"),
        })
    }

    /// The authorization URL for the user's browser: code flow, PKCE S256, `state`, `resource`,
    /// and the scopes to ask for.
    pub fn authorization_url(
        &self,
        server: &AuthServer,
        client: &ClientCredentials,
        redirect_uri: &str,
        state: &str,
        code_challenge: &str,
    ) -> Result<String, McpError> {
        let mut url = parse(&server.authorization_endpoint)?;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &client.client_id)
                .append_pair("redirect_uri", redirect_uri)
                .append_pair("state", state)
                .append_pair("code_challenge", code_challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("resource", &server.resource);
            if let Some(scope) = &server.scope {
                query.append_pair("scope", scope);
            }
        }
        Ok(url.into())
    }

    /// Trades the callback's code for tokens, proving possession of the PKCE verifier.
    pub async fn exchange_code(
        &self,
        server: &AuthServer,
        client: &ClientCredentials,
        redirect_uri: &str,
        code: &str,
        code_verifier: &str,
        now_ms: i64,
    ) -> Result<TokenSet, McpError> {
        let fields = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", code_verifier),
            ("resource", server.resource.as_str()),
        ];
        let tokens = self.token_request(server, client, &fields, now_ms).await?;
        Ok(TokenSet {
            scope: tokens.scope.or_else(|| server.scope.clone()),
            ..tokens
        })
    }

    /// Renews the access token. A server that rotates refresh tokens sends a new one; one that does
    /// not leaves the old one valid, and it is kept.
    pub async fn refresh(
        &self,
        server: &AuthServer,
        client: &ClientCredentials,
        current: &TokenSet,
        now_ms: i64,
    ) -> Result<TokenSet, McpError> {
        let refresh_token = current
            .refresh_token
            .as_deref()
            .ok_or_else(|| refused("the authorization has expired and cannot be renewed"))?;
        let fields = [
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("resource", server.resource.as_str()),
        ];
        let renewed = self.token_request(server, client, &fields, now_ms).await?;
        Ok(TokenSet {
            refresh_token: renewed.refresh_token.or_else(|| current.refresh_token.clone()),
            scope: renewed.scope.or_else(|| current.scope.clone()),
            ..renewed
        })
    }

    /// Asks the server to revoke a token (RFC 7009), where it offers revocation. Best effort: the
    /// caller forgets the tokens either way.
    pub async fn revoke(
        &self,
        server: &AuthServer,
        client: &ClientCredentials,
        token: &str,
    ) -> Result<(), McpError> {
        let Some(endpoint) = server.revocation_endpoint.as_deref() else {
            return Ok(());
        };
        let mut fields = vec![("token", token)];
        let headers = authenticate(server, client, &mut fields)?;
        let answer = send(
            self,
            reqwest::Method::POST,
            endpoint,
            Body::Form(&fields),
            headers,
        )
        .await?;
        match answer.status {
            200..=299 => Ok(()),
            status => Err(McpError::HttpStatus(status)),
        }
    }

    async fn token_request(
        &self,
        server: &AuthServer,
        client: &ClientCredentials,
        grant: &[(&str, &str)],
        now_ms: i64,
    ) -> Result<TokenSet, McpError> {
        let mut fields: Vec<(&str, &str)> = grant.to_vec();
        let headers = authenticate(server, client, &mut fields)?;
        let answer = send(
            self,
            reqwest::Method::POST,
            &server.token_endpoint,
            Body::Form(&fields),
            headers,
        )
        .await?;
        read_tokens(&success(answer, "token request")?, now_ms)
    }
}

/// Adds the client's identity to a token or revocation request: its id in the form, and a
/// confidential client's secret where the authorization server takes it (HTTP Basic with both
/// parts form-encoded, RFC 6749 §2.3.1, else the form).
fn authenticate<'a>(
    server: &AuthServer,
    client: &'a ClientCredentials,
    fields: &mut Vec<(&str, &'a str)>,
) -> Result<HeaderMap, McpError> {
    fields.push(("client_id", &client.client_id));
    let mut headers = HeaderMap::new();
    let Some(secret) = &client.client_secret else {
        return Ok(headers);
    };
    if !server.basic_client_auth {
        fields.push(("client_secret", secret));
        return Ok(headers);
    }
    use base64::Engine as _;
    // Form encoding writes a space as `+`, which some servers decode as a plus (a bare percent
    // decoder); `%20` reads as a space to both. A `+` of the input is `%2B` by then.
    let encode = |part: &str| {
        url::form_urlencoded::byte_serialize(part.as_bytes())
            .collect::<String>()
            .replace('+', "%20")
    };
    let pair = format!("{}:{}", encode(&client.client_id), encode(secret));
    let mut value = HeaderValue::try_from(format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    ))
    .map_err(|_| refused("the client credentials are not a valid header value"))?;
    value.set_sensitive(true);
    headers.insert(reqwest::header::AUTHORIZATION, value);
    Ok(headers)
}

/// Checks the callback's `iss` (RFC 9207) against the issuer recorded when the authorization
/// started: exact comparison; missing only where the server never promised it.
pub fn check_issuer(server: &AuthServer, iss: Option<&str>) -> Result<(), McpError> {
    match iss {
        Some(iss) if iss == server.issuer => Ok(()),
        Some(_) => Err(refused(
            "the callback came from another authorization server (iss)",
        )),
        None if server.iss_parameter_supported => Err(refused(
            "the callback lacks the iss its authorization server promised",
        )),
        None => Ok(()),
    }
}

/// A bearer `Authorization` value for an access token, marked sensitive so it is never logged.
pub fn bearer(access_token: &str) -> Result<HeaderValue, McpError> {
    let mut value = HeaderValue::try_from(format!("Bearer {access_token}"))
        .map_err(|_| refused("the access token is not a valid header value"))?;
    value.set_sensitive(true);
    Ok(value)
}

/// The JSON of a 2xx answer; anything else is refused with at most a known error code.
fn success(answer: Answer, what: &str) -> Result<Value, McpError> {
    if (200..300).contains(&answer.status)
        && let Some(document @ Value::Object(_)) = answer.json
    {
        return Ok(document);
    }
    let code = answer
        .json
        .as_ref()
        .and_then(|j| j.get("error"))
        .and_then(Value::as_str)
        .filter(|code| KNOWN_ERRORS.contains(code));
    Err(McpError::Authorization(match code {
        Some(code) => format!("the {what} was refused ({code})"),
        None => format!("the {what} failed (HTTP {})", answer.status),
    }))
}

/// A lifetime in whole seconds. RFC 6749 asks for a number; servers also send `3600.0` or `"3600"`,
/// and a lifetime read as absent would leave the token unrenewed until a request is refused.
fn whole_seconds(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| f.is_finite())
                .map(|f| f.clamp(i64::MIN as f64, i64::MAX as f64) as i64)
        }),
        Value::String(text) => text.trim().parse().ok(),
        _ => None,
    }
}

fn read_tokens(document: &Value, now_ms: i64) -> Result<TokenSet, McpError> {
    let access_token =
        field(document, "access_token").ok_or_else(|| refused("the token answer has no access_token"))?;
    let token_type = field(document, "token_type").unwrap_or_default();
    if !token_type.eq_ignore_ascii_case("bearer") {
        return Err(refused("the token answer is not a bearer token"));
    }
    let expires_at_ms = document
        .get("expires_in")
        .and_then(whole_seconds)
        .filter(|s| *s > 0)
        .map(|s| now_ms.saturating_add(s.saturating_mul(1000)));
    Ok(TokenSet {
        access_token,
        refresh_token: field(document, "refresh_token"),
        expires_at_ms,
        scope: field(document, "scope"),
    })
}

fn field(document: &Value, name: &str) -> Option<String> {
    document
        .get(name)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(iss_supported: bool) -> AuthServer {
        AuthServer {
            resource: "https://mcp.ex.com/mcp".into(),
            issuer: "https://auth.ex.com".into(),
            authorization_endpoint: "https://auth.ex.com/authorize?tenant=1".into(),
            token_endpoint: "https://auth.ex.com/token".into(),
            registration_endpoint: None,
            revocation_endpoint: None,
            scope: Some("notes files".into()),
            iss_parameter_supported: iss_supported,
            client_id_metadata_document_supported: false,
            basic_client_auth: false,
        }
    }

    #[test]
    fn the_iss_check_follows_rfc_9207() {
        let promised = server(true);
        assert!(check_issuer(&promised, Some("https://auth.ex.com")).is_ok());
        assert!(check_issuer(&promised, Some("https://auth.ex.com/")).is_err());
        assert!(check_issuer(&promised, None).is_err());
        let silent = server(false);
        assert!(check_issuer(&silent, None).is_ok());
        assert!(check_issuer(&silent, Some("https://evil.ex.com")).is_err());
    }

    #[test]
    fn token_answers_are_read_with_their_lifetime() {
        let tokens = read_tokens(
            &json!({"access_token": "at", "token_type": "Bearer", "expires_in": 60, "refresh_token": "rt"}),
            1_000,
        )
        .unwrap();
        assert_eq!(tokens.expires_at_ms, Some(61_000));
        assert!(tokens.expires_within(0, 61_000));
        assert!(!tokens.expires_within(30_000, 20_000));
        for lifetime in [json!(60.0), json!("60"), json!(60.7)] {
            let tokens = read_tokens(
                &json!({"access_token": "at", "token_type": "bearer", "expires_in": lifetime}),
                1_000,
            )
            .unwrap();
            assert_eq!(tokens.expires_at_ms, Some(61_000), "{lifetime}");
        }
        assert!(read_tokens(&json!({"access_token": "at", "token_type": "mac"}), 0).is_err());
        assert!(read_tokens(&json!({"token_type": "bearer"}), 0).is_err());
    }

    #[test]
    fn refusals_repeat_only_known_error_codes() {
        let known = Answer {
            status: 400,
            challenge: None,
            json: Some(json!({"error": "invalid_grant", "error_description": "<script>"})),
        };
        assert_eq!(
            success(known, "token request").unwrap_err().to_string(),
            "MCP authorization failed: the token request was refused (invalid_grant)"
        );
        let odd = Answer {
            status: 400,
            challenge: None,
            json: Some(json!({"error": "internal host db1.corp is down"})),
        };
        assert_eq!(
            success(odd, "token request").unwrap_err().to_string(),
            "MCP authorization failed: the token request failed (HTTP 400)"
        );
    }

    #[test]
    fn a_secret_goes_where_the_token_endpoint_takes_it() {
        let client = ClientCredentials {
            client_id: "c:1".into(),
            client_secret: Some("s 2".into()),
        };
        let mut fields = Vec::new();
        let headers = authenticate(&server(false), &client, &mut fields).unwrap();
        assert!(headers.is_empty());
        assert_eq!(fields, [("client_id", "c:1"), ("client_secret", "s 2")]);

        let basic = AuthServer {
            basic_client_auth: true,
            ..server(false)
        };
        let mut fields = Vec::new();
        let headers = authenticate(&basic, &client, &mut fields).unwrap();
        assert_eq!(fields, [("client_id", "c:1")]);
        // base64("c%3A1:s%202")
        assert_eq!(headers[reqwest::header::AUTHORIZATION], "Basic YyUzQTE6cyUyMDI=");

        let public = ClientCredentials {
            client_secret: None,
            ..client
        };
        let mut fields = Vec::new();
        assert!(authenticate(&basic, &public, &mut fields).unwrap().is_empty());
        assert_eq!(fields, [("client_id", "c:1")]);
    }

    #[tokio::test]
    async fn the_authorization_url_carries_pkce_state_resource_and_scope() {
        let oauth = McpOAuth::new(std::sync::Arc::new(promptgate_outbound::Outbound::new(
            promptgate_outbound::AddressPolicy::public_only(),
        )));
        let client = ClientCredentials {
            client_id: "c1".into(),
            client_secret: None,
        };
        let url = oauth
            .authorization_url(&server(false), &client, "https://gw.ex.com/cb", "st", "ch")
            .unwrap();
        let parsed = url::Url::parse(&url).unwrap();
        let pairs: Vec<(String, String)> = parsed.query_pairs().into_owned().collect();
        let get = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("tenant"), Some("1"), "the endpoint's own query is kept");
        assert_eq!(get("response_type"), Some("code"));
        assert_eq!(get("code_challenge_method"), Some("S256"));
        assert_eq!(get("code_challenge"), Some("ch"));
        assert_eq!(get("state"), Some("st"));
        assert_eq!(get("resource"), Some("https://mcp.ex.com/mcp"));
        assert_eq!(get("scope"), Some("notes files"));
        assert_eq!(get("redirect_uri"), Some("https://gw.ex.com/cb"));
    }
}
