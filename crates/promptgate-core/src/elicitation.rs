//! MCP elicitation: the bounds a server's question must keep before a user sees it, and the check
//! of the user's answer against the form the server asked for.
//!
//! An MCP server chooses everything in an `elicitation/create` request, so each piece is bounded
//! here: a request over a bound is declined without showing anything. The spec allows only a flat
//! object of primitive fields (string, number, integer, boolean, single and multiple choice), and
//! an answer is held to exactly that form, so the server receives what it asked for or nothing.

use regex::RegexBuilder;
use serde_json::{Map, Value};

/// Longest message a server may show the user, in characters.
pub const MAX_MESSAGE_CHARS: usize = 2_000;
/// Most fields one form may have.
pub const MAX_FIELDS: usize = 20;
/// Largest requested schema, as JSON text.
pub const MAX_SCHEMA_BYTES: usize = 16 * 1024;
/// Longest URL a URL-mode request may send the user to.
pub const MAX_URL_CHARS: usize = 2_048;
/// Most options a choice field may offer.
pub const MAX_OPTIONS: usize = 100;
/// Longest text the user may give one string field, whatever the form allows.
pub const MAX_ANSWER_CHARS: usize = 10_000;
/// Largest compiled `pattern` of a string field.
const MAX_PATTERN_BYTES: usize = 64 * 1024;

/// Checks the message a server asks with.
pub fn check_message(message: &str) -> Result<(), String> {
    let chars = message.chars().count();
    at_most("the message", chars, "characters", MAX_MESSAGE_CHARS, "shown")
}

/// Refuses a `count` over `max`: "`what` has `count` `unit`; at most `max` are `verb`".
fn at_most(what: &str, count: usize, unit: &str, max: usize, verb: &str) -> Result<(), String> {
    if count > max {
        return Err(format!("{what} has {count} {unit}; at most {max} are {verb}"));
    }
    Ok(())
}

/// Checks a form-mode request's schema: a flat object of primitive fields, within the bounds.
pub fn check_form(schema: &Value) -> Result<(), String> {
    let size = schema.to_string().len();
    at_most("the form's schema", size, "bytes", MAX_SCHEMA_BYTES, "accepted")?;
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err("the form's schema is not of type object".into());
    }
    let properties = fields(schema)?;
    at_most("the form", properties.len(), "fields", MAX_FIELDS, "shown")?;
    for (name, field) in properties {
        check_field(field).map_err(|why| format!("field {name:?}: {why}"))?;
    }
    for name in required(schema) {
        if !properties.contains_key(name) {
            return Err(format!("field {name:?} is required but not described"));
        }
    }
    Ok(())
}

/// Checks a URL-mode request's URL: http or https, with a host, within the length bound.
pub fn check_url(url: &str) -> Result<(), String> {
    let chars = url.chars().count();
    at_most("the URL", chars, "characters", MAX_URL_CHARS, "shown")?;
    let parsed = url::Url::parse(url).map_err(|_| "the URL does not parse".to_owned())?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err("the URL is neither http nor https".into());
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err("the URL names no host".into());
    }
    Ok(())
}

/// Checks an accepted answer against the form it answers: only the form's fields, every required
/// one, each of its kind and within its limits. The error names the field and what is wrong.
pub fn check_answer(schema: &Value, content: &Value) -> Result<(), String> {
    let Some(answer) = content.as_object() else {
        return Err("content must be an object of the form's fields".into());
    };
    let properties = fields(schema)?;
    for name in answer.keys() {
        if !properties.contains_key(name) {
            return Err(format!("{name:?} is not a field of this form"));
        }
    }
    for name in required(schema) {
        if !answer.contains_key(name) {
            return Err(format!("{name:?} is required"));
        }
    }
    for (name, value) in answer {
        let field = &properties[name];
        check_value(field, value).map_err(|why| format!("{name:?} {why}"))?;
    }
    Ok(())
}

fn fields(schema: &Value) -> Result<&Map<String, Value>, String> {
    match schema.get("properties") {
        None => Err("the form's schema has no properties".into()),
        Some(Value::Object(properties)) => Ok(properties),
        Some(_) => Err("the form's properties are not an object".into()),
    }
}

fn required(schema: &Value) -> impl Iterator<Item = &str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

fn kind(field: &Value) -> Option<&str> {
    field.get("type").and_then(Value::as_str)
}

/// The values a choice field offers: `enum`, or the `const`s of `oneOf`/`anyOf` (titled choices).
fn options(field: &Value) -> Option<Vec<&str>> {
    if let Some(values) = field.get("enum").and_then(Value::as_array) {
        return Some(values.iter().filter_map(Value::as_str).collect());
    }
    let titled = field
        .get("oneOf")
        .or_else(|| field.get("anyOf"))
        .and_then(Value::as_array)?;
    Some(
        titled
            .iter()
            .filter_map(|choice| choice.get("const").and_then(Value::as_str))
            .collect(),
    )
}

fn check_field(field: &Value) -> Result<(), String> {
    match kind(field) {
        Some("string") => {
            if let Some(pattern) = field.get("pattern").and_then(Value::as_str) {
                compile(pattern)?;
            }
            check_options(field)
        }
        Some("number" | "integer" | "boolean") => Ok(()),
        Some("array") => match field.get("items") {
            Some(items) if options(items).is_some() => check_options(items),
            _ => Err("a list field must offer its choices (items with enum or anyOf)".into()),
        },
        Some(other) => Err(format!("type {other:?} is not a primitive the form can show")),
        None => Err("no type".into()),
    }
}

fn check_options(field: &Value) -> Result<(), String> {
    match options(field) {
        Some(options) if options.is_empty() => Err("a choice offers no options".into()),
        Some(options) if options.len() > MAX_OPTIONS => Err(format!(
            "a choice offers {} options; at most {MAX_OPTIONS} are shown",
            options.len()
        )),
        _ => Ok(()),
    }
}

fn compile(pattern: &str) -> Result<regex::Regex, String> {
    RegexBuilder::new(pattern)
        .size_limit(MAX_PATTERN_BYTES)
        .build()
        .map_err(|_| "its pattern is not a usable regular expression".to_owned())
}

fn check_value(field: &Value, value: &Value) -> Result<(), String> {
    match kind(field) {
        Some("string") => check_text(field, value),
        Some("number") => {
            let number = value.as_f64().ok_or("must be a number")?;
            check_range(field, number)
        }
        Some("integer") => {
            let whole = value.as_i64().is_some() || value.as_u64().is_some();
            if !whole {
                return Err("must be a whole number".into());
            }
            check_range(field, value.as_f64().unwrap_or_default())
        }
        Some("boolean") if value.is_boolean() => Ok(()),
        Some("boolean") => Err("must be true or false".into()),
        Some("array") => check_choices(field, value),
        _ => Err("has a type the form cannot hold".into()),
    }
}

fn check_text(field: &Value, value: &Value) -> Result<(), String> {
    let text = value.as_str().ok_or("must be text")?;
    let chars = text.chars().count();
    if chars > MAX_ANSWER_CHARS {
        return Err(format!("is longer than {MAX_ANSWER_CHARS} characters"));
    }
    if let Some(options) = options(field)
        && !options.contains(&text)
    {
        return Err(format!("must be one of {}", options.join(", ")));
    }
    check_bounds(
        field,
        chars as u64,
        Value::as_u64,
        ["minLength", "maxLength"],
        ["must have at least", "must have at most", " characters"],
    )?;
    if let Some(pattern) = field.get("pattern").and_then(Value::as_str)
        && !compile(pattern)?.is_match(text)
    {
        return Err(format!("must match the pattern {pattern}"));
    }
    if field.get("format").and_then(Value::as_str) == Some("email") && !looks_like_email(text) {
        return Err("must be an email address".into());
    }
    Ok(())
}

fn looks_like_email(text: &str) -> bool {
    text.split_once('@')
        .is_some_and(|(local, domain)| !local.is_empty() && domain.contains('.') && !text.contains(' '))
}

fn check_range(field: &Value, number: f64) -> Result<(), String> {
    check_bounds(
        field,
        number,
        Value::as_f64,
        ["minimum", "maximum"],
        ["must be at least", "must be at most", ""],
    )
}

/// Refuses `value` outside the bounds the field sets under `min_key` and `max_key` (read with
/// `read`), saying "`least` min`unit`" or "`most` max`unit`". Text lengths, numbers and choice
/// counts are bounded alike.
fn check_bounds<T: PartialOrd + std::fmt::Display>(
    field: &Value,
    value: T,
    read: fn(&Value) -> Option<T>,
    [min_key, max_key]: [&str; 2],
    [least, most, unit]: [&str; 3],
) -> Result<(), String> {
    if let Some(min) = field.get(min_key).and_then(read)
        && value < min
    {
        return Err(format!("{least} {min}{unit}"));
    }
    if let Some(max) = field.get(max_key).and_then(read)
        && value > max
    {
        return Err(format!("{most} {max}{unit}"));
    }
    Ok(())
}

fn check_choices(field: &Value, value: &Value) -> Result<(), String> {
    let chosen = value.as_array().ok_or("must be a list of choices")?;
    let offered = field.get("items").and_then(options).unwrap_or_default();
    // Each choice once: the list is then no longer than what was offered, however long it was sent.
    let mut seen = std::collections::HashSet::new();
    for choice in chosen {
        let Some(choice) = choice.as_str().filter(|c| offered.contains(c)) else {
            return Err(format!("may only hold {}", offered.join(", ")));
        };
        if !seen.insert(choice) {
            return Err(format!("holds {choice} more than once"));
        }
    }
    check_bounds(
        field,
        chosen.len() as u64,
        Value::as_u64,
        ["minItems", "maxItems"],
        ["needs at least", "allows at most", " choices"],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn booking() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 40},
                "guests": {"type": "integer", "minimum": 1, "maximum": 12},
                "vegetarian": {"type": "boolean"},
                "seating": {"type": "string", "enum": ["inside", "terrace"]},
                "extras": {"type": "array", "items": {"type": "string", "enum": ["cake", "wine"]}}
            },
            "required": ["name", "guests"]
        })
    }

    #[test]
    fn a_flat_form_is_shown_and_a_nested_or_oversized_one_is_not() {
        assert_eq!(check_form(&booking()), Ok(()));
        let nested = json!({"type": "object", "properties": {"address": {"type": "object"}}});
        assert!(check_form(&nested).unwrap_err().contains("address"));
        let many: Map<String, Value> = (0..=MAX_FIELDS)
            .map(|i| (format!("f{i}"), json!({"type": "string"})))
            .collect();
        let wide = json!({"type": "object", "properties": many});
        assert!(check_form(&wide).unwrap_err().contains("fields"));
        let unknown_required = json!({"type": "object", "properties": {}, "required": ["x"]});
        assert!(check_form(&unknown_required).is_err());
    }

    #[test]
    fn only_http_urls_of_bounded_length_are_shown() {
        assert_eq!(check_url("https://example.com/connect?id=1"), Ok(()));
        assert!(check_url("javascript:alert(1)").is_err());
        assert!(check_url("file:///etc/passwd").is_err());
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_CHARS));
        assert!(check_url(&long).is_err());
        assert!(check_message(&"x".repeat(MAX_MESSAGE_CHARS + 1)).is_err());
    }

    #[test]
    fn an_answer_must_fit_the_form() {
        let form = booking();
        let good = json!({"name": "Ada", "guests": 4, "seating": "terrace", "extras": ["cake"]});
        assert_eq!(check_answer(&form, &good), Ok(()));
        let cases = [
            (json!({"guests": 2}), "\"name\" is required"),
            (json!({"name": "Ada", "guests": 2.5}), "whole number"),
            (json!({"name": "Ada", "guests": 20}), "at most 12"),
            (
                json!({"name": "Ada", "guests": 2, "seating": "roof"}),
                "one of inside, terrace",
            ),
            (
                json!({"name": "Ada", "guests": 2, "vegetarian": "yes"}),
                "true or false",
            ),
            (json!({"name": "Ada", "guests": 2, "pets": 1}), "not a field"),
            (json!({"name": "", "guests": 2}), "at least 1 characters"),
            (
                json!({"name": "Ada", "guests": 2, "extras": ["beer"]}),
                "may only hold",
            ),
            (
                json!({"name": "Ada", "guests": 2, "extras": vec!["cake"; 100_000]}),
                "holds cake more than once",
            ),
            (json!("Ada"), "must be an object"),
        ];
        for (answer, why) in cases {
            let error = check_answer(&form, &answer).unwrap_err();
            assert!(error.contains(why), "{answer}: {error}");
        }
    }

    #[test]
    fn titled_choices_and_patterns_are_held_to() {
        let form = json!({"type": "object", "properties": {
            "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
            "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "mail": {"type": "string", "format": "email"}
        }});
        assert_eq!(check_form(&form), Ok(()));
        assert_eq!(
            check_answer(&form, &json!({"size": "l", "code": "ABC", "mail": "a@b.io"})),
            Ok(())
        );
        assert!(check_answer(&form, &json!({"size": "m"})).is_err());
        assert!(check_answer(&form, &json!({"code": "abc"})).is_err());
        assert!(check_answer(&form, &json!({"mail": "nobody"})).is_err());
    }
}
