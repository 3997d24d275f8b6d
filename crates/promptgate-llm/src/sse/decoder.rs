//! Server-sent events cut out of a body's byte pieces, as the WHATWG event-stream format reads them.
//!
//! Only what a chat stream uses is kept: the event's type and its data. `id` and `retry` are
//! ignored, comments (keep-alives) produce nothing. Pieces are scanned for line ends once and an
//! event's data is copied once, because this runs for every token a model streams.

use std::borrow::Cow;
use std::collections::VecDeque;

/// One dispatched event: its type (`message` unless an `event:` line named another) and its data
/// lines joined by `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// Borrowed for the `message` of every unnamed event, which is most of them: one allocation
    /// fewer per token a model streams.
    pub event: Cow<'static, str>,
    pub data: String,
}

/// The body's bytes are not UTF-8 where an event needed them to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NotUtf8;

#[derive(Debug, Default)]
pub(crate) struct SseDecoder {
    /// The start of a line whose end has not arrived yet.
    partial: Vec<u8>,
    /// A `\r` ended the last piece: a `\n` opening the next belongs to the same line end.
    after_cr: bool,
    /// The body's first bytes may carry a byte-order mark, which is not part of its first line.
    past_first_line: bool,
    event: Option<Cow<'static, str>>,
    data: Option<String>,
    ready: VecDeque<SseEvent>,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl SseDecoder {
    /// Reads one piece of the body; complete events become available through [`Self::next_event`].
    pub fn push(&mut self, mut piece: &[u8]) -> Result<(), NotUtf8> {
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = piece.strip_prefix(b"\n") {
                piece = rest;
            }
        }
        while let Some(at) = memchr::memchr2(b'\n', b'\r', piece) {
            let ends_with_cr = piece[at] == b'\r';
            if self.partial.is_empty() {
                self.line(&piece[..at])?;
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(&piece[..at]);
                self.line(&line)?;
                line.clear();
                self.partial = line;
            }
            piece = &piece[at + 1..];
            if ends_with_cr {
                match piece.first() {
                    Some(b'\n') => piece = &piece[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        self.partial.extend_from_slice(piece);
        Ok(())
    }

    /// The body ended: a last line without its end still counts, a last event without its closing
    /// blank line is still dispatched.
    pub fn finish(&mut self) -> Result<(), NotUtf8> {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.line(&line)?;
        }
        self.line(b"")
    }

    pub fn next_event(&mut self) -> Option<SseEvent> {
        self.ready.pop_front()
    }

    fn line(&mut self, mut line: &[u8]) -> Result<(), NotUtf8> {
        if !self.past_first_line {
            self.past_first_line = true;
            line = line.strip_prefix(BOM).unwrap_or(line);
        }
        if line.is_empty() {
            let event = self.event.take();
            if let Some(data) = self.data.take() {
                self.ready.push_back(SseEvent {
                    event: event.unwrap_or(Cow::Borrowed("message")),
                    data,
                });
            }
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match line.iter().position(|b| *b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                let value = std::str::from_utf8(value).map_err(|_| NotUtf8)?;
                match self.data.as_mut() {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(value);
                    }
                    None => self.data = Some(value.to_owned()),
                }
            }
            b"event" => {
                let value = std::str::from_utf8(value).map_err(|_| NotUtf8)?;
                self.event = Some(Cow::Owned(value.to_owned()));
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(pieces: &[&[u8]]) -> Vec<SseEvent> {
        let mut decoder = SseDecoder::default();
        let mut out = Vec::new();
        for piece in pieces {
            decoder.push(piece).unwrap();
            while let Some(event) = decoder.next_event() {
                out.push(event);
            }
        }
        decoder.finish().unwrap();
        while let Some(event) = decoder.next_event() {
            out.push(event);
        }
        out
    }

    fn message(data: &str) -> SseEvent {
        SseEvent {
            event: "message".into(),
            data: data.to_owned(),
        }
    }

    #[test]
    fn events_split_anywhere_read_the_same() {
        let body = b"data: {\"a\":1}\n\nevent: ping\ndata: x\n\n: keep-alive\n\ndata: [DONE]\n\n";
        let whole = events(&[body]);
        assert_eq!(
            whole,
            vec![
                message("{\"a\":1}"),
                SseEvent {
                    event: "ping".into(),
                    data: "x".to_owned()
                },
                message("[DONE]"),
            ]
        );
        for cut in 1..body.len() {
            assert_eq!(events(&[&body[..cut], &body[cut..]]), whole, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(events(&bytes), whole);
    }

    #[test]
    fn every_line_end_and_multi_line_data_are_read() {
        let body = b"data: one\r\ndata:two\r\rdata: three\rdata: four\n\n";
        assert_eq!(events(&[body]), vec![message("one\ntwo"), message("three\nfour")]);
        // A `\r\n` split across two pieces is one line end, not a line end and a blank line.
        assert_eq!(
            events(&[b"data: a\r", b"\ndata: b\r\n\r\n"]),
            vec![message("a\nb")]
        );
    }

    #[test]
    fn a_leading_byte_order_mark_and_a_missing_last_blank_line_are_tolerated() {
        assert_eq!(
            events(&[b"\xEF\xBB", b"\xBFdata: x\n\ndata: tail"]),
            vec![message("x"), message("tail")]
        );
        // Only at the very start: a mark later is part of the data.
        assert_eq!(events(&[b"data: \xEF\xBB\xBFy\n\n"]), vec![message("\u{feff}y")]);
    }

    #[test]
    fn comments_and_other_fields_dispatch_nothing() {
        assert!(events(&[b": hello\n\nid: 7\nretry: 10\n\n"]).is_empty());
        // A field without a colon is a field with an empty value.
        assert_eq!(events(&[b"data\n\n"]), vec![message("")]);
    }

    #[test]
    fn data_that_is_not_utf8_is_an_error() {
        let mut decoder = SseDecoder::default();
        assert_eq!(decoder.push(b"data: \xFF\xFE\n\n"), Err(NotUtf8));
    }
}
