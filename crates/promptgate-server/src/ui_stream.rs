//! Which AI SDK release a UI message stream is written for. A frontend says its major in the
//! `X-Promptgate-UI-Stream` header (`v5`, `v6`, `v7`; the AI SDK's transport `headers` option
//! sets it); without the header the server's `[ui_stream] default` applies, itself `v5` unless
//! the operator knows every frontend runs a newer SDK. The version decides only which optional
//! fields travel (tool titles, `finish.finishReason`, `abort.reason`): the chunks are the same.

use axum::http::HeaderMap;
use promptgate_service::events::UiStreamVersion;
use serde::Deserialize;

use crate::error::{ApiError, ErrorCode};

/// The header a frontend names its AI SDK major in.
pub const UI_STREAM_HEADER: &str = "x-promptgate-ui-stream";

/// The `[ui_stream]` section.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UiStreamConfig {
    /// The version of a request without the header: `v5` (every release from 5.0.0), `v6` or `v7`.
    pub default: UiStreamVersion,
}

/// The version a request asks for, or the server's default; an unreadable header is refused, so
/// a misspelt value shows at once rather than as a stream without titles.
pub fn requested_version(headers: &HeaderMap, config: &UiStreamConfig) -> Result<UiStreamVersion, ApiError> {
    let Some(value) = headers.get(UI_STREAM_HEADER) else {
        return Ok(config.default);
    };
    value
        .to_str()
        .ok()
        .and_then(UiStreamVersion::parse)
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::InvalidHeader,
                "X-Promptgate-UI-Stream must be v5, v6 or v7: the AI SDK major the frontend runs",
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn the_header_wins_over_the_default_and_nonsense_is_refused() {
        let config = UiStreamConfig {
            default: UiStreamVersion::V6,
        };
        let mut headers = HeaderMap::new();
        assert_eq!(requested_version(&headers, &config).unwrap(), UiStreamVersion::V6);
        headers.insert(UI_STREAM_HEADER, HeaderValue::from_static("v7"));
        assert_eq!(requested_version(&headers, &config).unwrap(), UiStreamVersion::V7);
        headers.insert(UI_STREAM_HEADER, HeaderValue::from_static("7"));
        assert!(requested_version(&headers, &config).is_err());
    }
}
