//! Splits `<think>…</think>` reasoning out of streamed text. Tags may arrive cut anywhere, so a
//! possible tag prefix at the end of a piece is held back until the next piece decides it.

use crate::StreamEvent;

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

#[derive(Debug, Clone)]
pub(crate) struct ThinkSplitter {
    inside: bool,
    /// Text held back because it might be the start of a tag.
    pending: String,
    /// A model told to start in reasoning may still open with an explicit `<think>`; swallow it.
    expect_leading_open: bool,
    /// Models put a line break right after a tag; it is layout, not content.
    trim_next: bool,
}

impl ThinkSplitter {
    pub(crate) fn new(start_with_reasoning: bool) -> Self {
        Self {
            inside: start_with_reasoning,
            pending: String::new(),
            expect_leading_open: start_with_reasoning,
            trim_next: start_with_reasoning,
        }
    }

    pub(crate) fn push(&mut self, piece: &str, out: &mut Vec<StreamEvent>) {
        let mut buf = std::mem::take(&mut self.pending);
        buf.push_str(piece);
        let mut rest = buf.as_str();

        if self.expect_leading_open {
            let trimmed = rest.trim_start();
            if trimmed.is_empty() || (trimmed.len() < OPEN.len() && OPEN.starts_with(trimmed)) {
                self.pending = rest.to_owned();
                return;
            }
            self.expect_leading_open = false;
            if let Some(after) = trimmed.strip_prefix(OPEN) {
                rest = after;
            }
        }

        loop {
            let tag = if self.inside { CLOSE } else { OPEN };
            match rest.find(tag) {
                Some(at) => {
                    self.emit(&rest[..at], out);
                    rest = &rest[at + tag.len()..];
                    self.inside = !self.inside;
                    self.trim_next = true;
                }
                None => {
                    let keep = partial_tag_suffix(rest, tag);
                    let (ready, held) = rest.split_at(rest.len() - keep);
                    self.emit(ready, out);
                    self.pending = held.to_owned();
                    return;
                }
            }
        }
    }

    /// The stream ended: whatever was held back was not a tag after all.
    pub(crate) fn flush(&mut self, out: &mut Vec<StreamEvent>) {
        let pending = std::mem::take(&mut self.pending);
        self.expect_leading_open = false;
        self.emit(&pending, out);
    }

    fn emit(&mut self, mut text: &str, out: &mut Vec<StreamEvent>) {
        if self.trim_next {
            text = text.trim_start();
            if text.is_empty() {
                return;
            }
            self.trim_next = false;
        }
        if text.is_empty() {
            return;
        }
        let event = if self.inside {
            StreamEvent::ReasoningDelta(text.to_owned())
        } else {
            StreamEvent::TextDelta(text.to_owned())
        };
        out.push(event);
    }
}

/// Length of the longest proper prefix of `tag` that `text` ends with.
fn partial_tag_suffix(text: &str, tag: &str) -> usize {
    (1..tag.len())
        .rev()
        .find(|&k| text.ends_with(&tag[..k]))
        .unwrap_or(0)
}
