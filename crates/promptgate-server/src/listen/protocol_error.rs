//! hyper answers a request it cannot parse (a malformed request line or header, a head larger than
//! it reads) on its own, before any of our code runs, with an empty body. Every error a client meets
//! must be our JSON, so the connection's socket recognises that canned answer as it is written and
//! sends ours in its place, with the same status.

use axum::body::Bytes;
use axum::http::StatusCode;
use serde_json::json;

use crate::error::ErrorCode;

/// Our answer in place of `written`, when `written` is hyper's canned answer to a request it could
/// not parse: an error status with an empty body and no content type, written while no request was
/// in progress on the connection (which the caller checks). Every answer of ours has a JSON body.
pub(super) fn replacement(written: &[u8]) -> Option<Bytes> {
    let head = written.strip_prefix(b"HTTP/1.1 ")?;
    let end = head.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&head[..end]).ok()?;
    let status = head.get(..3)?.parse::<u16>().ok()?;
    let status = StatusCode::from_u16(status).ok()?;
    if !status.is_client_error() {
        return None;
    }
    let mut empty = false;
    for line in head.lines().skip(1) {
        let (name, value) = line.split_once(':')?;
        let name = name.trim();
        if name.eq_ignore_ascii_case("content-type") {
            return None;
        }
        empty |= name.eq_ignore_ascii_case("content-length") && value.trim() == "0";
    }
    empty.then(|| answer(status))
}

fn answer(status: StatusCode) -> Bytes {
    let message = match status {
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => "the request head is larger than this server reads",
        StatusCode::URI_TOO_LONG => "the request target is longer than this server reads",
        _ => "the request is not valid HTTP/1.1 (its request line or a header is malformed)",
    };
    let request_id = uuid::Uuid::new_v4().to_string();
    let body = json!({"error": {
        "code": ErrorCode::for_status(status).as_str(),
        "message": message,
        "request_id": request_id,
    }})
    .to_string();
    let reason = status.canonical_reason().unwrap_or("Error");
    Bytes::from(format!(
        "HTTP/1.1 {} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         x-request-id: {request_id}\r\nconnection: close\r\n\r\n{body}",
        status.as_u16(),
        body.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_empty_error_answer_without_a_type_is_replaced() {
        let canned =
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\ndate: Thu, 01 Jan 2026 00:00:00 GMT\r\n\r\n";
        let ours = replacement(canned).unwrap();
        let text = String::from_utf8_lossy(&ours);
        assert!(text.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{text}");
        assert!(text.contains("\"code\":\"invalid_request\""), "{text}");
        let too_large = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\n\r\n";
        assert!(String::from_utf8_lossy(&replacement(too_large).unwrap()).contains("headers_too_large"));

        let json = b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 0\r\n\r\n";
        assert!(replacement(json).is_none());
        let with_body = b"HTTP/1.1 404 Not Found\r\ncontent-length: 12\r\n\r\n";
        assert!(replacement(with_body).is_none());
        let ok = b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n";
        assert!(replacement(ok).is_none());
        assert!(replacement(b"data: {}\n\n").is_none());
    }
}
