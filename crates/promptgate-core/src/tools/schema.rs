//! Turning argument structs into the JSON Schema an OpenAI-compatible upstream accepts, and parsing a
//! model's arguments back through the same structs.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::Error;

/// The schema of `T` as a self-contained object: no `$ref`/`$defs`, no `$schema`, `type: object` at the
/// top, optional properties described without `null` (the model should omit them, not send null), and
/// Rust-specific `format`s (`uint32`, …) dropped because upstreams only know the standard ones.
pub fn schema_of<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft07()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    if let Some(top) = value.as_object_mut() {
        top.remove("title");
        top.remove("description");
        top.remove("$schema");
        top.remove("definitions");
        top.insert("type".to_owned(), Value::String("object".to_owned()));
        top.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
    }
    drop_nulls_from_optional_properties(&mut value);
    tidy_keywords(&mut value);
    value
}

/// Marks `field` as required, for fields the model must send although the parser tolerates their
/// absence (`#[serde(default)]` makes the derived schema call them optional). Use as a container
/// `#[schemars(transform = ...)]` helper.
pub(crate) fn require_field(schema: &mut schemars::Schema, field: &str) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::Object(prop)) = obj.get_mut("properties").and_then(|p| p.get_mut(field)) {
        prop.remove("default");
    }
    let required = obj.entry("required").or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(list) = required
        && !list.iter().any(|v| v == field)
    {
        list.push(Value::String(field.to_owned()));
    }
}

/// Parses a model's arguments for `tool`. `null` (some models send no arguments at all) counts as `{}`.
pub fn parse_args<T: DeserializeOwned>(tool: &str, input: &Value) -> Result<T, Error> {
    let empty = Value::Object(Map::new());
    let input = if input.is_null() { &empty } else { input };
    T::deserialize(input).map_err(|e| Error::InvalidToolArguments {
        tool: tool.to_owned(),
        reason: e.to_string(),
    })
}

fn drop_nulls_from_optional_properties(schema: &mut Value) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    let required: Vec<String> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    let Some(props) = obj.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    for (name, prop) in props.iter_mut() {
        if !required.contains(name) {
            strip_null_alternative(prop);
        }
    }
}

fn strip_null_alternative(prop: &mut Value) {
    let Some(obj) = prop.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(types)) = obj.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let single = types.remove(0);
            obj.insert("type".to_owned(), single);
        }
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(alternatives)) = obj.get_mut(key) else {
            continue;
        };
        alternatives.retain(|alt| alt.get("type").and_then(Value::as_str) != Some("null"));
        if alternatives.len() == 1
            && let Some(Value::Object(only)) = alternatives.pop()
        {
            obj.remove(key);
            for (k, v) in only {
                obj.entry(k).or_insert(v);
            }
        }
    }
}

/// Drops `default: null` (absence already says it), Rust-specific formats, and the hard line breaks
/// doc comments put inside paragraphs of descriptions.
fn tidy_keywords(schema: &mut Value) {
    match schema {
        Value::Object(obj) => {
            if obj.get("default").is_some_and(Value::is_null) {
                obj.remove("default");
            }
            if let Some(Value::String(description)) = obj.get_mut("description") {
                *description = unwrap_paragraphs(description);
            }
            let rust_specific = obj.get("format").and_then(Value::as_str).is_some_and(|f| {
                ["int", "uint", "float", "double"]
                    .iter()
                    .any(|p| f.starts_with(p))
            });
            if rust_specific {
                obj.remove("format");
            }
            obj.values_mut().for_each(tidy_keywords);
        }
        Value::Array(items) => items.iter_mut().for_each(tidy_keywords),
        _ => {}
    }
}

fn unwrap_paragraphs(text: &str) -> String {
    text.split("\n\n")
        .map(|para| para.split('\n').map(str::trim).collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n\n")
}
