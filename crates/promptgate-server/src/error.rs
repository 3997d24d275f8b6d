//! The one place where failures become HTTP: `{"error": {"code", "message"}}` with the right status.

use aide::OperationOutput;
use aide::generate::GenContext;
use aide::openapi::{Operation, Response as ApiResponse};
use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use promptgate_store::StoreError;
use schemars::JsonSchema;
use serde::Serialize;

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
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    pub fn not_found(what: &str, id: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("{what} {id} does not exist"),
        )
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_body", message)
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

    /// Maps a store failure for a named kind of record (`thread`, `skill`, …).
    pub fn from_store(err: StoreError, what: &str, id: &str) -> Self {
        match err {
            StoreError::NotFound => Self::not_found(what, id),
            other => other.into(),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::NotFound => Self::new(StatusCode::NOT_FOUND, "not_found", "no such record"),
            StoreError::Conflict(m) => Self::conflict(m),
            StoreError::ReadOnly(m) => Self::new(StatusCode::FORBIDDEN, "read_only", m),
            StoreError::Invalid(m) => Self::invalid(m),
            other => {
                tracing::error!(error = %other, "store failure");
                crate::observe::store_error();
                Self::internal()
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code.to_owned(),
                message: self.message,
                request_id: crate::observe::current_request_id(),
            },
        };
        (self.status, Json(body)).into_response()
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
