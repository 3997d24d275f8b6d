//! Checks shared by several resources. Each returns a 422 that names the field.

use promptgate_core::ids::{CLIENT_ID, IdRule};

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

/// An identifier the client chose, by its kind's rule ([`promptgate_core::ids`]): the store holds
/// the same rule, so what passes here is never refused there in other words.
pub fn check_id(rule: IdRule, field: &str, value: &str) -> Result<(), ApiError> {
    rule.check(field, value)
        .map_err(|e| ApiError::invalid(e.to_string()))
}

/// A thread's or message's id ([`CLIENT_ID`]).
pub fn client_id(field: &str, value: &str) -> Result<(), ApiError> {
    check_id(CLIENT_ID, field, value)
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
}
