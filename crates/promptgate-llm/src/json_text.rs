//! JSON text written without `serde_json`'s per-byte string loop, for what every upstream request
//! carries: the system prompt (kilobytes, mostly plain text) and the tools' schemas.
//!
//! - [`write_str`] writes a JSON string exactly as `serde_json` does (the same escapes, byte for
//!   byte), but skips eight plain bytes at a time: the system prompt was the single largest piece
//!   of a facade request's own work (about 50k instructions of escaping per request).
//! - [`schema_text`] is a tool schema's compact JSON, rendered once per shared schema: the same
//!   `Arc` goes into every request that offers the tool, and the text serves both the request body
//!   and the count of the tokens the tool costs (which rendered every schema again per request).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, Weak};

use serde_json::Value;

/// Schemas remembered at most; beyond it, those no request holds any more are forgotten.
const SCHEMAS_KEPT: usize = 1024;

/// Rendered schemas by the address of their shared value. Each entry holds a `Weak` to it, so the
/// allocation cannot be freed and reused by another schema while the entry exists: an address
/// found here always names the schema that was rendered (a shared `Value` cannot change, since
/// `Arc::get_mut` refuses while a `Weak` exists).
static SCHEMAS: LazyLock<Mutex<HashMap<usize, Rendered>>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// One remembered schema: what keeps its address from being reused, and its text.
type Rendered = (Weak<Value>, Arc<str>);

/// The compact JSON text of a tool schema (what `Value::to_string` gives).
pub fn schema_text(schema: &Arc<Value>) -> Arc<str> {
    let key = Arc::as_ptr(schema) as usize;
    let mut schemas = SCHEMAS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, text)) = schemas.get(&key) {
        return Arc::clone(text);
    }
    if schemas.len() >= SCHEMAS_KEPT {
        schemas.retain(|_, (held, _)| held.strong_count() > 0);
        if schemas.len() >= SCHEMAS_KEPT {
            schemas.clear();
        }
    }
    let text: Arc<str> = Arc::from(schema.to_string());
    schemas.insert(key, (Arc::downgrade(schema), Arc::clone(&text)));
    text
}

/// Bytes with this bit set in every lane, for the word-at-a-time tests below.
const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Whether any of the eight bytes of `word` must be escaped in a JSON string: a control character
/// (below 0x20), `"` or `\`.
fn needs_escape(word: u64) -> bool {
    special_bytes(word) != 0
}

/// The high bit of each byte of `word` (read little-endian) that is a control character, `"` or
/// `\`: the classic tests for "some byte is zero / less than n". Above the first such byte a bit
/// may be set wrongly (a borrow), so only the lowest set bit places a byte exactly; the reader of
/// JSON strings (`parser::scan`) uses it to jump to the first byte that ends a plain run.
pub(crate) fn special_bytes(word: u64) -> u64 {
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let is_quote = quote.wrapping_sub(ONES) & !quote & HIGHS;
    let is_backslash = backslash.wrapping_sub(ONES) & !backslash & HIGHS;
    below_space | is_quote | is_backslash
}

/// Appends `text` as a JSON string, quotes included, byte for byte as `serde_json` writes it.
pub fn write_str(out: &mut Vec<u8>, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut plain_from = 0;
    let mut at = 0;
    while at < bytes.len() {
        if let Some(word) = bytes.get(at..at + 8)
            && let Ok(word) = <[u8; 8]>::try_from(word)
            && !needs_escape(u64::from_le_bytes(word))
        {
            at += 8;
            continue;
        }
        let byte = bytes[at];
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => &[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0x0f)],
            ],
            _ => {
                at += 1;
                continue;
            }
        };
        out.extend_from_slice(&bytes[plain_from..at]);
        out.extend_from_slice(escape);
        at += 1;
        plain_from = at;
    }
    out.extend_from_slice(&bytes[plain_from..]);
    out.push(b'"');
}

/// A text at least this long is worth remembering escaped: comparing it costs a fraction of
/// escaping it again.
const REMEMBERED_FROM: usize = 1024;
/// Long texts remembered escaped at the most (one system prompt per model and user setting).
const REMEMBERED: usize = 8;

/// A long text and its escaped form.
type Escaped = (Box<str>, Box<[u8]>);

/// Long texts written lately, the latest first.
static ESCAPED: Mutex<Vec<Escaped>> = Mutex::new(Vec::new());

/// [`write_str`] for a text that comes back unchanged from one request to the next, such as a
/// system prompt. Why: the system prompt is composed per request but is the same text for every
/// request of a model (kilobytes, a newline in every line), and escaping it was about 30k of the
/// 40k instructions a facade request's upstream body cost; comparing it with the text written
/// last time is a `memcmp`. Short texts are written as [`write_str`] writes them.
pub fn write_recurring_str(out: &mut Vec<u8>, text: &str) {
    if text.len() < REMEMBERED_FROM {
        return write_str(out, text);
    }
    let mut escaped = ESCAPED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(at) = escaped.iter().position(|(known, _)| **known == *text) {
        out.extend_from_slice(&escaped[at].1);
        // The latest first, so the texts in use stay while others come and go.
        escaped[..=at].rotate_right(1);
        return;
    }
    let start = out.len();
    write_str(out, text);
    escaped.truncate(REMEMBERED - 1);
    escaped.insert(0, (Box::from(text), Box::from(&out[start..])));
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ours(text: &str) -> String {
        let mut out = Vec::new();
        write_str(&mut out, text);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        let every_ascii: String = (0u8..0x80).map(char::from).collect();
        let mut texts = vec![
            String::new(),
            "plain".to_owned(),
            "exactly8".to_owned(),
            "a longer line of prose, long enough for several words at a time.".to_owned(),
            "line one\nline two\n\n\ttabbed \"quoted\" back\\slash\r\n".to_owned(),
            "ünïcödé — 日本語 🙂 and \u{7f} and \u{2028}".to_owned(),
            every_ascii.clone(),
        ];
        // Every escape at every offset within a word, and words of bytes at and above 0x80.
        for offset in 0..9 {
            texts.push(format!(
                "{}{}{}",
                "x".repeat(offset),
                every_ascii,
                "é".repeat(offset)
            ));
        }
        for text in texts {
            assert_eq!(ours(&text), serde_json::to_string(&text).unwrap(), "{text:?}");
        }
    }

    fn recurring(text: &str) -> String {
        let mut out = b"[".to_vec();
        write_recurring_str(&mut out, text);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn recurring_texts_are_written_as_serde_json_writes_them_whatever_came_before() {
        // Long texts of one length that differ in one byte, more of them than are remembered,
        // each written several times in turn; and a short one.
        let texts: Vec<String> = (0..REMEMBERED + 3)
            .map(|n| {
                format!(
                    "{}\n\"{n:02}\"\t{}",
                    "line of a prompt\n".repeat(80),
                    "é".repeat(n % 3)
                )
            })
            .chain(["short \"one\"\n".to_owned()])
            .collect();
        for round in 0..3 {
            for (n, text) in texts.iter().enumerate() {
                let expected = format!("[{}", serde_json::to_string(text).unwrap());
                assert_eq!(recurring(text), expected, "text {n}, round {round}");
                // Written again at once: from what was remembered.
                assert_eq!(recurring(text), expected, "text {n} again, round {round}");
            }
        }
    }

    #[test]
    fn a_schema_is_rendered_once_and_as_serde_json_renders_it() {
        let schema = Arc::new(
            json!({"type": "object", "properties": {"q": {"type": "string", "description": "a \"query\"\n"}}}),
        );
        let first = schema_text(&schema);
        assert_eq!(&*first, schema.to_string());
        assert!(Arc::ptr_eq(&first, &schema_text(&schema)), "rendered again");
        // Another schema with the same text is its own entry, and a copy renders the same.
        let copy = Arc::new((*schema).clone());
        assert_eq!(&*schema_text(&copy), &*first);
    }
}
