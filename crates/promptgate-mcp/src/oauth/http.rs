//! One OAuth request: the URL checked by the outbound policy, a client pinned to the checked
//! addresses, a bounded JSON answer. What a server sends back never reaches an error text.

use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, WWW_AUTHENTICATE};
use serde_json::Value;
use url::Url;

use crate::error::McpError;

/// Metadata documents and token answers are small.
const MAX_BODY: usize = 256 * 1024;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// What came back: the status, the `WWW-Authenticate` header and the body when it is JSON.
pub(crate) struct Answer {
    pub status: u16,
    pub challenge: Option<String>,
    pub json: Option<Value>,
}

/// What to send.
pub(crate) enum Body<'a> {
    None,
    Form(&'a [(&'a str, &'a str)]),
    Json(&'a Value),
}

pub(crate) async fn send(
    oauth: &super::McpOAuth,
    method: reqwest::Method,
    url: &str,
    body: Body<'_>,
    headers: HeaderMap,
) -> Result<Answer, McpError> {
    let parsed = parse(url)?;
    let target = oauth
        .outbound
        .check_url(&parsed)
        .await
        .map_err(McpError::from_outbound)?;
    let client = oauth
        .outbound
        .pinned_builder(&parsed, &target)
        .map_err(McpError::from_outbound)?
        .timeout(REQUEST_TIMEOUT)
        .user_agent(concat!("promptgate/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|_| McpError::Connect("the HTTP client could not be set up".to_owned()))?;
    let mut request = client
        .request(method, parsed)
        .headers(headers)
        .header(ACCEPT, "application/json");
    request = match body {
        Body::None => request,
        Body::Form(fields) => {
            let encoded = url::form_urlencoded::Serializer::new(String::new())
                .extend_pairs(fields.iter())
                .finish();
            request
                .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(encoded)
        }
        Body::Json(value) => request.json(value),
    };
    let response = request.send().await.map_err(|e| McpError::from_reqwest(&e))?;
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get(WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let bytes = crate::era::read_bounded(response, MAX_BODY, "an OAuth answer", |_| false).await?;
    Ok(Answer {
        status,
        challenge,
        json: serde_json::from_slice(&bytes).ok(),
    })
}

/// An absolute http(s) URL without credentials or fragment.
pub(crate) fn parse(url: &str) -> Result<Url, McpError> {
    let parsed = Url::parse(url)
        .map_err(|_| McpError::Authorization("an OAuth URL the server gave is not a valid URL".into()))?;
    if !matches!(parsed.scheme(), "http" | "https")
        || !parsed.username().is_empty()
        || parsed.password().is_some()
        || parsed.fragment().is_some()
    {
        return Err(McpError::Authorization(
            "an OAuth URL the server gave is not a plain http(s) URL".into(),
        ));
    }
    Ok(parsed)
}
