//! Which fields of the upstream request a user may set (a model's `provider_options`) and a
//! caller of the OpenAI facade may pass through. The request goes out on the operator's key, so
//! only fields that shape the answer's sampling or format are open; what decides what is sent,
//! to which model, how many answers, how long they may be, or what the provider keeps or bills
//! (`model`, `messages`, `tools`, `n`, `max_tokens`, `store`, `service_tier`, ...) is the server's,
//! unless the operator allows a field for a provider (`allow_request_fields`).

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
}
