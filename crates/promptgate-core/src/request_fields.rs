//! Which fields of the upstream request a user may set (a model's `provider_options`) and a
//! caller of the OpenAI facade may pass through. The request goes out on the operator's key, so
//! only fields that shape the answer's sampling or format are open; what decides what is sent,
//! to which model, how many answers, how long they may be, or what the provider keeps or bills
//! (`model`, `messages`, `tools`, `n`, `max_tokens`, `store`, `service_tier`, ...) is the server's,
//! unless the operator allows a field for a provider (`allow_request_fields`).

use serde_json::Value;

/// Open to users and facade callers on every provider.
pub const OPEN_FIELDS: [&str; 15] = [
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "frequency_penalty",
    "presence_penalty",
    "repetition_penalty",
    "stop",
    "stop_sequences",
    "seed",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "response_format",
    "user",
];

/// The fields of `fields` neither open nor allowed by the operator, in order.
pub fn refused_fields<'a>(fields: impl IntoIterator<Item = &'a str>, allowed: &[String]) -> Vec<&'a str> {
    fields
        .into_iter()
        .filter(|field| !OPEN_FIELDS.contains(field) && !allowed.iter().any(|a| a == field))
        .collect()
}

/// Why `refused` cannot be set, and what can be.
pub fn refusal_message(refused: &[&str], allowed: &[String]) -> String {
    let mut open: Vec<&str> = OPEN_FIELDS.to_vec();
    open.extend(allowed.iter().map(String::as_str));
    format!(
        "these request fields are decided by the server and cannot be set here: {}; the fields you may set \
         are {} (the operator can allow more with allow_request_fields on the provider)",
        refused.join(", "),
        open.join(", ")
    )
}

/// What is wrong with `value` as the open field `field`, in the words of an error for the caller;
/// `None` when a provider can read it. The checks are the types every OpenAI-compatible provider
/// reads and the ranges OpenAI documents, so that a caller's slip is answered as the caller's
/// rather than as the provider's refusal of the gateway's request. `null` leaves the provider's
/// default. A field the operator opened (`allow_request_fields`) is the operator's to vouch for.
pub fn value_problem(field: &str, value: &Value) -> Option<String> {
    if value.is_null() {
        return None;
    }
    let number_in = |low: f64, high: f64| match value.as_f64() {
        Some(n) if (low..=high).contains(&n) => None,
        _ => Some(format!("must be a number from {low} to {high}")),
    };
    let strings = |items: &[Value]| items.iter().all(Value::is_string);
    match field {
        "temperature" => number_in(0.0, 2.0),
        "top_p" | "min_p" => number_in(0.0, 1.0),
        "frequency_penalty" | "presence_penalty" => number_in(-2.0, 2.0),
        "repetition_penalty" => match value.as_f64() {
            Some(n) if n > 0.0 => None,
            _ => Some("must be a number above 0".to_owned()),
        },
        // -1 is how several servers (vLLM, llama.cpp) say "no top-k".
        "top_k" => match value.as_i64() {
            Some(k) if k >= -1 => None,
            _ => Some("must be a whole number, -1 or more".to_owned()),
        },
        "seed" => (!value.is_i64() && !value.is_u64()).then(|| "must be a whole number".to_owned()),
        "top_logprobs" => match value.as_u64() {
            Some(n) if n <= 20 => None,
            _ => Some("must be a whole number from 0 to 20".to_owned()),
        },
        "logprobs" => (!value.is_boolean()).then(|| "must be true or false".to_owned()),
        "user" => (!value.is_string()).then(|| "must be a string".to_owned()),
        "stop" => match value {
            Value::String(_) => None,
            Value::Array(items) if strings(items) => None,
            _ => Some("must be a string or a list of strings".to_owned()),
        },
        "stop_sequences" => match value {
            Value::Array(items) if strings(items) => None,
            _ => Some("must be a list of strings".to_owned()),
        },
        "logit_bias" => match value {
            Value::Object(biases)
                if biases
                    .values()
                    .all(|b| b.as_f64().is_some_and(|b| (-100.0..=100.0).contains(&b))) =>
            {
                None
            }
            _ => Some("must map token ids to numbers from -100 to 100".to_owned()),
        },
        "response_format" => match value.get("type") {
            Some(Value::String(_)) => None,
            _ => Some("must be an object with a string `type`".to_owned()),
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_is_open_the_rest_only_when_the_operator_allows_it() {
        let asked = [
            "temperature",
            "model",
            "max_tokens",
            "seed",
            "store",
            "n",
            "service_tier",
        ];
        assert_eq!(
            refused_fields(asked, &[]),
            ["model", "max_tokens", "store", "n", "service_tier"]
        );
        assert_eq!(
            refused_fields(asked, &["max_tokens".to_owned(), "store".to_owned()]),
            ["model", "n", "service_tier"]
        );
        let message = refusal_message(&["max_tokens"], &["store".to_owned()]);
        assert!(message.contains("cannot be set here: max_tokens;"), "{message}");
        assert!(message.contains("user, store (the operator"), "{message}");
    }

    #[test]
    fn an_open_field_with_a_value_no_provider_reads_is_named_with_what_it_takes() {
        use serde_json::json;
        let readable = [
            ("temperature", json!(0.7)),
            ("temperature", json!(2)),
            ("top_p", json!(1)),
            ("top_k", json!(-1)),
            ("seed", json!(42)),
            ("stop", json!("END")),
            ("stop", json!(["a", "b"])),
            ("stop_sequences", json!(["a"])),
            ("logit_bias", json!({"50256": -100, "11": 2.5})),
            ("logprobs", json!(true)),
            ("top_logprobs", json!(5)),
            ("response_format", json!({"type": "json_object"})),
            ("user", json!("u-1")),
            ("temperature", Value::Null),
            ("an_operator_field", json!({"anything": true})),
        ];
        for (field, value) in readable {
            assert_eq!(value_problem(field, &value), None, "{field} = {value}");
        }
        let unreadable = [
            ("temperature", json!(3), "from 0 to 2"),
            ("temperature", json!("hot"), "a number"),
            ("top_p", json!(-0.1), "from 0 to 1"),
            ("presence_penalty", json!(2.5), "from -2 to 2"),
            ("repetition_penalty", json!(0), "above 0"),
            ("top_k", json!(1.5), "whole number"),
            ("seed", json!("42"), "whole number"),
            ("stop", json!([1, 2]), "list of strings"),
            ("stop_sequences", json!("END"), "list of strings"),
            ("logit_bias", json!({"50256": 101}), "-100 to 100"),
            ("logit_bias", json!([1]), "token ids"),
            ("logprobs", json!(1), "true or false"),
            ("top_logprobs", json!(21), "0 to 20"),
            ("response_format", json!("json"), "string `type`"),
            ("user", json!(7), "a string"),
        ];
        for (field, value, says) in unreadable {
            let problem = value_problem(field, &value).unwrap_or_default();
            assert!(problem.contains(says), "{field} = {value}: {problem:?}");
        }
    }
}
