//! Checks shared by several resources. Each returns a 422 that names the field.

use crate::error::ApiError;

/// A required, trimmed-non-empty string of bounded length.
pub fn required_text(field: &str, value: &str, max_chars: usize) -> Result<(), ApiError> {
    if value.trim().is_empty() {
        return Err(ApiError::invalid(format!("{field} must not be empty")));
    }
    bounded_text(field, value, max_chars)
}

pub fn bounded_text(field: &str, value: &str, max_chars: usize) -> Result<(), ApiError> {
    let len = value.chars().count();
    if len > max_chars {
        return Err(ApiError::invalid(format!(
            "{field} is {len} characters long; the limit is {max_chars}"
        )));
    }
    Ok(())
}

pub fn optional_text(field: &str, value: Option<&str>, max_chars: usize) -> Result<(), ApiError> {
    value.map_or(Ok(()), |v| bounded_text(field, v, max_chars))
}

/// Identifiers chosen by clients (thread ids from useChat, model ids): URL-safe and bounded.
pub fn client_id(field: &str, value: &str) -> Result<(), ApiError> {
    let ok = !value.is_empty()
        && value.len() <= 128
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
    if ok {
        Ok(())
    } else {
        Err(ApiError::invalid(format!(
            "{field} must be 1-128 characters of letters, digits, '-', '_' or '.'"
        )))
    }
}

/// Deep-merges `patch` into `base`: objects merge key by key, anything else replaces.
pub fn merge_json(base: &mut serde_json::Value, patch: serde_json::Value) {
    match (base, patch) {
        (serde_json::Value::Object(base), serde_json::Value::Object(patch)) => {
            for (key, value) in patch {
                match base.get_mut(&key) {
                    Some(slot) if slot.is_object() && value.is_object() => merge_json(slot, value),
                    _ => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (base, patch) => *base = patch,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn merge_keeps_untouched_keys_and_replaces_nested_ones() {
        let mut base = json!({"a": 1, "loc": {"name": "x", "lat": 1.0}, "n": null});
        merge_json(&mut base, json!({"loc": {"lat": 2.0}, "n": 3}));
        assert_eq!(base, json!({"a": 1, "loc": {"name": "x", "lat": 2.0}, "n": 3}));
    }

    #[test]
    fn client_ids_are_url_safe() {
        assert!(client_id("id", "chat_01-A.b").is_ok());
        assert!(client_id("id", "").is_err());
        assert!(client_id("id", "a/b").is_err());
        assert!(client_id("id", &"x".repeat(129)).is_err());
    }
}
