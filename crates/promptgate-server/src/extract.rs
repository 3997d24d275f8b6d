//! Request extractors whose rejections speak our JSON error format.

use aide::OperationInput;
use aide::generate::GenContext;
use aide::openapi::Operation;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
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
        if !is_json(req.headers()) {
            return Err(not_json());
        }
        let body = Bytes::from_request(req, state).await.map_err(body_rejection)?;
        if crate::nul::json_has_nul(&body) {
            return Err(crate::nul::nul_refused("body"));
        }
        // Plain serde_json first: the path-tracking parser that names where a body went wrong
        // allocates for every key it passes, so it only runs when there is an error to explain.
        match serde_json::from_slice(&body) {
            Ok(value) => Ok(Self(value)),
            Err(_) => match axum::Json::<T>::from_bytes(&body) {
                Ok(axum::Json(value)) => Ok(Self(value)),
                Err(rejection) => Err(json_rejection(rejection)),
            },
        }
    }
}

/// `application/json` or a `+json` type such as `application/merge-patch+json`, as axum's own
/// extractor accepts.
fn is_json(headers: &HeaderMap) -> bool {
    let Some(kind) = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = kind.split(';').next().unwrap_or_default().trim();
    let Some((kind, sub)) = essence.split_once('/') else {
        return false;
    };
    let json_suffix = sub
        .len()
        .checked_sub(5)
        .and_then(|at| sub.get(at..))
        .is_some_and(|end| end.eq_ignore_ascii_case("+json"));
    kind.eq_ignore_ascii_case("application") && (sub.eq_ignore_ascii_case("json") || json_suffix)
}

fn not_json() -> ApiError {
    ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        "send the body as JSON with `Content-Type: application/json`",
    )
}

fn too_large() -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
        "the request body is larger than this server accepts (limits.body_bytes)",
    )
}

fn body_rejection(rejection: BytesRejection) -> ApiError {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        too_large()
    } else {
        ApiError::bad_request("invalid_request", rejection.body_text())
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
        JsonRejection::MissingJsonContentType(_) => not_json(),
        other if other.status() == StatusCode::PAYLOAD_TOO_LARGE => too_large(),
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
