//! Mail addresses as they appear in headers (`Ann Example <ann@example.com>`), read and written.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

/// One mailbox: an optional display name and the address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mailbox {
    pub name: Option<String>,
    pub email: String,
}

impl Mailbox {
    pub fn to_json(&self) -> Value {
        json!({ "name": self.name.clone().unwrap_or_default(), "email": self.email })
    }

    /// The header form, with a non-ASCII display name as an RFC 2047 encoded word.
    pub fn to_header(&self) -> String {
        match &self.name {
            None => self.email.clone(),
            Some(name) if name.is_ascii() => {
                let escaped = name.replace('\\', "\\\\").replace('"', "\\\"");
                format!("\"{escaped}\" <{}>", self.email)
            }
            Some(name) => format!("{} <{}>", encode_words(name).join(" "), self.email),
        }
    }
}

/// Reads one mailbox; `None` when there is no plausible address in it.
pub(crate) fn parse_mailbox(text: &str) -> Option<Mailbox> {
    let text = text.trim();
    if let (Some(open), Some(close)) = (text.rfind('<'), text.rfind('>'))
        && open < close
    {
        let email = text[open + 1..close].trim();
        let name = text[..open]
            .trim()
            .trim_matches('"')
            .replace("\\\"", "\"")
            .replace("\\\\", "\\");
        return Some(Mailbox {
            name: (!name.is_empty()).then_some(name),
            email: email.to_owned(),
        })
        .filter(|mailbox| mailbox.email.contains('@'));
    }
    text.contains('@').then(|| Mailbox {
        name: None,
        email: text.to_owned(),
    })
}

/// Reads a comma-separated list, respecting commas inside quotes and angle brackets.
pub(crate) fn parse_mailbox_list(text: &str) -> Vec<Mailbox> {
    let mut items = Vec::new();
    let mut current = String::new();
    let (mut quoted, mut angled) = (false, false);
    let mut escaped = false;
    for ch in text.chars() {
        match ch {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '<' if !quoted => angled = true,
            '>' if !quoted => angled = false,
            ',' if !quoted && !angled => {
                items.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(ch);
    }
    items.push(current);
    items.iter().filter_map(|item| parse_mailbox(item)).collect()
}

/// Splits `text` into RFC 2047 `=?UTF-8?B?…?=` words of at most 75 characters, never cutting a
/// character in half.
pub(crate) fn encode_words(text: &str) -> Vec<String> {
    // 39 bytes encode to 52 base64 characters; with the 12-character wrapper a word is 64 long,
    // so even the first one after `Subject: ` keeps its line within 78 characters.
    const MAX_BYTES: usize = 39;
    let mut words = Vec::new();
    let mut chunk = String::new();
    for ch in text.chars() {
        if chunk.len() + ch.len_utf8() > MAX_BYTES {
            words.push(format!("=?UTF-8?B?{}?=", STANDARD.encode(&chunk)));
            chunk.clear();
        }
        chunk.push(ch);
    }
    if !chunk.is_empty() {
        words.push(format!("=?UTF-8?B?{}?=", STANDARD.encode(&chunk)));
    }
    words
}
