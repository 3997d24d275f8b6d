//! Microsoft Graph: Outlook mail and OneDrive, shaped into the results the `microsoft_*` tools return.

mod executors;
mod mail;
mod onedrive;

use serde_json::Value;

use crate::oauth::AccessTokens;
use crate::oauth::http::{ApiReply, JSON_RESPONSE_LIMIT, api_url, send_authorized};
use promptgate_core::tools::ToolError;

pub use executors::{MicrosoftExecutor, MicrosoftTool};

pub const DEFAULT_GRAPH_BASE: &str = "https://graph.microsoft.com/v1.0";

/// Graph for one user. `base` is configurable so tests can point at loopback.
#[derive(Debug, Clone)]
pub struct GraphClient {
    pub base: String,
    pub http: reqwest::Client,
    pub tokens: AccessTokens,
}

const OUTLOOK: &str = "Outlook";
const ONEDRIVE: &str = "OneDrive";

impl GraphClient {
    /// A client on the production Graph endpoint.
    pub fn new(http: reqwest::Client, tokens: AccessTokens) -> Self {
        Self {
            base: DEFAULT_GRAPH_BASE.to_owned(),
            http,
            tokens,
        }
    }

    async fn get(
        &self,
        service: &str,
        segments: &[&str],
        query: &[(&str, &str)],
        body_limit: usize,
    ) -> Result<ApiReply, ToolError> {
        let url = api_url(&self.base, segments, query)?;
        send_authorized(&self.tokens, service, body_limit, |token| {
            self.http.get(url.clone()).bearer_auth(token)
        })
        .await
    }

    async fn get_json(
        &self,
        service: &str,
        segments: &[&str],
        query: &[(&str, &str)],
    ) -> Result<ApiReply, ToolError> {
        self.get(service, segments, query, JSON_RESPONSE_LIMIT).await
    }
}

/// `{name, email}` from Graph's `{emailAddress: {name, address}}` recipient shape.
fn recipient(value: &Value) -> Value {
    let address = value.get("emailAddress").unwrap_or(&Value::Null);
    serde_json::json!({
        "name": address.get("name").and_then(Value::as_str).unwrap_or_default(),
        "email": address.get("address").and_then(Value::as_str).unwrap_or_default(),
    })
}

fn recipients(message: &Value, field: &str) -> Vec<Value> {
    message
        .get(field)
        .and_then(Value::as_array)
        .map(|list| list.iter().map(recipient).collect())
        .unwrap_or_default()
}

/// The `$skiptoken` of Graph's `@odata.nextLink`, which is what a caller passes back for the next page.
fn next_skip_token(page: &Value) -> Option<String> {
    let link = page.get("@odata.nextLink")?.as_str()?;
    let url = url::Url::parse(link).ok()?;
    url.query_pairs()
        .find(|(key, _)| key.eq_ignore_ascii_case("$skiptoken") || key.eq_ignore_ascii_case("$skip"))
        .map(|(_, value)| value.into_owned())
}
