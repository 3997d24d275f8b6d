//! `[N]` citations in streamed text: each one is found once, where it ends, and one that points at
//! no source of the turn is removed together with the whitespace before it ("dusk [7]." becomes
//! "dusk."), the way the native `【N】` markers are.
//!
//! A citation is `[` with one to nine digits and `]`, not followed by `(` (a Markdown link such as
//! `[1](https://…)` is text) and not inside inline code or a fence (a backtick run opens code, a run
//! of the same length closes it), so `xs[1]` in a code sample is never touched. Written right after a
//! letter, digit or `_` ("datum[1]", but also `xs[1]` outside code) it counts only when it names a
//! source: an unknown one there is left as text, since it may be an index. Like
//! [`super::CitationCleaner`], whatever `push` returns is final and splitting the input differently
//! never changes the output.

use super::MAX_EATEN_WHITESPACE;

const MAX_DIGITS: usize = 9;

/// A citation kept in the text, at byte offsets of the text as it was emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marker {
    pub n: u32,
    pub start: usize,
    pub end: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Candidate {
    None,
    /// Seen `[`.
    Open,
    /// Seen `[` and this many digits.
    Digits(usize),
    /// Seen `[N]`; the next character decides.
    Closed,
}

/// Finds the citations of one text part and removes those that point at no source.
#[derive(Debug, Clone)]
pub struct MarkerScanner {
    /// The source numbers a citation may point at, ascending.
    known: Vec<u32>,
    /// The backtick run that opened the code we are in.
    code_open: Option<usize>,
    /// Backticks seen in a row so far.
    backticks: usize,
    whitespace: String,
    whitespace_chars: usize,
    candidate: String,
    state: Candidate,
    /// The candidate's `[` came right after a letter, digit or `_`.
    attached: bool,
    /// The last character seen outside a candidate.
    previous: char,
    /// Bytes emitted so far.
    emitted: usize,
    markers: Vec<Marker>,
    dangling: Vec<u32>,
}

impl MarkerScanner {
    /// `known` are the numbers of the turn's sources.
    pub fn new(mut known: Vec<u32>) -> Self {
        known.sort_unstable();
        Self {
            known,
            code_open: None,
            backticks: 0,
            whitespace: String::new(),
            whitespace_chars: 0,
            candidate: String::new(),
            state: Candidate::None,
            attached: false,
            previous: ' ',
            emitted: 0,
            markers: Vec::new(),
            dangling: Vec::new(),
        }
    }

    /// Feeds the next piece; returns the text that is now safe to show.
    pub fn push(&mut self, piece: &str) -> String {
        let mut out = String::with_capacity(piece.len());
        let mut rest = piece;
        while !rest.is_empty() {
            // Outside code and candidates, a run without `[`, backticks and whitespace can neither
            // start a citation nor be eaten by one: it passes whole (what `feed` does for each of
            // its characters).
            if self.state == Candidate::None && self.code_open.is_none() && self.backticks == 0 {
                let run = rest
                    .find(|c: char| c == '[' || c == '`' || c.is_whitespace())
                    .unwrap_or(rest.len());
                if let Some(last) = rest[..run].chars().next_back() {
                    self.release(&mut out);
                    out.push_str(&rest[..run]);
                    self.previous = last;
                    rest = &rest[run..];
                    continue;
                }
            }
            let mut chars = rest.chars();
            if let Some(c) = chars.next() {
                self.feed(c, &mut out);
            }
            rest = chars.as_str();
        }
        self.emitted += out.len();
        out
    }

    /// Ends the text; returns everything still held back.
    pub fn finish(&mut self) -> String {
        let mut out = String::new();
        if self.state == Candidate::Closed {
            self.decide(&mut out);
        }
        self.release(&mut out);
        self.emitted += out.len();
        out
    }

    /// The citations kept so far, in order.
    pub fn markers(&self) -> &[Marker] {
        &self.markers
    }

    /// The numbers of the citations removed so far, in order (repeats included).
    pub fn dangling(&self) -> &[u32] {
        &self.dangling
    }

    fn feed(&mut self, c: char, out: &mut String) {
        if c == '`' {
            self.release_candidate(out);
            self.release(out);
            self.backticks += 1;
            out.push(c);
            return;
        }
        if self.backticks > 0 {
            self.code_open = match self.code_open {
                Some(open) if open == self.backticks => None,
                Some(open) => Some(open),
                None => Some(self.backticks),
            };
            self.backticks = 0;
        }
        if self.code_open.is_some() {
            out.push(c);
            return;
        }
        match self.state {
            Candidate::None => self.feed_text(c, out),
            Candidate::Open if c.is_ascii_digit() => self.extend(c, Candidate::Digits(1)),
            Candidate::Digits(n) if c.is_ascii_digit() && n < MAX_DIGITS => {
                self.extend(c, Candidate::Digits(n + 1))
            }
            Candidate::Digits(_) if c == ']' => self.extend(c, Candidate::Closed),
            Candidate::Closed if c == '(' => {
                self.release_candidate(out);
                self.feed_text(c, out);
            }
            Candidate::Closed => {
                self.decide(out);
                self.feed_text(c, out);
            }
            Candidate::Open | Candidate::Digits(_) => {
                self.release_candidate(out);
                self.feed_text(c, out);
            }
        }
    }

    fn feed_text(&mut self, c: char, out: &mut String) {
        let previous = std::mem::replace(&mut self.previous, c);
        if c == '[' {
            self.candidate.push(c);
            self.state = Candidate::Open;
            self.attached = previous.is_alphanumeric() || previous == '_';
        } else if c.is_whitespace() {
            self.whitespace.push(c);
            self.whitespace_chars += 1;
            if self.whitespace_chars > MAX_EATEN_WHITESPACE {
                // Only the last whitespace run can be eaten; its oldest character is safe now.
                let first = self.whitespace.remove(0);
                self.whitespace_chars -= 1;
                out.push(first);
            }
        } else {
            self.release(out);
            out.push(c);
        }
    }

    fn extend(&mut self, c: char, next: Candidate) {
        self.candidate.push(c);
        self.state = next;
    }

    /// `[N]` is a citation: kept (with the whitespace before it) when N is a source, else dropped.
    fn decide(&mut self, out: &mut String) {
        let digits = self.candidate.trim_start_matches('[').trim_end_matches(']');
        let n = digits.parse::<u32>().ok();
        self.state = Candidate::None;
        let known = n.filter(|n| self.known.binary_search(n).is_ok());
        if known.is_none() && self.attached {
            self.release(out);
            out.push_str(&self.candidate);
            self.candidate.clear();
            // An index it stays, and one right after it (`m[2][9]`) is attached to it.
            self.previous = '_';
            return;
        }
        self.previous = ']';
        match known {
            Some(n) => {
                self.release(out);
                let start = self.emitted + out.len();
                out.push_str(&self.candidate);
                self.markers.push(Marker {
                    n,
                    start,
                    end: start + self.candidate.len(),
                });
            }
            None => {
                self.dangling.push(n.unwrap_or(u32::MAX));
                self.whitespace.clear();
                self.whitespace_chars = 0;
            }
        }
        self.candidate.clear();
    }

    /// What looked like the start of a citation is text after all.
    fn release_candidate(&mut self, out: &mut String) {
        if self.candidate.is_empty() {
            return;
        }
        self.release(out);
        out.push_str(&self.candidate);
        self.candidate.clear();
        self.state = Candidate::None;
    }

    fn release(&mut self, out: &mut String) {
        out.push_str(&self.whitespace);
        self.whitespace.clear();
        self.whitespace_chars = 0;
        if self.state == Candidate::None {
            return;
        }
        // Only reached from `finish` with an unfinished candidate.
        out.push_str(&self.candidate);
        self.candidate.clear();
        self.state = Candidate::None;
    }
}

/// Scans a complete text: the text without its dangling citations, and the scanner that did it.
pub fn scan_all(text: &str, known: Vec<u32>) -> (String, MarkerScanner) {
    let mut scanner = MarkerScanner::new(known);
    let mut out = scanner.push(text);
    out.push_str(&scanner.finish());
    (out, scanner)
}
