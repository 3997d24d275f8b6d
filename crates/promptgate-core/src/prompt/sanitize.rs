//! Rules for placing user-controlled text inside the system prompt.
//!
//! The prompt is a Markdown document whose top-level headings (`# Tools`, `# Output Format`, ...) tell
//! the model which rules it is reading, and whose volatile half starts with `Current date/time:`. A
//! preferred name, a location, a project's instructions or a skill description must never be able to
//! open a section of its own, move an existing one, or pass itself off as the clock. So:
//!
//! - **Single-line fields** (names, location, descriptions, the model name) have every whitespace run,
//!   line breaks included, collapsed to one space and are trimmed. They always follow a fixed prefix on
//!   their line (`User name: `, `- slug: `, `# Project: `), so they can never start a line.
//! - **Multi-line blocks** (project instructions, skill instructions, profile overrides, the MCP summary)
//!   keep their lines, but every line whose first non-blank character is `#` gets that `#` escaped as
//!   `\#`. Markdown renders `\#` as a literal hash, and the model reads it as text, not as a heading.
//!   Every kind of line break (`\r\n`, `\r`, U+2028, ...) is first turned into `\n` so none slips past.
//! - **Both** have the literal `Current date/time` defused (`Current date / time`), so only the real
//!   volatile line can carry it.
//! - **Both** are capped in length (characters, not bytes); a cut is marked with `…`.

use std::borrow::Cow;

/// The marker that opens the volatile date line; user text may not contain it verbatim.
pub(crate) const DATE_MARKER: &str = "Current date/time";
const DEFUSED_DATE_MARKER: &str = "Current date / time";

/// Cap for names, the location and other one-line fields.
pub(crate) const SHORT_FIELD_MAX_CHARS: usize = 200;
/// Cap for skill descriptions.
pub(crate) const DESCRIPTION_MAX_CHARS: usize = 1_000;
/// Cap for project instructions, skill instructions and profile texts.
pub(crate) const BLOCK_MAX_CHARS: usize = 32_000;

/// One-line field: whitespace collapsed, trimmed, capped, date marker defused.
pub(crate) fn single_line(text: &str, max_chars: usize) -> Cow<'_, str> {
    if is_clean_single_line(text, max_chars) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len().min(max_chars * 4));
    let mut chars = 0usize;
    let mut truncated = false;
    for word in text.split(char::is_whitespace).filter(|w| !w.is_empty()) {
        if !out.is_empty() {
            if chars + 1 > max_chars {
                truncated = true;
                break;
            }
            out.push(' ');
            chars += 1;
        }
        for c in word.chars() {
            if chars == max_chars {
                truncated = true;
                break;
            }
            out.push(c);
            chars += 1;
        }
        if truncated {
            break;
        }
    }
    if truncated {
        let kept = out.trim_end().len();
        out.truncate(kept);
        out.push('…');
    }
    Cow::Owned(defuse_date_marker(out))
}

/// Multi-line block: line breaks normalised, trimmed, capped, leading `#` escaped, date marker defused.
pub(crate) fn block(text: &str, max_chars: usize) -> String {
    let normalised = normalise_line_breaks(text);
    let trimmed = normalised.trim();
    let capped = cap_chars(trimmed, max_chars);
    let mut out = String::with_capacity(capped.len() + 16);
    for (i, line) in capped.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let indent = line.len() - line.trim_start().len();
        if line[indent..].starts_with('#') {
            out.push_str(&line[..indent]);
            out.push('\\');
            out.push_str(&line[indent..]);
        } else {
            out.push_str(line);
        }
    }
    defuse_date_marker(out)
}

fn is_clean_single_line(text: &str, max_chars: usize) -> bool {
    let bytes = text.as_bytes();
    if bytes.first() == Some(&b' ') || bytes.last() == Some(&b' ') || text.contains(DATE_MARKER) {
        return false;
    }
    let mut previous_space = false;
    let mut count = 0usize;
    for c in text.chars() {
        count += 1;
        if count > max_chars {
            return false;
        }
        if c == ' ' {
            if previous_space {
                return false;
            }
            previous_space = true;
        } else if c.is_whitespace() {
            return false;
        } else {
            previous_space = false;
        }
    }
    true
}

fn normalise_line_breaks(text: &str) -> Cow<'_, str> {
    let is_break = |c: char| matches!(c, '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}');
    if !text.contains(is_break) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' {
            if chars.peek() == Some(&'\n') {
                chars.next();
            }
            out.push('\n');
        } else if is_break(c) {
            out.push('\n');
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn cap_chars(text: &str, max_chars: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max_chars) {
        None => Cow::Borrowed(text),
        Some((cut, _)) => {
            let mut out = text[..cut].trim_end().to_owned();
            out.push('…');
            Cow::Owned(out)
        }
    }
}

fn defuse_date_marker(text: String) -> String {
    if text.contains(DATE_MARKER) {
        text.replace(DATE_MARKER, DEFUSED_DATE_MARKER)
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_line_collapses_breaks_so_a_heading_cannot_start_a_line() {
        assert_eq!(single_line("Ada\n# Tools\r\n  x", 200), "Ada # Tools x");
    }

    #[test]
    fn single_line_keeps_clean_text_borrowed() {
        assert!(matches!(single_line("New York, NY", 200), Cow::Borrowed(_)));
    }

    #[test]
    fn single_line_caps_length_and_marks_the_cut() {
        assert_eq!(single_line("abcdef ghij", 8), "abcdef g…");
        assert_eq!(single_line("ééééé", 3), "ééé…");
    }

    #[test]
    fn block_escapes_leading_hashes_on_every_kind_of_line_break() {
        let text = "intro\n# Tools\r## Sub\u{2028}   # Indented\nkeep # inline";
        assert_eq!(
            block(text, 1000),
            "intro\n\\# Tools\n\\## Sub\n   \\# Indented\nkeep # inline"
        );
    }

    #[test]
    fn both_defuse_the_date_marker() {
        assert_eq!(
            single_line("Current\ndate/time: x", 100),
            "Current date / time: x"
        );
        assert_eq!(
            block("Current date/time: never", 100),
            "Current date / time: never"
        );
    }
}
