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

use crate::error::{ApiError, ErrorCode};

/// A JSON body. Malformed JSON is 400, a body of the wrong shape (wrong types, unknown fields or enum
/// values, or anything but an object) is 422 with serde's explanation, a content type other than
/// `application/json` is 415 and an oversized body 413.
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
        // Every documented body is an object; serde's derive would also take an array of the fields
        // in order, which no client means to send.
        if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Err(not_an_object(&body));
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

/// `application/json`, optionally with `charset=utf-8`: JSON has no other charset, and the `+json`
/// family (`json-patch+json`, ...) carries meanings these endpoints do not implement.
fn is_json(headers: &HeaderMap) -> bool {
    let Some(kind) = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let mut parts = kind.split(';');
    let essence = parts.next().unwrap_or_default().trim();
    if !essence.eq_ignore_ascii_case("application/json") {
        return false;
    }
    parts.all(|param| {
        let param = param.trim();
        param.is_empty()
            || param.split_once('=').is_some_and(|(name, value)| {
                name.trim().eq_ignore_ascii_case("charset")
                    && value.trim().trim_matches('"').eq_ignore_ascii_case("utf-8")
            })
    })
}

fn not_an_object(body: &[u8]) -> ApiError {
    match serde_json::from_slice::<serde::de::IgnoredAny>(body) {
        Ok(_) => ApiError::invalid("the body must be a JSON object"),
        Err(e) => ApiError::new(
            ErrorCode::MalformedJson,
            format!("the body is not valid JSON: {e}"),
        ),
    }
}

fn not_json() -> ApiError {
    ApiError::new(
        ErrorCode::UnsupportedMediaType,
        "send the body as JSON with `Content-Type: application/json`",
    )
}

fn too_large() -> ApiError {
    ApiError::new(
        ErrorCode::PayloadTooLarge,
        "the request body is larger than this server accepts (limits.body_bytes)",
    )
}

fn body_rejection(rejection: BytesRejection) -> ApiError {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        too_large()
    } else if body_timed_out(&rejection) {
        ApiError::new(
            ErrorCode::RequestTimeout,
            "the request body stopped arriving (server.body_timeout_secs)",
        )
    } else {
        ApiError::new(ErrorCode::InvalidRequest, rejection.body_text())
    }
}

fn body_timed_out(rejection: &BytesRejection) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(rejection);
    while let Some(error) = cause {
        if error.is::<tower_http::timeout::TimeoutError>() {
            return true;
        }
        cause = error.source();
    }
    false
}

fn json_rejection(rejection: JsonRejection) -> ApiError {
    match rejection {
        JsonRejection::JsonDataError(e) => ApiError::invalid(
            e.body_text()
                .replace("Failed to deserialize the JSON body into the target type: ", ""),
        ),
        JsonRejection::JsonSyntaxError(e) => ApiError::new(
            ErrorCode::MalformedJson,
            e.body_text().replace(
                "Failed to parse the request body as JSON: ",
                "the body is not valid JSON: ",
            ),
        ),
        JsonRejection::MissingJsonContentType(_) => not_json(),
        other if other.status() == StatusCode::PAYLOAD_TOO_LARGE => too_large(),
        other => ApiError::new(ErrorCode::InvalidRequest, other.body_text()),
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
    ApiError::new(
        ErrorCode::InvalidQuery,
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

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn typed(kind: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
        headers
    }

    #[test]
    fn only_plain_json_with_an_optional_utf8_charset_is_json() {
        for ok in [
            "application/json",
            "Application/JSON",
            "application/json; charset=utf-8",
            "application/json;charset=\"UTF-8\"",
        ] {
            assert!(is_json(&typed(ok)), "{ok}");
        }
        for refused in [
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/json; charset=latin1",
            "application/json; boundary=x",
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
        ] {
            assert!(!is_json(&typed(refused)), "{refused}");
        }
        assert!(!is_json(&HeaderMap::new()));
    }
}
