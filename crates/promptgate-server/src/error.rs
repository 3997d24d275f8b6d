//! The one place where failures become HTTP: `{"error": {"code", "message", "request_id"}}` with the
//! right status. [`ErrorCode`] is the table of every code a client can meet, each with the status it
//! is sent with; the OpenAPI document publishes it. A failure on our side is not logged here: the
//! error carries a [`FailureLog`] on its response, and the request middleware writes it
//! ([`crate::observe::after_route`]), so converting an error stays free of side effects.

use std::borrow::Cow;

use aide::OperationOutput;
use aide::generate::GenContext;
use aide::openapi::{Operation, Response as ApiResponse};
use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use promptgate_service::events::TurnError;
use promptgate_service::{ServiceError, StoreError};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Serialize, Serializer};
use serde_json::json;

/// What `Retry-After` suggests while the database is unavailable.
const STORE_RETRY_AFTER_SECS: u64 = 2;

/// One row per code: the variant, its HTTP status, the code as clients read it, and what it means.
macro_rules! error_codes {
    ($($variant:ident = $status:literal, $code:literal: $meaning:literal;)+) => {
        /// Every `code` an error body can carry. Each code has one status ([`ErrorCode::status`]);
        /// a status that comes from below our handlers (the router, a layer) is given the code of
        /// [`ErrorCode::for_status`] and keeps its own status.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $(#[doc = $meaning] $variant,)+
        }

        impl ErrorCode {
            /// Every code, in the table's order (by status).
            pub const ALL: &[ErrorCode] = &[$(ErrorCode::$variant),+];

            /// The code as the error body spells it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $code,)+
                }
            }

            /// What the code means, as the OpenAPI document describes it.
            pub fn meaning(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $meaning,)+
                }
            }

            /// The code a body spells `code`, if the table has it.
            pub fn parse(code: &str) -> Option<ErrorCode> {
                match code {
                    $($code => Some(ErrorCode::$variant),)+
                    _ => None,
                }
            }

            fn status_number(self) -> u16 {
                match self {
                    $(ErrorCode::$variant => $status,)+
                }
            }
        }
    };
}

error_codes! {
    InvalidRequest = 400, "invalid_request": "The request is not one this server can read (a status from below the handlers, or a body an extractor refused).";
    MalformedJson = 400, "malformed_json": "The body is not valid JSON.";
    InvalidQuery = 400, "invalid_query": "The query string does not have the shape the endpoint reads.";
    InvalidHeader = 400, "invalid_header": "A request header the endpoint reads has a value it does not know; the message names the header.";
    InvalidCursor = 400, "invalid_cursor": "A page cursor this list did not hand out.";
    InvalidParameter = 400, "invalid_parameter": "A parameter of a Responses API request has a value the gateway cannot honour; the message names it.";
    UnsupportedParameter = 400, "unsupported_parameter": "The OpenAI-compatible facade does not support a parameter the request sets.";
    ContextTooLong = 400, "context_too_long": "The conversation does not fit the model's context window, even with its older part left out.";
    RequestRefused = 400, "request_refused": "The model provider refused the request as invalid (a value out of the model's range, a field it does not take); sending it again unchanged gets the same answer. The provider's reason is in the server's log.";
    ToolNameConflict = 400, "tool_name_conflict": "A tool the client defines has the name of one of the server's tools.";
    InvalidState = 400, "invalid_state": "An integration's OAuth callback names an authorization that is unknown, used or expired.";
    InvalidCallback = 400, "invalid_callback": "An integration's OAuth callback carries no authorization code.";
    Unauthorized = 401, "unauthorized": "No valid token: send `Authorization: Bearer <token>`.";
    Forbidden = 403, "forbidden": "Refused (a status from below the handlers).";
    OriginNotAllowed = 403, "origin_not_allowed": "A browser request from a web origin this server does not list.";
    InvalidLink = 403, "invalid_link": "A signed artifact link that is invalid or has expired.";
    QuotaExceeded = 403, "quota_exceeded": "The user keeps as many bytes or threads as their storage quota allows; nothing was written. Deleting threads makes room (`GET /v1/usage/storage` shows usage).";
    AdminOnly = 403, "admin_only": "Only an admin may do this (`promptgate users admin <name>` makes one).";
    UnpricedModel = 403, "unpriced_model": "A money budget is in force on the user or key, and the model (or one of its fallbacks) has no price in `[[prices]]`, so its cost could not be counted; the message names the model.";
    ReadOnly = 403, "read_only": "A record the user may read but not change (a system model).";
    NotFound = 404, "not_found": "The record or endpoint does not exist (for this user).";
    UnknownTurn = 404, "unknown_turn": "`retry_of` names no turn of this thread.";
    MethodNotAllowed = 405, "method_not_allowed": "The endpoint does not take this method.";
    RequestTimeout = 408, "request_timeout": "The request body stopped arriving.";
    Conflict = 409, "conflict": "The record already exists, or the change conflicts with one.";
    McpServerLimit = 409, "mcp_server_limit": "The user has as many MCP servers as the server allows; remove one first.";
    TurnInProgress = 409, "turn_in_progress": "A turn is already running in the thread.";
    RetryExpired = 409, "retry_expired": "The turn `retry_of` names ended too long ago to retry.";
    ApprovalPending = 409, "approval_pending": "The thread waits for the answer to a tool approval; only that answer (or Stop) is taken.";
    ApprovalRefused = 409, "approval_refused": "The approval answer matches no call waiting in the thread: unknown, answered before, cancelled, or for another call or input.";
    StreamTooLong = 409, "stream_too_long": "The running turn's stream outgrew what the server keeps; its answer so far is in the thread's messages.";
    PayloadTooLarge = 413, "payload_too_large": "The body is larger than the server accepts.";
    UriTooLong = 414, "uri_too_long": "The request target is longer than the server accepts.";
    UnsupportedMediaType = 415, "unsupported_media_type": "The body is not sent as `application/json`.";
    MisdirectedRequest = 421, "misdirected_request": "Misdirected (a status from below the handlers).";
    HostNotAllowed = 421, "host_not_allowed": "The Host header names a host this server does not answer to.";
    InvalidBody = 422, "invalid_body": "The body has the wrong shape, or a value breaks a rule; the message names the field.";
    FieldNotAllowed = 422, "field_not_allowed": "The request sets upstream fields the caller may not set (the operator decides them); the message names them and what may be set.";
    RefusedAddress = 422, "refused_address": "The outbound address policy refuses the URL.";
    McpAuthorizationFailed = 422, "mcp_authorization_failed": "The MCP server could not be authorized: it is unreachable, or its authorization server's metadata was refused (another resource or issuer, no PKCE S256) or it refused the request.";
    TooManyProbes = 429, "too_many_probes": "The user probed MCP servers more often than the server allows; `Retry-After` says when to try again.";
    BudgetExceeded = 429, "budget_exceeded": "The token budget of the user or key for the current period is spent; the message says which and when it resets, `Retry-After` how long until then.";
    CostBudgetExceeded = 429, "cost_budget_exceeded": "The money budget of the user or key for the current period is spent; the message says which and when it resets, `Retry-After` how long until then.";
    TokensPerMinuteExceeded = 429, "tokens_per_minute_exceeded": "The tokens-per-minute limit of the user or key is spent; the message says which, `Retry-After` when the minute ends.";
    ProviderRateLimited = 429, "provider_rate_limited": "The model provider was rate limiting requests and no fallback model answered; `Retry-After` says how long the provider asked to wait, when it said.";
    RateLimited = 429, "rate_limited": "Too many requests or turns for this user; `Retry-After` says when to try again.";
    HeadersTooLarge = 431, "headers_too_large": "The request headers are larger than the server accepts.";
    Internal = 500, "internal": "A failure on the server's side; the details are in its log under the request id.";
    ProviderError = 502, "provider_error": "An integration's provider, or an MCP server's authorization server, refused the authorization or the code exchange.";
    UpstreamError = 502, "upstream_error": "The model provider failed before an answer could be given.";
    Unavailable = 503, "unavailable": "Unavailable (a status from below the handlers).";
    Interrupted = 503, "interrupted": "The server cut the answer short (it was shutting down); ask again.";
    NotStored = 503, "not_stored": "The answer could not be stored, so it is not given; nothing was kept and asking again loses nothing.";
    StoreUnavailable = 503, "store_unavailable": "The database is unavailable; `Retry-After` says when to try again.";
    ProviderOverloaded = 503, "provider_overloaded": "The model provider was overloaded and no fallback model answered; `Retry-After` says how long the provider asked to wait, when it said.";
    Overloaded = 503, "overloaded": "The server runs as many turns as it may; try again shortly.";
    ProviderUnavailable = 503, "provider_unavailable": "The model's provider is not configured on this server.";
    IntegrationNotConfigured = 503, "integration_not_configured": "This server has no OAuth client for the integration.";
    TooManyAuthorizations = 503, "too_many_authorizations": "Too many integration authorizations are in progress.";
    McpOAuthNotConfigured = 503, "mcp_oauth_not_configured": "This server has no OAuth callback URL for MCP servers (`[mcp] oauth_redirect_base_url`).";
    Timeout = 504, "timeout": "The request took longer than the server's request timeout.";
}

impl ErrorCode {
    /// The status this code is sent with.
    pub fn status(self) -> StatusCode {
        StatusCode::from_u16(self.status_number()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    /// The code for a bare HTTP status, for errors produced outside our handlers (the router,
    /// timeouts, body limits, the connection layer).
    pub fn for_status(status: StatusCode) -> ErrorCode {
        match status.as_u16() {
            400 => ErrorCode::InvalidRequest,
            401 => ErrorCode::Unauthorized,
            403 => ErrorCode::Forbidden,
            404 => ErrorCode::NotFound,
            405 => ErrorCode::MethodNotAllowed,
            408 => ErrorCode::RequestTimeout,
            409 => ErrorCode::Conflict,
            413 => ErrorCode::PayloadTooLarge,
            414 => ErrorCode::UriTooLong,
            415 => ErrorCode::UnsupportedMediaType,
            421 => ErrorCode::MisdirectedRequest,
            422 => ErrorCode::InvalidBody,
            429 => ErrorCode::RateLimited,
            431 => ErrorCode::HeadersTooLarge,
            503 => ErrorCode::Unavailable,
            504 => ErrorCode::Timeout,
            _ if status.is_server_error() => ErrorCode::Internal,
            _ => ErrorCode::InvalidRequest,
        }
    }
}

impl ErrorCode {
    /// The code of a failed turn a facade answers: a conversation too long for the model, or a
    /// request the provider refused as invalid, is the client's request at fault (and a client
    /// does not retry a 400); any other failure the upstream's.
    pub fn of_turn(err: &TurnError) -> ErrorCode {
        match err {
            TurnError::ContextTooLong(_) => ErrorCode::ContextTooLong,
            TurnError::RequestRefused(_) => ErrorCode::RequestRefused,
            TurnError::ProviderRateLimited { .. } => ErrorCode::ProviderRateLimited,
            TurnError::ProviderOverloaded { .. } => ErrorCode::ProviderOverloaded,
            _ => ErrorCode::UpstreamError,
        }
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Published as a string with one `const` per code, each described with its status.
impl JsonSchema for ErrorCode {
    fn schema_name() -> Cow<'static, str> {
        "ErrorCode".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let codes: Vec<_> = ErrorCode::ALL
            .iter()
            .map(|code| {
                json!({
                    "const": code.as_str(),
                    "description": format!("{}: {}", code.status_number(), code.meaning()),
                })
            })
            .collect();
        let schema = json!({
            "type": "string",
            "description": "The stable, machine-readable code of an error, and the HTTP status it comes with.",
            "oneOf": codes,
        });
        Schema::try_from(schema).unwrap_or_default()
    }
}

/// The error body every endpoint returns.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ErrorDetail {
    /// Stable, machine-readable code such as `not_found` or `invalid_body`.
    pub code: ErrorCode,
    /// A sentence for humans.
    pub message: String,
    /// The request's `x-request-id` (the client's, else one the server made up): quote it when
    /// reporting a problem, the server's log lines for the request carry it too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The request's trace id, when the server exports traces: the trace of this request in the
    /// operator's trace UI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

/// A failure on our side that the request's log must say, kept on the error's response until the
/// request middleware writes it. Each kind is one log line, as the operator has always seen it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureLog {
    /// The database could not be reached; the driver's words.
    StoreUnavailable(String),
    /// The store failed in a way that became a 500.
    Store(String),
    /// A part of the service could not start, or a start-up check refused it.
    Service(String),
}

impl FailureLog {
    /// Writes the failure's log line, in the span of the request it failed.
    pub fn log(&self) {
        match self {
            FailureLog::StoreUnavailable(detail) => tracing::warn!(error = %detail, "store unavailable"),
            FailureLog::Store(error) => tracing::error!(error = %error, "store failure"),
            FailureLog::Service(error) => tracing::error!(error = %error, "service failure"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    /// Seconds after which the same request may succeed (`Retry-After`).
    pub retry_after: Option<u64>,
    /// What the request's log says about it, when the failure is ours.
    pub failure: Option<FailureLog>,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            retry_after: None,
            failure: None,
        }
    }

    /// The status the error is sent with: its code's.
    pub fn status(&self) -> StatusCode {
        self.code.status()
    }

    /// Tells the client when to try again.
    pub fn with_retry_after(mut self, secs: u64) -> Self {
        self.retry_after = Some(secs);
        self
    }

    /// [`Self::with_retry_after`] for a wait: whole seconds rounded up, at least one, so a client
    /// that waits as told is not refused again.
    pub fn with_retry_after_wait(self, wait: std::time::Duration) -> Self {
        let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        self.with_retry_after(secs.max(1))
    }

    /// Has the request's log say what failed on our side.
    fn logged(mut self, failure: FailureLog) -> Self {
        self.failure = Some(failure);
        self
    }

    /// The database cannot be reached: retryable, unlike a server bug.
    pub fn store_unavailable() -> Self {
        Self::new(
            ErrorCode::StoreUnavailable,
            "the database is unavailable right now; try again in a few seconds",
        )
        .with_retry_after(STORE_RETRY_AFTER_SECS)
    }

    pub fn not_found(what: &str, id: &str) -> Self {
        Self::new(
            ErrorCode::NotFound,
            format!("{what} {} does not exist", short(id)),
        )
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidBody, message)
    }

    /// 422 `field_not_allowed` when `fields` of an upstream request are not the caller's to set,
    /// 422 `invalid_body` when an open one has a value no provider reads.
    pub fn fields_allowed(
        fields: &serde_json::Map<String, serde_json::Value>,
        allowed: &[String],
    ) -> Result<(), Self> {
        promptgate_service::check_request_fields(fields, allowed).map_err(Self::from)
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Conflict, message)
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Unauthorized, message)
    }

    pub fn internal() -> Self {
        Self::new(
            ErrorCode::Internal,
            "something went wrong on our side; the details are in the server log",
        )
    }

    /// What the store reports, as a client may read it; its own failures only in the log.
    fn from_store(err: StoreError) -> Self {
        match err {
            StoreError::NotFound => Self::new(ErrorCode::NotFound, "no such record"),
            StoreError::Conflict(m) => Self::conflict(m),
            StoreError::ReadOnly(m) => Self::new(ErrorCode::ReadOnly, m),
            StoreError::Invalid(m) => Self::invalid(m),
            StoreError::Unavailable(detail) => {
                Self::store_unavailable().logged(FailureLog::StoreUnavailable(detail))
            }
            StoreError::Database(_) => Self::internal().logged(FailureLog::Store(err.to_string())),
        }
    }
}

impl From<ServiceError> for ApiError {
    fn from(err: ServiceError) -> Self {
        match err {
            ServiceError::UnknownThread(id) => Self::not_found("thread", &id),
            ServiceError::UnknownModel(id) => Self::not_found("model", &id),
            ServiceError::NotFound { what, id } => Self::not_found(what, &id),
            ServiceError::ProviderMissing(_) => Self::new(ErrorCode::ProviderUnavailable, err.to_string()),
            ServiceError::Busy(_) => Self::new(ErrorCode::TurnInProgress, err.to_string()),
            ServiceError::InvalidMessage(m) => Self::invalid(m),
            ServiceError::ToolNameClash(_) => Self::new(ErrorCode::ToolNameConflict, err.to_string()),
            ServiceError::Overloaded(_) => Self::new(ErrorCode::Overloaded, err.to_string()),
            ServiceError::UnknownTurn(_) => Self::new(ErrorCode::UnknownTurn, err.to_string()),
            ServiceError::RetryExpired(..) => Self::new(ErrorCode::RetryExpired, err.to_string()),
            ServiceError::ApprovalPending(_) => Self::new(ErrorCode::ApprovalPending, err.to_string()),
            ServiceError::ApprovalRefused(_) => Self::new(ErrorCode::ApprovalRefused, err.to_string()),
            ServiceError::QuestionSettled(m) => Self::new(ErrorCode::Conflict, m),
            ServiceError::UnusableDefaultModel(model) => Self::invalid(format!(
                "default_model {} is not a model you can use",
                preview(&model)
            )),
            ServiceError::RefusedAddress(reason) => Self::new(
                ErrorCode::RefusedAddress,
                format!(
                    "{reason}; this server does not connect there (see [mcp] allow_loopback, allow_private and allowed_addrs)"
                ),
            ),
            ServiceError::McpServerLimit(_) => Self::new(ErrorCode::McpServerLimit, err.to_string()),
            ServiceError::TooManyProbes(wait) => {
                Self::new(ErrorCode::TooManyProbes, err.to_string()).with_retry_after_wait(wait)
            }
            ServiceError::ConnectByAuthorizing(p) => Self::invalid(format!(
                "an integration is connected by authorizing it: GET /v1/integrations/{}/authorize",
                p.as_str()
            )),
            ServiceError::IntegrationNotConfigured(p) => Self::new(
                ErrorCode::IntegrationNotConfigured,
                format!(
                    "this server has no OAuth client for {}; see [integrations] in the configuration",
                    p.as_str()
                ),
            ),
            ServiceError::McpAuthorization(m) => Self::new(ErrorCode::McpAuthorizationFailed, m),
            ServiceError::McpOAuthNotConfigured => {
                Self::new(ErrorCode::McpOAuthNotConfigured, err.to_string())
            }
            ServiceError::TooManyAuthorizations => {
                Self::new(ErrorCode::TooManyAuthorizations, err.to_string())
            }
            ServiceError::FieldsNotAllowed(m) => Self::new(ErrorCode::FieldNotAllowed, m),
            ServiceError::UnknownAuthorization => Self::new(ErrorCode::InvalidState, err.to_string()),
            ServiceError::MissingAuthorizationCode => Self::new(ErrorCode::InvalidCallback, err.to_string()),
            ServiceError::ProviderRefused(m) => Self::new(ErrorCode::ProviderError, m),
            ServiceError::QuotaExceeded(m) => Self::new(ErrorCode::QuotaExceeded, m),
            ServiceError::OverBudget(refusal) => {
                let code = ErrorCode::parse(refusal.code()).unwrap_or(ErrorCode::BudgetExceeded);
                Self::new(code, refusal.to_string()).with_retry_after_wait(refusal.retry_after)
            }
            ServiceError::NotAdmin => Self::new(ErrorCode::AdminOnly, err.to_string()),
            ServiceError::UnpricedModel(_) => Self::new(ErrorCode::UnpricedModel, err.to_string()),
            ServiceError::Store(store) => Self::from_store(store),
            ServiceError::Internal => Self::internal(),
            ServiceError::Start { .. } | ServiceError::Refused(_) => {
                Self::internal().logged(FailureLog::Service(err.to_string()))
            }
        }
    }
}

/// How much of a client's own value an error message repeats. Enough to recognise it; a client that
/// sent a megabyte of nonsense does not get the megabyte back.
pub const PREVIEW_CHARS: usize = 64;

/// The longest message an error body carries, whatever produced it (serde explanations quote input).
pub const MAX_MESSAGE_CHARS: usize = 600;

/// A client-supplied value as an error message quotes it: debug-quoted and cut to a short prefix.
pub fn preview(value: &str) -> String {
    match value.char_indices().nth(PREVIEW_CHARS) {
        None => format!("{value:?}"),
        Some((cut, _)) => format!("{:?}... ({} bytes)", &value[..cut], value.len()),
    }
}

/// An id as a message names it: as sent when it is short, else its [`preview`].
fn short(id: &str) -> String {
    if id.chars().nth(PREVIEW_CHARS).is_none() && !id.chars().any(char::is_control) {
        id.to_owned()
    } else {
        preview(id)
    }
}

fn bounded(mut message: String) -> String {
    if let Some((cut, _)) = message.char_indices().nth(MAX_MESSAGE_CHARS) {
        message.truncate(cut);
        message.push_str("...");
    }
    message
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code,
                message: bounded(self.message),
                request_id: crate::observe::current_request_id(),
                trace_id: crate::observe::current_trace_id(),
            },
        };
        let mut response = (self.code.status(), Json(body)).into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, secs.into());
        }
        if self.code == ErrorCode::Unauthorized {
            // RFC 6750: a 401 names the scheme that gets in, so generic HTTP clients know to send a
            // bearer token.
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static(BEARER_CHALLENGE),
            );
        }
        if let Some(failure) = self.failure {
            response.extensions_mut().insert(failure);
        }
        response
    }
}

/// The `WWW-Authenticate` challenge of every 401.
pub const BEARER_CHALLENGE: &str = "Bearer realm=\"promptgate\"";

impl OperationOutput for ApiError {
    type Inner = ErrorBody;

    fn operation_response(ctx: &mut GenContext, operation: &mut Operation) -> Option<ApiResponse> {
        Json::<ErrorBody>::operation_response(ctx, operation)
    }

    fn inferred_responses(
        ctx: &mut GenContext,
        operation: &mut Operation,
    ) -> Vec<(Option<aide::openapi::StatusCode>, ApiResponse)> {
        match Self::operation_response(ctx, operation) {
            Some(mut res) => {
                res.description = "An error: `{\"error\": {\"code\", \"message\"}}`".into();
                vec![(None, res)]
            }
            None => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previews_keep_short_values_and_cut_long_ones() {
        assert_eq!(preview("Europe/Berlin"), "\"Europe/Berlin\"");
        let long = "x".repeat(900_000);
        let shown = preview(&long);
        assert!(shown.len() < 120, "{shown}");
        assert!(shown.contains("900000 bytes"), "{shown}");
        // Cutting respects character boundaries.
        assert!(preview(&"é".repeat(100)).starts_with("\"é"));
    }

    #[test]
    fn every_code_is_spelled_once_and_has_a_status() {
        let spelled: std::collections::HashSet<_> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(spelled.len(), ErrorCode::ALL.len(), "two codes share a spelling");
        for code in ErrorCode::ALL {
            assert_eq!(code.status().as_u16(), code.status_number(), "{code:?}");
            assert_eq!(serde_json::to_value(code).unwrap(), code.as_str());
        }
    }

    #[test]
    fn a_bare_status_gets_a_code_sent_with_that_status() {
        for status in [
            400, 401, 403, 404, 405, 408, 409, 413, 414, 415, 421, 422, 429, 431, 500, 503, 504,
        ] {
            let status = StatusCode::from_u16(status).unwrap();
            assert_eq!(ErrorCode::for_status(status).status(), status);
        }
        assert_eq!(
            ErrorCode::for_status(StatusCode::BAD_GATEWAY),
            ErrorCode::Internal
        );
        assert_eq!(
            ErrorCode::for_status(StatusCode::IM_A_TEAPOT),
            ErrorCode::InvalidRequest
        );
    }

    #[test]
    fn a_store_outage_is_retryable_and_left_for_the_log_to_say() {
        let err = ApiError::from(ServiceError::Store(StoreError::Unavailable(
            "pool timed out".into(),
        )));
        assert_eq!(err.code, ErrorCode::StoreUnavailable);
        assert_eq!(err.retry_after, Some(STORE_RETRY_AFTER_SECS));
        assert_eq!(
            err.failure,
            Some(FailureLog::StoreUnavailable("pool timed out".into()))
        );
        let response = err.into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(response.extensions().get::<FailureLog>().is_some());
        let refused = ApiError::from(ServiceError::Store(StoreError::Invalid("slug is empty".into())));
        assert_eq!((refused.code, refused.failure), (ErrorCode::InvalidBody, None));
    }

    #[test]
    fn a_wait_is_told_in_whole_seconds_rounded_up() {
        let wait = |ms| {
            ApiError::from(ServiceError::TooManyProbes(std::time::Duration::from_millis(ms))).retry_after
        };
        // A client told to wait one second where 1.8 are needed would be refused again.
        assert_eq!(wait(1_800), Some(2));
        assert_eq!(wait(3_000), Some(3));
        assert_eq!(wait(0), Some(1));
    }

    #[test]
    fn messages_are_bounded_whatever_produced_them() {
        let message = bounded("y".repeat(10_000));
        assert!(message.chars().count() <= MAX_MESSAGE_CHARS + 3);
    }
}
