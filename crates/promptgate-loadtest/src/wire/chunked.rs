//! Decoding a `Transfer-Encoding: chunked` body as it arrives, in pieces of any size.

/// Where the decoder is in the chunked framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Hex digits of a chunk size.
    Size,
    /// A chunk extension after `;`, ignored up to the end of the line.
    Extension,
    /// The `\n` after a size line's `\r`.
    SizeLf,
    /// Bytes of chunk data still to come.
    Data(usize),
    /// The `\r\n` after a chunk's data.
    DataCr,
    DataLf,
    /// Trailer lines after the last chunk; `true` at the start of a line.
    Trailer(bool),
    TrailerLf,
    Done,
}

/// A chunked-body decoder that hands out the data bytes and says when the body is complete.
#[derive(Debug)]
pub struct ChunkedDecoder {
    state: State,
    size: usize,
    size_digits: usize,
}

impl Default for ChunkedDecoder {
    fn default() -> Self {
        Self {
            state: State::Size,
            size: 0,
            size_digits: 0,
        }
    }
}

impl ChunkedDecoder {
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Decodes `input`, passing each run of data bytes to `data`. Returns how many bytes of
    /// `input` belong to the body (bytes after its end are the next response's). Errs on framing
    /// that is not chunked encoding.
    pub fn feed(&mut self, input: &[u8], mut data: impl FnMut(&[u8])) -> Result<usize, String> {
        let mut at = 0;
        while at < input.len() {
            let byte = input[at];
            match self.state {
                State::Done => return Ok(at),
                State::Data(left) => {
                    let take = left.min(input.len() - at);
                    data(&input[at..at + take]);
                    at += take;
                    self.state = if take == left {
                        State::DataCr
                    } else {
                        State::Data(left - take)
                    };
                    continue;
                }
                State::Size => match byte {
                    b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => {
                        // Sixteen hex digits already overflow a 64-bit size; no real body is that big.
                        if self.size_digits >= 15 {
                            return Err("a chunk size is too large".to_owned());
                        }
                        let digit = (byte as char).to_digit(16).unwrap_or(0) as usize;
                        self.size = self.size * 16 + digit;
                        self.size_digits += 1;
                    }
                    b';' | b' ' | b'\t' => self.state = State::Extension,
                    b'\r' => self.state = State::SizeLf,
                    b'\n' => self.end_size_line()?,
                    _ => return Err(format!("unexpected byte {byte:#04x} in a chunk size")),
                },
                State::Extension => match byte {
                    b'\r' => self.state = State::SizeLf,
                    b'\n' => self.end_size_line()?,
                    _ => {}
                },
                State::SizeLf => {
                    if byte != b'\n' {
                        return Err("a chunk size line does not end with CRLF".to_owned());
                    }
                    self.end_size_line()?;
                }
                State::DataCr => match byte {
                    b'\r' => self.state = State::DataLf,
                    b'\n' => self.state = State::Size,
                    _ => return Err("chunk data is longer than its size".to_owned()),
                },
                State::DataLf => {
                    if byte != b'\n' {
                        return Err("chunk data does not end with CRLF".to_owned());
                    }
                    self.state = State::Size;
                }
                State::Trailer(line_start) => match byte {
                    b'\r' if line_start => self.state = State::TrailerLf,
                    b'\n' if line_start => self.state = State::Done,
                    b'\n' => self.state = State::Trailer(true),
                    _ => self.state = State::Trailer(false),
                },
                State::TrailerLf => {
                    if byte != b'\n' {
                        return Err("the chunked body does not end with CRLF".to_owned());
                    }
                    self.state = State::Done;
                }
            }
            at += 1;
        }
        Ok(at)
    }

    fn end_size_line(&mut self) -> Result<(), String> {
        if self.size_digits == 0 {
            return Err("a chunk size line has no size".to_owned());
        }
        self.state = match self.size {
            0 => State::Trailer(true),
            size => State::Data(size),
        };
        self.size = 0;
        self.size_digits = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in_pieces(body: &[u8], piece: usize) -> Result<(Vec<u8>, usize, bool), String> {
        let mut decoder = ChunkedDecoder::default();
        let mut out = Vec::new();
        let mut used = 0;
        for part in body.chunks(piece) {
            used += decoder.feed(part, |d| out.extend_from_slice(d))?;
            if decoder.is_done() {
                break;
            }
        }
        Ok((out, used, decoder.is_done()))
    }

    #[test]
    fn decodes_whatever_the_pieces_and_stops_at_the_end() {
        let body = b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\n\r\nHTTP/1.1 200 OK";
        for piece in 1..=body.len() {
            let (out, used, done) = decode_in_pieces(body, piece).unwrap();
            assert_eq!(out, b"hello, world", "piece size {piece}");
            assert!(done);
            assert_eq!(&body[used..], b"HTTP/1.1 200 OK", "piece size {piece}");
        }
    }

    #[test]
    fn trailers_and_bare_newlines_are_accepted() {
        let body = b"A\nabcdefghij\n0\r\nx-checksum: 1\r\n\r\n";
        let (out, used, done) = decode_in_pieces(body, 3).unwrap();
        assert_eq!(
            (out.as_slice(), used, done),
            (&b"abcdefghij"[..], body.len(), true)
        );
    }

    #[test]
    fn a_body_cut_short_is_not_done() {
        let (out, _, done) = decode_in_pieces(b"5\r\nhel", 2).unwrap();
        assert_eq!((out.as_slice(), done), (&b"hel"[..], false));
    }

    #[test]
    fn broken_framing_is_an_error() {
        for body in [
            &b"zz\r\n"[..],
            b"3\r\nabcd\r\n",
            b"\r\n",
            b"fffffffffffffffff\r\n",
        ] {
            assert!(
                decode_in_pieces(body, 64).is_err(),
                "{:?}",
                String::from_utf8_lossy(body)
            );
        }
    }
}
