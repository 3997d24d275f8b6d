//! From an MCP server's URL to its authorization server: the challenge a tokenless request meets,
//! the protected-resource metadata (RFC 9728) and the authorization server's metadata (RFC 8414,
//! then OpenID discovery), checked before anything is used.

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use url::Url;

use super::McpOAuth;
use super::http::{Answer, Body, parse, send};
use crate::error::McpError;

/// What a `401` or `403` said in its `WWW-Authenticate: Bearer …` header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    /// Where the server's protected-resource metadata is.
    pub resource_metadata: Option<String>,
    /// The scopes the server asks for.
    pub scope: Option<String>,
    /// `invalid_token`, `insufficient_scope`…
    pub error: Option<String>,
}

impl Challenge {
    /// Reads the Bearer challenge of a `WWW-Authenticate` value; `None` without one.
    pub fn parse(header: &str) -> Option<Challenge> {
        let trimmed = header.trim_start();
        let scheme_end = trimmed.find(char::is_whitespace).unwrap_or(trimmed.len());
        if !trimmed[..scheme_end].eq_ignore_ascii_case("bearer") {
            return None;
        }
        let mut challenge = Challenge::default();
        for (name, value) in auth_params(&trimmed[scheme_end..]) {
            match name.to_ascii_lowercase().as_str() {
                "resource_metadata" => challenge.resource_metadata = Some(value),
                "scope" => challenge.scope = Some(value),
                "error" => challenge.error = Some(value),
                _ => {}
            }
        }
        Some(challenge)
    }
}

/// `name=value` and `name="quoted \"value\""` pairs, comma separated.
fn auth_params(text: &str) -> Vec<(String, String)> {
    let mut params = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
            chars.next();
        }
        let name: String = chars.by_ref().take_while(|c| *c != '=').collect();
        if name.trim().is_empty() {
            return params;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '"' => break,
                    other => value.push(other),
                }
            }
        } else {
            while let Some(c) = chars.peek().copied().filter(|c| *c != ',') {
                value.push(c);
                chars.next();
            }
        }
        params.push((name.trim().to_owned(), value.trim().to_owned()));
    }
}

/// What authorizing a user for one MCP server needs, found and checked by [`McpOAuth::discover`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthServer {
    /// The resource the tokens are for (RFC 8707 `resource`), as the server's metadata names it.
    pub resource: String,
    /// The authorization server's issuer, compared exactly with the callback's `iss`.
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    #[serde(default)]
    pub revocation_endpoint: Option<String>,
    /// The scopes to ask for: the challenge's, else every scope the resource lists.
    #[serde(default)]
    pub scope: Option<String>,
    /// The authorization server promises `iss` on its callbacks (RFC 9207).
    #[serde(default)]
    pub iss_parameter_supported: bool,
    /// The authorization server takes a client id that is the URL of the client's metadata
    /// document (`client_id_metadata_document_supported`).
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
    /// A confidential client sends its secret in HTTP Basic (`client_secret_basic`, where the
    /// token endpoint lists it and not `client_secret_post`, or lists nothing: RFC 8414's
    /// default), else in the form (`client_secret_post`).
    #[serde(default)]
    pub basic_client_auth: bool,
}

impl McpOAuth {
    /// Sends the server a tokenless `initialize` and reads its challenge: `Ok(None)` when it
    /// answered without asking for authorization.
    pub async fn challenge(&self, server_url: &str) -> Result<Option<Challenge>, McpError> {
        let body = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "promptgate", "version": env!("CARGO_PKG_VERSION")}},
        });
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let answer = send(
            self,
            reqwest::Method::POST,
            server_url,
            Body::Json(&body),
            headers,
        )
        .await?;
        Ok(match answer.status {
            401 | 403 => Some(
                answer
                    .challenge
                    .as_deref()
                    .and_then(Challenge::parse)
                    .unwrap_or_default(),
            ),
            _ => None,
        })
    }

    /// Finds and checks the authorization server of the MCP server at `server_url`, starting from
    /// the challenge it answered with. Refused: metadata for another resource, an authorization
    /// server without PKCE S256, an issuer that differs from the one asked for, and any URL the
    /// outbound policy refuses (every endpoint is checked now, before anything is stored).
    pub async fn discover(&self, server_url: &str, challenge: &Challenge) -> Result<AuthServer, McpError> {
        let server = parse(server_url)?;
        let metadata = self.resource_metadata(&server, challenge).await?;
        let resource = string(&metadata, "resource")
            .ok_or_else(|| refused("the protected-resource metadata names no resource"))?;
        if !covers(&parse(&resource)?, &server) {
            return Err(refused("the protected-resource metadata is for another resource"));
        }
        let issuer = metadata
            .get("authorization_servers")
            .and_then(Value::as_array)
            .and_then(|servers| servers.iter().find_map(Value::as_str))
            .ok_or_else(|| refused("the protected-resource metadata lists no authorization server"))?
            .to_owned();
        let as_metadata = self.authorization_server_metadata(&issuer).await?;
        let found = read_as_metadata(&as_metadata, &issuer, resource, scope(challenge, &metadata))?;
        for url in [
            Some(&found.authorization_endpoint),
            Some(&found.token_endpoint),
            found.registration_endpoint.as_ref(),
            found.revocation_endpoint.as_ref(),
        ]
        .into_iter()
        .flatten()
        {
            let parsed = parse(url)?;
            self.outbound
                .check_url(&parsed)
                .await
                .map_err(McpError::from_outbound)?;
        }
        Ok(found)
    }

    /// The challenge's metadata URL, else the well-known URLs with and without the server's path.
    async fn resource_metadata(&self, server: &Url, challenge: &Challenge) -> Result<Value, McpError> {
        let candidates = match &challenge.resource_metadata {
            Some(url) => vec![url.clone()],
            None => well_known(server, "oauth-protected-resource", false),
        };
        self.first_document(&candidates, "protected-resource metadata")
            .await
    }

    async fn authorization_server_metadata(&self, issuer: &str) -> Result<Value, McpError> {
        let issuer_url = parse(issuer)?;
        let mut candidates = well_known(&issuer_url, "oauth-authorization-server", false);
        candidates.extend(well_known(&issuer_url, "openid-configuration", true));
        self.first_document(&candidates, "authorization server metadata")
            .await
    }

    /// The first candidate that answers 200 with a JSON object. A refused address ends the search:
    /// the next candidate is on the same host.
    async fn first_document(&self, candidates: &[String], what: &str) -> Result<Value, McpError> {
        for url in candidates {
            let mut headers = HeaderMap::new();
            headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
            match send(self, reqwest::Method::GET, url, Body::None, headers).await? {
                Answer {
                    status: 200,
                    json: Some(document @ Value::Object(_)),
                    ..
                } => return Ok(document),
                _ => continue,
            }
        }
        Err(refused(&format!("no {what} was found")))
    }
}

/// RFC 9728 §3.1 / RFC 8414 §3.1 path insertion (`/.well-known/<name>/<path>`), then the root
/// document; for OpenID discovery also the path-appended form (`<path>/.well-known/<name>`).
fn well_known(base: &Url, name: &str, appended_too: bool) -> Vec<String> {
    let origin = base.origin().ascii_serialization();
    let path = base.path().trim_end_matches('/');
    let mut urls = Vec::new();
    if !path.is_empty() {
        urls.push(format!("{origin}/.well-known/{name}{path}"));
        if appended_too {
            urls.push(format!("{origin}{path}/.well-known/{name}"));
        }
    }
    urls.push(format!("{origin}/.well-known/{name}"));
    urls
}

/// The metadata's resource is the server itself or a prefix of it on the same origin (a server at
/// `/mcp` may name its host as the resource).
fn covers(resource: &Url, server: &Url) -> bool {
    if resource.origin() != server.origin() {
        return false;
    }
    let prefix = resource.path().trim_end_matches('/');
    let path = server.path();
    path == prefix || path.starts_with(&format!("{prefix}/")) || prefix.is_empty()
}

fn scope(challenge: &Challenge, metadata: &Value) -> Option<String> {
    challenge
        .scope
        .clone()
        .filter(|s| !s.trim().is_empty())
        .or_else(|| {
            let listed: Vec<&str> = metadata
                .get("scopes_supported")?
                .as_array()?
                .iter()
                .filter_map(Value::as_str)
                .collect();
            (!listed.is_empty()).then(|| listed.join(" "))
        })
}

fn read_as_metadata(
    metadata: &Value,
    issuer: &str,
    resource: String,
    scope: Option<String>,
) -> Result<AuthServer, McpError> {
    if string(metadata, "issuer").as_deref() != Some(issuer) {
        return Err(refused(
            "the authorization server's metadata names another issuer",
        ));
    }
    let s256 = metadata
        .get("code_challenge_methods_supported")
        .and_then(Value::as_array)
        .is_some_and(|methods| methods.iter().any(|m| m.as_str() == Some("S256")));
    if !s256 {
        return Err(refused(
            "the authorization server does not support PKCE with S256",
        ));
    }
    let endpoint = |name: &str| {
        string(metadata, name).ok_or_else(|| refused(&format!("the authorization server has no {name}")))
    };
    Ok(AuthServer {
        resource,
        issuer: issuer.to_owned(),
        authorization_endpoint: endpoint("authorization_endpoint")?,
        token_endpoint: endpoint("token_endpoint")?,
        registration_endpoint: string(metadata, "registration_endpoint"),
        revocation_endpoint: string(metadata, "revocation_endpoint"),
        scope,
        iss_parameter_supported: flag(metadata, "authorization_response_iss_parameter_supported"),
        client_id_metadata_document_supported: flag(metadata, "client_id_metadata_document_supported"),
        basic_client_auth: takes_basic_auth(metadata),
    })
}

/// The token endpoint takes a client's secret in HTTP Basic only: it lists `client_secret_basic`
/// without `client_secret_post`, or lists no method at all (RFC 8414 §2's default). Where it lists
/// both, the form is used: authorization servers that hold each client to the method it was
/// registered with take the form from the clients registered for it, as promptgate always sent.
fn takes_basic_auth(metadata: &Value) -> bool {
    match metadata
        .get("token_endpoint_auth_methods_supported")
        .and_then(Value::as_array)
    {
        Some(methods) => {
            let listed = |name: &str| methods.iter().any(|m| m.as_str() == Some(name));
            listed("client_secret_basic") && !listed("client_secret_post")
        }
        None => true,
    }
}

fn flag(document: &Value, name: &str) -> bool {
    document.get(name).and_then(Value::as_bool).unwrap_or(false)
}

fn string(document: &Value, name: &str) -> Option<String> {
    document
        .get(name)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

pub(crate) fn refused(why: &str) -> McpError {
    McpError::Authorization(why.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_goes_in_basic_only_where_the_form_is_not_offered() {
        let with = |methods: Value| json!({"token_endpoint_auth_methods_supported": methods});
        assert!(!takes_basic_auth(&with(json!([
            "client_secret_post",
            "client_secret_basic"
        ]))));
        assert!(!takes_basic_auth(&with(json!(["client_secret_post"]))));
        assert!(takes_basic_auth(&with(json!([
            "client_secret_basic",
            "private_key_jwt"
        ]))));
        assert!(takes_basic_auth(&json!({})), "RFC 8414's default");
    }

    #[test]
    fn bearer_challenges_are_read_with_quoted_and_bare_values() {
        let header = r#"Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://mcp.ex.com/.well-known/oauth-protected-resource/mcp", realm=x"#;
        let challenge = Challenge::parse(header).unwrap();
        assert_eq!(challenge.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(challenge.scope.as_deref(), Some("files:read files:write"));
        assert_eq!(
            challenge.resource_metadata.as_deref(),
            Some("https://mcp.ex.com/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(Challenge::parse(r#"Basic realm="x""#), None);
        assert_eq!(Challenge::parse("Bearer"), Some(Challenge::default()));
        let escaped = Challenge::parse(r#"bearer scope="a \"b\"""#).unwrap();
        assert_eq!(escaped.scope.as_deref(), Some(r#"a "b""#));
    }

    #[test]
    fn well_known_urls_follow_rfc_9728_and_8414_order() {
        let server = Url::parse("https://ex.com/public/mcp").unwrap();
        assert_eq!(
            well_known(&server, "oauth-protected-resource", false),
            [
                "https://ex.com/.well-known/oauth-protected-resource/public/mcp",
                "https://ex.com/.well-known/oauth-protected-resource"
            ]
        );
        let issuer = Url::parse("https://auth.ex.com/tenant1").unwrap();
        assert_eq!(
            well_known(&issuer, "openid-configuration", true),
            [
                "https://auth.ex.com/.well-known/openid-configuration/tenant1",
                "https://auth.ex.com/tenant1/.well-known/openid-configuration",
                "https://auth.ex.com/.well-known/openid-configuration"
            ]
        );
        let bare = Url::parse("https://auth.ex.com").unwrap();
        assert_eq!(
            well_known(&bare, "oauth-authorization-server", false),
            ["https://auth.ex.com/.well-known/oauth-authorization-server"]
        );
    }

    #[test]
    fn metadata_covers_its_server_or_a_path_below_it_only() {
        let server = Url::parse("https://mcp.ex.com/team/mcp").unwrap();
        for ok in [
            "https://mcp.ex.com/team/mcp",
            "https://mcp.ex.com",
            "https://mcp.ex.com/team",
        ] {
            assert!(covers(&Url::parse(ok).unwrap(), &server), "{ok}");
        }
        for other in [
            "https://other.ex.com/team/mcp",
            "https://mcp.ex.com/te",
            "http://mcp.ex.com/team/mcp",
            "https://mcp.ex.com/team/mcp/deeper",
        ] {
            assert!(!covers(&Url::parse(other).unwrap(), &server), "{other}");
        }
    }

    #[test]
    fn an_authorization_server_must_name_its_issuer_and_offer_s256() {
        let good = json!({
            "issuer": "https://auth.ex.com", "authorization_endpoint": "https://auth.ex.com/authorize",
            "token_endpoint": "https://auth.ex.com/token", "code_challenge_methods_supported": ["plain", "S256"],
            "authorization_response_iss_parameter_supported": true,
        });
        let found =
            read_as_metadata(&good, "https://auth.ex.com", "https://mcp.ex.com".into(), None).unwrap();
        assert!(found.iss_parameter_supported);
        assert_eq!(found.token_endpoint, "https://auth.ex.com/token");

        let mut plain_only = good.clone();
        plain_only["code_challenge_methods_supported"] = json!(["plain"]);
        let mut unlisted = good.clone();
        unlisted
            .as_object_mut()
            .unwrap()
            .remove("code_challenge_methods_supported");
        for metadata in [plain_only, unlisted] {
            let err = read_as_metadata(&metadata, "https://auth.ex.com", "r".into(), None).unwrap_err();
            assert!(err.to_string().contains("PKCE with S256"), "{err}");
        }
        let err = read_as_metadata(&good, "https://auth.ex.com/", "r".into(), None).unwrap_err();
        assert!(err.to_string().contains("another issuer"), "{err}");
    }
}
