//! The harness signature: a harness built for one configuration is reused only while this string holds.

use std::fmt::Write as _;

/// How a harness reaches its model; the kinds differ in which fields identify it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HarnessKind {
    /// Native Anthropic: identified by model id and key only.
    Anthropic,
    /// Any OpenAI-compatible endpoint.
    OpenAiCompat,
    /// An attested confidential-computing endpoint; its vendor and client id take part.
    Confidential,
}

impl HarnessKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::OpenAiCompat => "openai-compat",
            Self::Confidential => "confidential",
        }
    }
}

/// The resolved model a harness talks to.
#[derive(Debug, Clone, Copy)]
pub struct HarnessModel<'a> {
    pub kind: HarnessKind,
    pub provider_id: &'a str,
    pub model_id: &'a str,
    pub vendor: Option<&'a str>,
    pub base_url: &'a str,
    /// Only its hash enters the signature.
    pub api_key: Option<&'a str>,
    pub reasoning: bool,
    pub context_window: Option<u64>,
    pub supports_images: bool,
    /// Identifier of the attested client instance (confidential endpoints only).
    pub client_id: Option<&'a str>,
}

/// Everything that, when changed, requires a fresh harness: the model's connection, the thinking level,
/// the stable prompt (so project instructions and language count) and the regeneration revision. Tools
/// and the transcript are left out on purpose, and so is the clock: the date lives in the volatile half.
pub fn harness_signature(
    model: &HarnessModel<'_>,
    thinking_level: &str,
    stable: &str,
    regeneration_revision: u32,
) -> String {
    let key_hash = fnv1a_base36(model.api_key.unwrap_or(""));
    let mut out = String::with_capacity(stable.len() + 160);
    out.push_str(model.kind.as_str());
    if model.kind == HarnessKind::Anthropic {
        let _ = write!(out, "|{}|{key_hash}", model.model_id);
    } else {
        let vendor = if model.kind == HarnessKind::Confidential {
            model.vendor.unwrap_or("")
        } else {
            ""
        };
        let _ = write!(
            out,
            "|{}|{}|{vendor}|{}|{key_hash}|{}|",
            model.provider_id, model.model_id, model.base_url, model.reasoning
        );
        if let Some(window) = model.context_window {
            let _ = write!(out, "{window}");
        }
        let _ = write!(
            out,
            "|{}|{}",
            model.supports_images,
            model.client_id.unwrap_or("")
        );
    }
    let _ = write!(
        out,
        "|{thinking_level}|{stable}|regenerate:{regeneration_revision}"
    );
    out
}

/// FNV-1a (32-bit) over the UTF-16 code units of `text`, printed unsigned in base 36. UTF-16 keeps the
/// value equal to what the JavaScript client computes for the same key.
pub fn fnv1a_base36(text: &str) -> String {
    let mut hash: u32 = 0x811c_9dc5;
    for unit in text.encode_utf16() {
        hash ^= u32::from(unit);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    to_base36(hash)
}

fn to_base36(mut value: u32) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut buf = [0u8; 7];
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = DIGITS[(value % 36) as usize];
        value /= 36;
        if value == 0 {
            break;
        }
    }
    buf[at..].iter().map(|&b| char::from(b)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_known_vectors() {
        // FNV-1a 32 of "" is the offset basis, of "a" is 0xe40c292c (published test vectors).
        assert_eq!(fnv1a_base36(""), to_base36(0x811c_9dc5));
        assert_eq!(fnv1a_base36("a"), to_base36(0xe40c_292c));
        assert_eq!(to_base36(0), "0");
        assert_eq!(to_base36(35), "z");
        assert_eq!(to_base36(36), "10");
        assert_eq!(to_base36(u32::MAX), "1z141z3");
    }
}
