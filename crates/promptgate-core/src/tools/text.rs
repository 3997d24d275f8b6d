//! Length limits on text that came from outside (model arguments, web pages, MCP servers).

/// `text` cut to at most `max` characters, with `marker` appended when something was cut.
pub(crate) fn truncate_chars(text: &str, max: usize, marker: &str) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}{marker}", &text[..cut]),
        None => text.to_owned(),
    }
}
