//! Request extractors whose rejections speak our JSON error format.

use aide::OperationInput;
use aide::generate::GenContext;
use aide::openapi::Operation;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// A JSON body. Malformed JSON is 400, a body of the wrong shape (wrong types, unknown fields or enum
/// values) is 422 with serde's explanation, a missing JSON content type is 415 and an oversized body 413.
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(value)) => Ok(Self(value)),
            Err(rejection) => Err(json_rejection(rejection)),
        }
    }
}

fn json_rejection(rejection: JsonRejection) -> ApiError {
    match rejection {
        JsonRejection::JsonDataError(e) => ApiError::invalid(
            e.body_text()
                .replace("Failed to deserialize the JSON body into the target type: ", ""),
        ),
        JsonRejection::JsonSyntaxError(e) => ApiError::bad_request(
            "malformed_json",
            e.body_text().replace(
                "Failed to parse the request body as JSON: ",
                "the body is not valid JSON: ",
            ),
        ),
        JsonRejection::MissingJsonContentType(_) => ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "send the body as JSON with `Content-Type: application/json`",
        ),
        other if other.status() == StatusCode::PAYLOAD_TOO_LARGE => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            "the request body is larger than this server accepts (limits.body_bytes)",
        ),
        other => ApiError::bad_request("invalid_request", other.body_text()),
    }
}

impl<T: JsonSchema> OperationInput for ApiJson<T> {
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        axum::Json::<T>::operation_input(ctx, operation);
    }
}

/// Query parameters, rejected as 400 `invalid_query` with the reason.
pub struct ApiQuery<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiQuery<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(value)) => Ok(Self(value)),
            Err(rejection) => Err(query_rejection(rejection)),
        }
    }
}

fn query_rejection(rejection: QueryRejection) -> ApiError {
    ApiError::bad_request(
        "invalid_query",
        rejection
            .body_text()
            .replace("Failed to deserialize query string: ", "invalid query string: "),
    )
}

impl<T: JsonSchema> OperationInput for ApiQuery<T> {
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        axum::extract::Query::<T>::operation_input(ctx, operation);
    }
}
