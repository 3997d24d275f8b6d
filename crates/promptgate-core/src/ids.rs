//! The rules for identifiers a client chooses, one per kind, so that the handler checking a request
//! and the store writing the row refuse the same values with the same words.

use crate::error::Error;

/// What one kind of identifier may be: 1 to `max` ASCII letters, digits or bytes of `extra`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdRule {
    max: usize,
    extra: &'static [u8],
}

/// Threads, messages and users: a path segment of the API, `[A-Za-z0-9_-]{1,128}`. A thread's id is
/// the `id` useChat sends, whose generated ids are letters and digits.
pub const CLIENT_ID: IdRule = IdRule {
    max: 128,
    extra: b"_-",
};

/// Models: they often repeat an upstream model's name (`gpt-4.1`, `llama3:8b`, `org/model`), so
/// `[A-Za-z0-9._:/-]{1,128}`.
pub const MODEL_ID: IdRule = IdRule {
    max: 128,
    extra: b"._:/-",
};

/// Skill slugs, typed after a `/` in a message: `[A-Za-z0-9_-]{1,64}`.
pub const SKILL_SLUG: IdRule = IdRule {
    max: 64,
    extra: b"_-",
};

impl IdRule {
    /// Whether `value` follows the rule.
    pub fn allows(&self, value: &str) -> bool {
        !value.is_empty()
            && value.len() <= self.max
            && value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || self.extra.contains(&b))
    }

    /// `value` if it follows the rule; else the refusal, naming `what` (a field, or a kind of record).
    pub fn check(&self, what: &str, value: &str) -> Result<(), Error> {
        if self.allows(value) {
            return Ok(());
        }
        let extra: Vec<String> = self
            .extra
            .iter()
            .map(|b| format!("'{}'", char::from(*b)))
            .collect();
        Err(Error::InvalidId {
            what: what.to_owned(),
            rule: format!(
                "1 to {} characters of A-Z, a-z, 0-9, {}",
                self.max,
                extra.join(", ")
            ),
        })
    }
}
