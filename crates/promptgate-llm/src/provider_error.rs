//! Turning a provider's error payload into a short message fit to show a user.

use serde_json::Value;

use crate::LlmError;

/// Longest provider message passed on; providers sometimes send whole HTML pages.
const MAX_MESSAGE_CHARS: usize = 500;

/// The human part of an error body: `{"error":{"message"}}`, `{"error":"…"}`, `{"message"}` or
/// `{"detail"}`, whichever the provider used.
pub(crate) fn message_from_json(value: &Value) -> Option<String> {
    let error = value.get("error");
    let candidates = [
        error.and_then(|e| e.get("message")),
        error.filter(|e| e.is_string()),
        value.get("message"),
        value.get("detail"),
    ];
    candidates
        .into_iter()
        .flatten()
        .find_map(|v| v.as_str())
        .map(str::to_owned)
}

/// The start of a payload, for error messages.
pub(crate) fn preview(data: &str) -> &str {
    match data.char_indices().nth(200) {
        Some((cut, _)) => &data[..cut],
        None => data,
    }
}

/// The error a provider reported as a JSON payload (in a stream or as a body), with the status the
/// caller read for it; the whole payload, cut short, stands in for a message it does not have.
pub(crate) fn from_payload(status: u16, value: &Value) -> LlmError {
    let message = message_from_json(value).unwrap_or_else(|| preview(&value.to_string()).to_owned());
    refusal(status, Some(value), sanitise(&message, None))
}

/// A status code the provider put inside an in-stream error, when it gave one.
pub(crate) fn status_from_json(value: &Value) -> Option<u16> {
    let error = value.get("error")?;
    [error.get("code"), error.get("status")]
        .into_iter()
        .flatten()
        .find_map(|v| v.as_u64().or_else(|| v.as_str().and_then(|s| s.parse().ok())))
        .and_then(|n| u16::try_from(n).ok())
        .filter(|n| (400..600).contains(n))
}

/// The message for an error body that may or may not be JSON.
pub(crate) fn message_from_body(body: &[u8]) -> String {
    match serde_json::from_slice::<Value>(body)
        .ok()
        .as_ref()
        .and_then(message_from_json)
    {
        Some(message) => message,
        None => String::from_utf8_lossy(body).trim().to_owned(),
    }
}

/// The wait a refusing provider asked for (`Retry-After` in seconds, or Anthropic's and OpenAI's
/// millisecond variants), when it gave one.
pub(crate) fn retry_after(headers: &http::HeaderMap) -> Option<std::time::Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return (ms.is_finite() && ms >= 0.0).then(|| std::time::Duration::from_secs_f64(ms / 1000.0));
    }
    header("retry-after")
        .and_then(|v| v.parse::<u64>().ok())
        .map(std::time::Duration::from_secs)
}

/// How [`with_retry_after`] ends a message; [`retry_after_of`] reads it back.
const RETRY_AFTER_OPEN: &str = " (retry after ";
const RETRY_AFTER_CLOSE: &str = " s)";

/// The provider's message, with the wait it asked for so the log and the client can honour it.
pub(crate) fn with_retry_after(message: String, wait: Option<std::time::Duration>) -> String {
    match wait {
        Some(wait) => format!(
            "{message}{RETRY_AFTER_OPEN}{}{RETRY_AFTER_CLOSE}",
            wait.as_secs_f64().ceil() as u64
        ),
        None => message,
    }
}

/// The wait [`with_retry_after`] put at the end of a refusal's message, in whole seconds.
pub(crate) fn retry_after_of(message: &str) -> Option<std::time::Duration> {
    let (_, tail) = message.rsplit_once(RETRY_AFTER_OPEN)?;
    let secs = tail.strip_suffix(RETRY_AFTER_CLOSE)?.parse::<u64>().ok()?;
    Some(std::time::Duration::from_secs(secs))
}

/// Bounds the length, and removes the API key should the provider echo it back.
pub(crate) fn sanitise(message: &str, api_key: Option<&str>) -> String {
    let mut message = match api_key.filter(|k| !k.is_empty()) {
        Some(key) => message.replace(key, "[redacted]"),
        None => message.to_owned(),
    };
    if let Some((cut, _)) = message.char_indices().nth(MAX_MESSAGE_CHARS) {
        message.truncate(cut);
        message.push('…');
    }
    if message.is_empty() {
        message.push_str("no error message");
    }
    message
}

/// Words of a refusal that say the prompt is longer than the model's context window, as OpenAI,
/// Anthropic and the servers that copy them (vLLM, llama.cpp, LiteLLM) word it.
const TOO_LONG_WORDS: &[&str] = &[
    "context length",
    "context_length",
    "context window",
    "context size",
    "context limit",
    "prompt is too long",
    "prompt too long",
    "input is too long",
];

/// Error codes and types that say the same.
const TOO_LONG_CODES: &[&str] = &["context_length_exceeded", "request_too_large"];

/// The error for a provider's refusal (`status`, its JSON body or in-stream error `value` if it
/// had one, and its message already made fit to show): [`LlmError::ContextTooLong`] when it says
/// the prompt does not fit, else [`LlmError::Status`]. A rate limit is never one, even when it
/// counts tokens.
pub(crate) fn refusal(status: u16, value: Option<&Value>, message: String) -> LlmError {
    let error = value.and_then(|v| v.get("error"));
    let code = [
        error.and_then(|e| e.get("code")),
        error.and_then(|e| e.get("type")),
    ]
    .into_iter()
    .flatten()
    .filter_map(Value::as_str)
    .any(|code| TOO_LONG_CODES.contains(&code));
    let lower = message.to_lowercase();
    let worded = TOO_LONG_WORDS.iter().any(|words| lower.contains(words));
    if status != 429 && (code || worded) {
        LlmError::ContextTooLong(message)
    } else {
        LlmError::Status { status, message }
    }
}

#[cfg(test)]
mod retry_after_tests {
    use super::*;

    #[test]
    fn the_wait_written_into_a_message_reads_back() {
        let message = with_retry_after(
            "slow down".to_owned(),
            Some(std::time::Duration::from_millis(1500)),
        );
        assert_eq!(message, "slow down (retry after 2 s)");
        assert_eq!(retry_after_of(&message), Some(std::time::Duration::from_secs(2)));
        assert_eq!(retry_after_of("slow down"), None);
    }
}
