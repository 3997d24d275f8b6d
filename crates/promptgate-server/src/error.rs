//! The one place where failures become HTTP: `{"error": {"code", "message"}}` with the right status.

use aide::OperationOutput;
use aide::generate::GenContext;
use aide::openapi::{Operation, Response as ApiResponse};
use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use promptgate_service::ServiceError;
use schemars::JsonSchema;
use serde::Serialize;

/// What `Retry-After` suggests while the database is unavailable.
const STORE_RETRY_AFTER_SECS: u64 = 2;

/// The error body every endpoint returns.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ErrorDetail {
    /// Stable, machine-readable code such as `not_found` or `invalid_body`.
    pub code: String,
    /// A sentence for humans.
    pub message: String,
    /// The request's `x-request-id` (the client's, else one the server made up): quote it when
    /// reporting a problem, the server's log lines for the request carry it too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// Seconds after which the same request may succeed (`Retry-After`).
    pub retry_after: Option<u64>,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    /// Tells the client when to try again.
    pub fn with_retry_after(mut self, secs: u64) -> Self {
        self.retry_after = Some(secs);
        self
    }

    /// The database cannot be reached: retryable, unlike a server bug.
    pub fn store_unavailable() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "store_unavailable",
            "the database is unavailable right now; try again in a few seconds",
        )
        .with_retry_after(STORE_RETRY_AFTER_SECS)
    }

    pub fn not_found(what: &str, id: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("{what} {} does not exist", short(id)),
        )
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_body", message)
    }

    /// 422 `field_not_allowed` when `fields` of an upstream request are not the caller's to set.
    pub fn fields_allowed<'a>(
        fields: impl IntoIterator<Item = &'a str>,
        allowed: &[String],
    ) -> Result<(), Self> {
        promptgate_service::check_request_fields(fields, allowed).map_err(Self::from)
    }

    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "conflict", message)
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    pub fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "something went wrong on our side; the details are in the server log",
        )
    }
}

impl From<ServiceError> for ApiError {
    fn from(err: ServiceError) -> Self {
        match err {
            ServiceError::UnknownThread(id) => Self::not_found("thread", &id),
            ServiceError::UnknownModel(id) => Self::not_found("model", &id),
            ServiceError::NotFound { what, id } => Self::not_found(what, &id),
            ServiceError::ProviderMissing(_) => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "provider_unavailable",
                err.to_string(),
            ),
            ServiceError::Busy(_) => Self::new(StatusCode::CONFLICT, "turn_in_progress", err.to_string()),
            ServiceError::InvalidMessage(m) => Self::invalid(m),
            ServiceError::ToolNameClash(_) => Self::bad_request("tool_name_conflict", err.to_string()),
            ServiceError::Overloaded(_) => {
                Self::new(StatusCode::SERVICE_UNAVAILABLE, "overloaded", err.to_string())
            }
            ServiceError::UnknownTurn(_) => Self::new(StatusCode::NOT_FOUND, "unknown_turn", err.to_string()),
            ServiceError::RetryExpired(..) => {
                Self::new(StatusCode::CONFLICT, "retry_expired", err.to_string())
            }
            ServiceError::UnusableDefaultModel(model) => Self::invalid(format!(
                "default_model {} is not a model you can use",
                preview(&model)
            )),
            ServiceError::RefusedAddress(reason) => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "refused_address",
                format!(
                    "{reason}; this server does not connect there (see [mcp] allow_loopback, allow_private and allowed_addrs)"
                ),
            ),
            ServiceError::ConnectByAuthorizing(p) => Self::invalid(format!(
                "an integration is connected by authorizing it: GET /v1/integrations/{}/authorize",
                p.as_str()
            )),
            ServiceError::IntegrationNotConfigured(p) => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "integration_not_configured",
                format!(
                    "this server has no OAuth client for {}; see [integrations] in the configuration",
                    p.as_str()
                ),
            ),
            ServiceError::TooManyAuthorizations => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "too_many_authorizations",
                err.to_string(),
            ),
            ServiceError::UnknownAuthorization => Self::bad_request("invalid_state", err.to_string()),
            ServiceError::MissingAuthorizationCode => Self::bad_request("invalid_callback", err.to_string()),
            ServiceError::ProviderRefused(m) => Self::new(StatusCode::BAD_GATEWAY, "provider_error", m),
            ServiceError::NoSuchRecord => Self::new(StatusCode::NOT_FOUND, "not_found", "no such record"),
            ServiceError::Conflict(m) => Self::conflict(m),
            ServiceError::ReadOnly(m) => Self::new(StatusCode::FORBIDDEN, "read_only", m),
            ServiceError::Invalid(m) => Self::invalid(m),
            ServiceError::FieldsNotAllowed(m) => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, "field_not_allowed", m)
            }
            ServiceError::Unavailable(detail) => {
                tracing::warn!(error = %detail, "store unavailable");
                Self::store_unavailable()
            }
            ServiceError::Database(_) => {
                tracing::error!(error = %err, "store failure");
                Self::internal()
            }
            ServiceError::Internal => Self::internal(),
            ServiceError::Start { .. } | ServiceError::Refused(_) => {
                tracing::error!(error = %err, "service failure");
                Self::internal()
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

/// The machine-readable code for a bare HTTP status, for errors produced outside our handlers
/// (the router, timeouts, body limits, the connection layer).
pub fn code_for_status(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "invalid_request",
        401 => "unauthorized",
        403 => "forbidden",
        404 => "not_found",
        405 => "method_not_allowed",
        408 => "request_timeout",
        409 => "conflict",
        413 => "payload_too_large",
        414 => "uri_too_long",
        415 => "unsupported_media_type",
        421 => "misdirected_request",
        422 => "invalid_body",
        429 => "rate_limited",
        431 => "headers_too_large",
        503 => "unavailable",
        504 => "timeout",
        _ if status.is_server_error() => "internal",
        _ => "invalid_request",
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code.to_owned(),
                message: bounded(self.message),
                request_id: crate::observe::current_request_id(),
            },
        };
        let mut response = (self.status, Json(body)).into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, secs.into());
        }
        response
    }
}

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
    fn messages_are_bounded_whatever_produced_them() {
        let message = bounded("y".repeat(10_000));
        assert!(message.chars().count() <= MAX_MESSAGE_CHARS + 3);
    }
}
