//! Shaping provider text for a model: bounded length, HTML reduced to readable text.

/// Appended to a body cut short, so the model knows there is more than it sees.
pub const TRUNCATION_MARKER: &str = "...[truncated]";

/// The first `max_chars` characters of `text` followed by [`TRUNCATION_MARKER`], or `text` unchanged
/// when it fits. The flag says whether it was cut.
pub fn truncate_marked(text: &str, max_chars: usize) -> (String, bool) {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => (format!("{}{TRUNCATION_MARKER}", &text[..cut]), true),
        None => (text.to_owned(), false),
    }
}

/// Readable plain text from an HTML document or fragment. Falls back to the raw markup with tags
/// stripped crudely if the parser gives up, so a malformed mail still says something.
pub fn html_to_text(html: &str) -> String {
    match html2text::config::plain().string_from_read(html.as_bytes(), 100) {
        Ok(text) => text.trim().to_owned(),
        Err(err) => {
            tracing::debug!(error = %err, "HTML could not be converted; stripping tags");
            without_tags(html).trim().to_owned()
        }
    }
}

/// The text outside `<...>` tags, crudely: no parsing, entities left as they are. Also what
/// search snippets are cleaned with.
pub(crate) fn without_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for ch in html.chars() {
        match ch {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => out.push(ch),
            _ => {}
        }
    }
    out
}

/// Undoes the few HTML entities Gmail puts into message snippets.
pub fn decode_basic_entities(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_counts_characters_not_bytes() {
        assert_eq!(truncate_marked("äöü", 3), ("äöü".to_owned(), false));
        assert_eq!(
            truncate_marked("äöüß", 3),
            (format!("äöü{TRUNCATION_MARKER}"), true)
        );
        assert_eq!(truncate_marked("", 0), (String::new(), false));
    }

    #[test]
    fn html_becomes_readable_text() {
        let text = html_to_text("<html><body><p>Hi <b>Bob</b></p><script>x()</script></body></html>");
        assert!(text.contains("Hi") && text.contains("Bob"), "{text}");
        assert!(!text.contains('<') && !text.contains("x()"), "{text}");
    }

    #[test]
    fn snippet_entities_are_decoded_once() {
        assert_eq!(decode_basic_entities("a &amp;lt; b &#39;c&#39;"), "a &lt; b 'c'");
    }
}
