//! Cursor pagination of the list endpoints (`GET /v1/threads`, with or without `q`, and
//! `GET /v1/threads/{id}/messages`).
//!
//! The body stays the JSON array it always was, so clients written before pages keep reading it; the
//! next page is announced the way GitHub and many others do it, in a `Link: <…>; rel="next"` header
//! whose URL repeats the request with a `cursor`. The cursor is opaque to clients (hex of a tagged
//! key), and a cursor of one kind of list is refused by another.

use aide::OperationOutput;
use aide::generate::GenContext;
use aide::openapi::{
    Header, HeaderStyle, Operation, ParameterSchemaOrContent, ReferenceOr, Response as ApiResponse,
    SchemaObject, StatusCode as ApiStatus,
};
use axum::Json;
use axum::http::{HeaderValue, Uri, header};
use axum::response::{IntoResponse, Response};
use promptgate_service::records::ThreadsAfter;
use schemars::JsonSchema;
use serde::Serialize;

use crate::config::Limits;
use crate::error::{ApiError, ErrorCode};

/// Where the next page of a list starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cursor {
    /// The thread list: after this thread.
    Threads(ThreadsAfter),
    /// Search results: after this many.
    Skip(u32),
    /// A thread's messages: before this position.
    Before(i64),
}

impl Cursor {
    pub fn encode(&self) -> String {
        let text = match self {
            Cursor::Threads(after) => format!("t:{}:{}", after.updated_at, after.id),
            Cursor::Skip(skip) => format!("s:{skip}"),
            Cursor::Before(seq) => format!("m:{seq}"),
        };
        hex::encode(text)
    }

    pub fn decode(text: &str) -> Result<Cursor, ApiError> {
        let bad = || ApiError::new(ErrorCode::InvalidCursor, "cursor is not one this list handed out");
        let bytes = hex::decode(text).map_err(|_| bad())?;
        let text = String::from_utf8(bytes).map_err(|_| bad())?;
        let (kind, rest) = text.split_once(':').ok_or_else(bad)?;
        match kind {
            "t" => {
                let (at, id) = rest.split_once(':').ok_or_else(bad)?;
                Ok(Cursor::Threads(ThreadsAfter {
                    updated_at: at.parse().map_err(|_| bad())?,
                    id: id.to_owned(),
                }))
            }
            "s" => Ok(Cursor::Skip(rest.parse().map_err(|_| bad())?)),
            "m" => Ok(Cursor::Before(rest.parse().map_err(|_| bad())?)),
            _ => Err(bad()),
        }
    }
}

/// The cursor the request carries, if any, refused unless `accept` takes its kind.
pub fn cursor<T>(text: Option<&str>, accept: impl Fn(Cursor) -> Option<T>) -> Result<Option<T>, ApiError> {
    let Some(text) = text else { return Ok(None) };
    accept(Cursor::decode(text)?)
        .map(Some)
        .ok_or_else(|| ApiError::new(ErrorCode::InvalidCursor, "cursor belongs to another list"))
}

/// How many items the page holds: the request's `limit` lowered to `[limits] max_page_size`, else
/// `[limits] page_size`.
pub fn page_limit(limits: &Limits, asked: Option<u32>) -> Result<u32, ApiError> {
    match asked {
        Some(0) => Err(ApiError::new(ErrorCode::InvalidQuery, "limit must be at least 1")),
        Some(n) => Ok(n.min(limits.max_page_size)),
        None => Ok(limits.page_size),
    }
}

/// One page of a list: a JSON array, with a `Link` to the next page when there is one.
pub struct Paged<T> {
    pub items: Vec<T>,
    pub next: Option<String>,
}

impl<T> Paged<T> {
    /// `items`, with a link to the page after them at `next` (when the list goes on) built from the
    /// request's own URL.
    pub fn new(items: Vec<T>, uri: &Uri, next: Option<Cursor>) -> Self {
        Self {
            items,
            next: next.map(|cursor| next_link(uri, &cursor.encode())),
        }
    }
}

/// The request's path and query with `cursor` set to `cursor`, as a `Link` header value.
fn next_link(uri: &Uri, cursor: &str) -> String {
    let kept = url::form_urlencoded::parse(uri.query().unwrap_or_default().as_bytes())
        .filter(|(key, _)| key != "cursor");
    let query = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(kept)
        .append_pair("cursor", cursor)
        .finish();
    format!("<{}?{query}>; rel=\"next\"", uri.path())
}

impl<T: Serialize> IntoResponse for Paged<T> {
    fn into_response(self) -> Response {
        let mut response = Json(self.items).into_response();
        if let Some(link) = self.next.and_then(|link| HeaderValue::from_str(&link).ok()) {
            response.headers_mut().insert(header::LINK, link);
        }
        response
    }
}

impl<T: JsonSchema> OperationOutput for Paged<T> {
    type Inner = Vec<T>;

    fn operation_response(ctx: &mut GenContext, operation: &mut Operation) -> Option<ApiResponse> {
        let mut response = Json::<Vec<T>>::operation_response(ctx, operation)?;
        let schema = SchemaObject {
            json_schema: schemars::json_schema!({ "type": "string" }),
            external_docs: None,
            example: None,
        };
        response.headers.insert(
            "Link".into(),
            ReferenceOr::Item(Header {
                description: Some(
                    "`<URL>; rel=\"next\"`: the next page (the same request with a `cursor`); absent on the last page"
                        .into(),
                ),
                style: HeaderStyle::Simple,
                required: false,
                deprecated: None,
                format: ParameterSchemaOrContent::Schema(schema),
                example: None,
                examples: Default::default(),
                extensions: Default::default(),
            }),
        );
        Some(response)
    }

    fn inferred_responses(
        ctx: &mut GenContext,
        operation: &mut Operation,
    ) -> Vec<(Option<ApiStatus>, ApiResponse)> {
        crate::api_doc::answered_with(200, Self::operation_response(ctx, operation))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_read_back_as_written() {
        for cursor in [
            Cursor::Threads(ThreadsAfter {
                updated_at: 1_700_000_000_123,
                id: "t-1_a".to_owned(),
            }),
            Cursor::Skip(40),
            Cursor::Before(17),
        ] {
            assert_eq!(Cursor::decode(&cursor.encode()).ok(), Some(cursor));
        }
        for bad in [
            "",
            "zz",
            &hex::encode("x:1"),
            &hex::encode("s:-1"),
            &hex::encode("t:1"),
        ] {
            assert!(Cursor::decode(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_next_link_repeats_the_request_with_the_cursor() {
        let uri: Uri = "/v1/threads?q=rose%20garden&limit=2&cursor=old"
            .parse()
            .unwrap_or_default();
        assert_eq!(
            next_link(&uri, "abc"),
            "</v1/threads?q=rose+garden&limit=2&cursor=abc>; rel=\"next\""
        );
    }
}
