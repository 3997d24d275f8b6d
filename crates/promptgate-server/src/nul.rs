//! U+0000 is refused at the door. Postgres cannot store it in text, SQLite would, so letting it in
//! would make the same request succeed or fail depending on the database; and no legitimate chat
//! text contains it.

use axum::http::Uri;

use crate::error::ApiError;

/// True when a JSON document holds U+0000 in a string: JSON can only spell it as the escape
/// `\u0000` (a raw control character is invalid JSON), and that escape counts only where its
/// backslash is not itself escaped.
pub fn json_has_nul(body: &[u8]) -> bool {
    let mut at = 0;
    while let Some(found) = memchr_backslash(&body[at..]) {
        let start = at + found;
        // A run of backslashes: pairs are escaped backslashes; an odd one starts an escape.
        let mut end = start;
        while end < body.len() && body[end] == b'\\' {
            end += 1;
        }
        if (end - start) % 2 == 1 && is_nul_escape(&body[end..]) {
            return true;
        }
        at = end.max(start + 1);
    }
    false
}

fn memchr_backslash(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\\')
}

/// `u0000`: the hex digits are all zeros, so their case does not matter.
fn is_nul_escape(rest: &[u8]) -> bool {
    rest.len() >= 5 && rest[0] == b'u' && rest[1..5] == *b"0000"
}

/// The error for text with U+0000 in it.
pub fn nul_refused(where_: &str) -> ApiError {
    ApiError::invalid(format!(
        "the {where_} contains the NUL character (U+0000), which this server does not accept"
    ))
}

/// The refusal of a request whose path or query spells U+0000 (`%00`), which no handler may see.
pub fn nul_in_uri(uri: &Uri) -> Option<ApiError> {
    let in_path = has_encoded_nul(uri.path());
    let in_query = uri.query().is_some_and(has_encoded_nul);
    (in_path || in_query).then(|| nul_refused(if in_path { "path" } else { "query string" }))
}

fn has_encoded_nul(text: &str) -> bool {
    text.as_bytes()
        .windows(3)
        .any(|w| w[0] == b'%' && w[1] == b'0' && w[2] == b'0')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nul_escape_is_found_only_where_it_is_an_escape() {
        assert!(json_has_nul(br#"{"a":"x\u0000y"}"#));
        assert!(json_has_nul(br#"{"a":"\\\u0000"}"#));
        assert!(!json_has_nul(br#"{"a":"\\u0000"}"#));
        assert!(!json_has_nul(br#""\u000"#));
        assert!(!json_has_nul(br#"{"a":"\u0001 \n"}"#));
        assert!(!json_has_nul(b"{}"));
    }

    #[test]
    fn an_encoded_nul_in_a_path_is_found() {
        assert!(has_encoded_nul("/v1/threads/a%00b"));
        assert!(!has_encoded_nul("/v1/threads/a%200b"));
    }
}
