//! A hand-written reader for the chunks an OpenAI-compatible stream is made of, in front of serde.
//!
//! Why: every token a model streams arrives as one such chunk, and reading it with
//! `serde_json::from_str` into the wire structs cost about 5k instructions a chunk (a third of the
//! gateway's own work per chunk, measured with callgrind on the facades' load scenarios): the
//! derived visitors match every key, and every field the chunk carries that we do not read (`id`,
//! `object`, `created`, `model`, `system_fingerprint`, `logprobs`, …) is still parsed value by value.
//! This reader walks the bytes once, skipping what it does not read, and builds the same
//! [`WireChunk`] serde would.
//!
//! How it stays the same as serde: it only answers for inputs it fully understands, and says
//! `None` for anything else (an escaped key, a lone surrogate, a float where a count goes, a
//! duplicate field, `content` as a list of parts, an `error`, deep nesting, anything malformed),
//! and the caller then asks serde, which also words any error. So a chunk it reads is one serde
//! reads the same way (the tests compare the two on tricky inputs and on every prefix and byte
//! mutation of them), and an input serde refuses is never accepted here. Values that are rare and
//! whose exact reading matters more than its cost (the usage's counts and details, tool-call
//! arguments given as an object) are cut out here and handed to serde as `Value`s.

use serde_json::Value;

use super::tool_calls::{WireFunction, WireToolCall};
use super::{WireChoice, WireChunk, WireDelta, WireUsage};

/// Deeper than any chunk a provider sends; beyond it serde decides (it has a depth limit of its
/// own, which counts the levels around a value too).
const MAX_DEPTH: usize = 32;

/// The chunk serde would read from `data`, or `None` when serde should read it.
pub(super) fn read_chunk(data: &str) -> Option<WireChunk> {
    let mut scanner = Scanner { text: data, at: 0 };
    let chunk = scanner.chunk()?;
    scanner.skip_space();
    (scanner.at == data.len()).then_some(chunk)
}

struct Scanner<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Scanner<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn skip_space(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes().get(self.at) {
            self.at += 1;
        }
    }

    /// The next byte that is not white space, not consumed.
    fn peek(&mut self) -> Option<u8> {
        self.skip_space();
        self.bytes().get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// `null`, consumed, or false with nothing consumed.
    fn null(&mut self) -> Option<bool> {
        if self.peek()? != b'n' {
            return Some(false);
        }
        self.literal(b"null")?;
        Some(true)
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at.checked_add(word.len())?;
        (self.bytes().get(self.at..end)? == word).then(|| self.at = end)
    }

    /// An object's members: `member` reads each value after its key (keys with escapes go to
    /// serde, which unescapes them before matching field names).
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(());
        }
        loop {
            if self.peek()? != b'"' {
                return None;
            }
            let (key, escaped) = self.raw_string()?;
            if escaped {
                return None;
            }
            self.eat(b':')?;
            member(self, key)?;
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// An array's elements, each read by `element`.
    fn array(&mut self, mut element: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.eat(b'[')?;
        if self.peek()? == b']' {
            self.at += 1;
            return Some(());
        }
        loop {
            element(self)?;
            match self.peek()? {
                b',' => self.at += 1,
                b']' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A string's text between its quotes, as written, and whether it holds escapes. Refuses what
    /// serde refuses inside a string: control characters and unknown escapes. The text is UTF-8
    /// already (the input is a `str`, and quotes and backslashes are ASCII).
    fn raw_string(&mut self) -> Option<(&'a str, bool)> {
        self.eat(b'"')?;
        let bytes = self.bytes();
        let start = self.at;
        let mut escaped = false;
        let mut at = start;
        loop {
            // Eight bytes at a time up to the first quote, backslash or control character, which
            // the match below reads: this loop was over a third of the reader's instructions when
            // it went byte by byte. (Testing a word per byte instead cost more than it saved on the
            // short keys and values chunks are made of.)
            if let Some(word) = bytes.get(at..at + 8)
                && let Ok(word) = <[u8; 8]>::try_from(word)
            {
                let special = crate::json_text::special_bytes(u64::from_le_bytes(word));
                if special == 0 {
                    at += 8;
                    continue;
                }
                at += (special.trailing_zeros() / 8) as usize;
            }
            match *bytes.get(at)? {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    match *bytes.get(at + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => at += 2,
                        b'u' => {
                            hex4(bytes.get(at + 2..at + 6)?)?;
                            at += 6;
                        }
                        _ => return None,
                    }
                }
                0..=0x1f => return None,
                _ => at += 1,
            }
        }
        self.at = at + 1;
        self.text.get(start..at).map(|text| (text, escaped))
    }

    /// A string's value, unescaped.
    fn string(&mut self) -> Option<String> {
        let (raw, escaped) = self.raw_string()?;
        if escaped {
            unescape(raw)
        } else {
            Some(raw.to_owned())
        }
    }

    /// `null` or a string, as an `Option<String>` field reads it.
    fn optional_string(&mut self) -> Option<Option<String>> {
        if self.null()? {
            return Some(None);
        }
        self.string().map(Some)
    }

    /// `null` or a string, as an `Option<Value>` field reads it; anything else goes to serde.
    fn optional_text_value(&mut self) -> Option<Option<Value>> {
        Some(self.optional_string()?.map(Value::String))
    }

    /// `null` or a whole number, as an `Option<u64>` field reads it.
    fn optional_index(&mut self) -> Option<Option<u64>> {
        if self.null()? {
            return Some(None);
        }
        let bytes = self.bytes();
        let start = self.at;
        let mut end = start;
        while bytes.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
        // A leading zero before more digits, a fraction or an exponent: serde decides.
        let digits = &self.text[start..end];
        if digits.is_empty()
            || (digits.len() > 1 && digits.starts_with('0'))
            || matches!(bytes.get(end), Some(b'.' | b'e' | b'E'))
        {
            return None;
        }
        self.at = end;
        digits.parse().ok().map(Some)
    }

    /// Any value, as an `Option<Value>` field reads it: cut out here, read by serde (for values
    /// whose reading is rare, or too varied to be worth doing by hand).
    fn optional_value(&mut self) -> Option<Option<Value>> {
        if self.null()? {
            return Some(None);
        }
        let start = self.at;
        self.skip_value(0)?;
        serde_json::from_str(&self.text[start..self.at]).ok().map(Some)
    }

    /// Skips one value, refusing what serde's skipping refuses.
    fn skip_value(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.raw_string().map(drop),
            b'{' => self.object(|scanner, _| scanner.skip_value(depth + 1)),
            b'[' => self.array(|scanner| scanner.skip_value(depth + 1)),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.skip_number(),
            _ => None,
        }
    }

    /// A number by JSON's grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    fn skip_number(&mut self) -> Option<()> {
        let bytes = self.bytes();
        let mut at = self.at;
        let digits = |at: &mut usize| {
            let start = *at;
            while bytes.get(*at).is_some_and(u8::is_ascii_digit) {
                *at += 1;
            }
            *at > start
        };
        if bytes.get(at) == Some(&b'-') {
            at += 1;
        }
        match bytes.get(at) {
            Some(b'0') => at += 1,
            Some(b'1'..=b'9') => {
                digits(&mut at);
            }
            _ => return None,
        }
        if bytes.get(at) == Some(&b'.') {
            at += 1;
            if !digits(&mut at) {
                return None;
            }
        }
        if let Some(b'e' | b'E') = bytes.get(at) {
            at += 1;
            if let Some(b'+' | b'-') = bytes.get(at) {
                at += 1;
            }
            if !digits(&mut at) {
                return None;
            }
        }
        self.at = at;
        Some(())
    }

    /// `null`, or what `read` reads, as an `Option<T>` field reads it.
    fn optional<T>(&mut self, read: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.null()? {
            return Some(None);
        }
        read(self).map(Some)
    }

    /// `null`, or a list of what `read` reads, as an `Option<Vec<T>>` field reads it.
    fn optional_list<T>(&mut self, read: fn(&mut Self) -> Option<T>) -> Option<Option<Vec<T>>> {
        self.optional(|scanner| {
            let mut list = Vec::with_capacity(1);
            scanner.array(|scanner| {
                list.push(read(scanner)?);
                Some(())
            })?;
            Some(list)
        })
    }

    /// An object read into a `T`: `member` reads each member by its key, with the flags of the
    /// fields seen so far (see [`once`]), and skips the members `T` does not have.
    fn record<T: Default, const N: usize>(
        &mut self,
        mut member: impl FnMut(&mut Self, &'a str, &mut T, &mut [bool; N]) -> Option<()>,
    ) -> Option<T> {
        let mut record = T::default();
        let mut seen = [false; N];
        self.object(|scanner, key| member(scanner, key, &mut record, &mut seen))?;
        Some(record)
    }

    fn chunk(&mut self) -> Option<WireChunk> {
        self.record(
            |scanner, key, chunk: &mut WireChunk, seen: &mut [bool; 3]| match key {
                "choices" => once(&mut seen[0], &mut chunk.choices, || {
                    scanner.optional_list(Self::choice)
                }),
                "usage" => once(&mut seen[1], &mut chunk.usage, || scanner.optional(Self::usage)),
                // An error chunk is rare and read whole: serde's reading of it stands.
                "error" => once(&mut seen[2], &mut chunk.error, || scanner.null()?.then_some(None)),
                _ => scanner.skip_value(0),
            },
        )
    }

    fn choice(&mut self) -> Option<WireChoice> {
        self.record(
            |scanner, key, choice: &mut WireChoice, seen: &mut [bool; 3]| match key {
                "index" => once(&mut seen[0], &mut choice.index, || scanner.optional_index()),
                "delta" => once(&mut seen[1], &mut choice.delta, || scanner.optional(Self::delta)),
                "finish_reason" => once(&mut seen[2], &mut choice.finish_reason, || {
                    scanner.optional_text_value()
                }),
                _ => scanner.skip_value(0),
            },
        )
    }

    fn delta(&mut self) -> Option<WireDelta> {
        self.record(
            |scanner, key, delta: &mut WireDelta, seen: &mut [bool; 4]| match key {
                // A list of typed parts goes to serde.
                "content" => once(&mut seen[0], &mut delta.content, || scanner.optional_text_value()),
                "reasoning_content" => once(&mut seen[1], &mut delta.reasoning_content, || {
                    scanner.optional_string()
                }),
                "reasoning" => once(&mut seen[2], &mut delta.reasoning, || scanner.optional_string()),
                "tool_calls" => once(&mut seen[3], &mut delta.tool_calls, || {
                    scanner.optional_list(Self::tool_call)
                }),
                _ => scanner.skip_value(0),
            },
        )
    }

    fn tool_call(&mut self) -> Option<WireToolCall> {
        self.record(
            |scanner, key, call: &mut WireToolCall, seen: &mut [bool; 3]| match key {
                "index" => once(&mut seen[0], &mut call.index, || scanner.optional_index()),
                "id" => once(&mut seen[1], &mut call.id, || scanner.optional_string()),
                "function" => once(&mut seen[2], &mut call.function, || {
                    scanner.optional(Self::function)
                }),
                _ => scanner.skip_value(0),
            },
        )
    }

    fn function(&mut self) -> Option<WireFunction> {
        self.record(
            |scanner, key, function: &mut WireFunction, seen: &mut [bool; 2]| match key {
                "name" => once(&mut seen[0], &mut function.name, || scanner.optional_string()),
                // Normally a string; an object (a few servers) is read by serde.
                "arguments" => once(&mut seen[1], &mut function.arguments, || {
                    if scanner.peek()? == b'"' {
                        scanner.string().map(|text| Some(Value::String(text)))
                    } else {
                        scanner.optional_value()
                    }
                }),
                _ => scanner.skip_value(0),
            },
        )
    }

    /// The counts and details are read by serde as values: one chunk a stream carries them.
    fn usage(&mut self) -> Option<WireUsage> {
        self.record(|scanner, key, usage: &mut WireUsage, seen: &mut [bool; 5]| {
            let (field, seen) = match key {
                "prompt_tokens" => (&mut usage.prompt_tokens, &mut seen[0]),
                "completion_tokens" => (&mut usage.completion_tokens, &mut seen[1]),
                "total_tokens" => (&mut usage.total_tokens, &mut seen[2]),
                "prompt_tokens_details" => (&mut usage.prompt_tokens_details, &mut seen[3]),
                "completion_tokens_details" => (&mut usage.completion_tokens_details, &mut seen[4]),
                _ => return scanner.skip_value(0),
            };
            once(seen, field, || scanner.optional_value())
        })
    }
}

/// Sets a field from `read` the first time it appears; a second time hands the chunk to serde,
/// which refuses duplicate fields.
fn once<T>(seen: &mut bool, field: &mut T, read: impl FnOnce() -> Option<T>) -> Option<()> {
    if *seen {
        return None;
    }
    *seen = true;
    *field = read()?;
    Some(())
}

/// The value of four hex digits.
fn hex4(digits: &[u8]) -> Option<u32> {
    let mut value = 0;
    for digit in digits {
        value = value * 16 + char::from(*digit).to_digit(16)?;
    }
    Some(value)
}

/// A string's text with its escapes read (already checked by [`Scanner::raw_string`]). A lone
/// surrogate goes to serde, which refuses it.
fn unescape(raw: &str) -> Option<String> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let bytes = rest.as_bytes();
        let (ch, used) = match *bytes.get(at + 1)? {
            b'"' => ('"', 2),
            b'\\' => ('\\', 2),
            b'/' => ('/', 2),
            b'b' => ('\u{8}', 2),
            b'f' => ('\u{c}', 2),
            b'n' => ('\n', 2),
            b'r' => ('\r', 2),
            b't' => ('\t', 2),
            b'u' => {
                let first = hex4(bytes.get(at + 2..at + 6)?)?;
                match first {
                    0xD800..=0xDBFF => {
                        if bytes.get(at + 6..at + 8)? != b"\\u" {
                            return None;
                        }
                        let second = hex4(bytes.get(at + 8..at + 12)?)?;
                        if !(0xDC00..=0xDFFF).contains(&second) {
                            return None;
                        }
                        let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
                        (char::from_u32(code)?, 12)
                    }
                    0xDC00..=0xDFFF => return None,
                    _ => (char::from_u32(first)?, 6),
                }
            }
            _ => return None,
        };
        out.push(ch);
        rest = &rest[at + used..];
    }
    out.push_str(rest);
    Some(out)
}

#[cfg(test)]
mod tests;
