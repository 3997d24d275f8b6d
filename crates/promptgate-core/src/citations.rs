//! Citations in model text: removing model-native `【N†title】` / `【N】` markers (they point into the
//! model's own browsing context, not into our source registry) and reading the `[N]` citations that do
//! point into it.
//!
//! Cleanup runs as two passes, first the titled form, then the bare form; each removes the marker
//! together with any whitespace right before it (newlines included) and keeps whitespace after it. A
//! marker needs digits (`【税込み】` is ordinary text). To keep memory bounded, a marker is recognised only
//! with at most [`MAX_MARKER_DIGITS`] digits and a title of at most [`MAX_MARKER_TITLE_CHARS`]
//! characters, and at most [`MAX_EATEN_WHITESPACE`] whitespace characters before it are removed.
//!
//! The `[N]` citations that remain are checked at the end of each text part: [`markers`] removes
//! those that name no source as the text streams, and [`check`] ties each kept one to its source and
//! classes how well what the turn saw of that source supports the claim ([`support`]).

use std::collections::{HashSet, VecDeque};
use std::sync::LazyLock;

use regex::Regex;

pub mod check;
pub mod markers;
pub mod passages;
pub mod review;
pub mod support;
pub mod terms;

pub const MAX_MARKER_DIGITS: usize = 9;
pub const MAX_MARKER_TITLE_CHARS: usize = 200;
pub const MAX_EATEN_WHITESPACE: usize = 256;

const OPEN: char = '【';
const CLOSE: char = '】';
const DAGGER: char = '†';

/// Removes native citation markers from a text that arrives in pieces. Whatever `push` returns is final;
/// text that may still turn out to be (the start of) a marker is held back until it resolves or
/// [`CitationCleaner::finish`] is called. Splitting the input differently never changes the output.
#[derive(Debug, Clone)]
pub struct CitationCleaner {
    titled: MarkerPass,
    bare: MarkerPass,
}

impl Default for CitationCleaner {
    fn default() -> Self {
        Self::new()
    }
}

impl CitationCleaner {
    pub fn new() -> Self {
        Self {
            titled: MarkerPass::new(MarkerForm::Titled),
            bare: MarkerPass::new(MarkerForm::Bare),
        }
    }

    /// Feeds the next piece; returns the text that is now safe to show.
    pub fn push(&mut self, piece: &str) -> String {
        let mut first = String::with_capacity(piece.len());
        self.titled.feed_str(piece, &mut first);
        // Most pieces (a streamed token each) leave the second pass nothing to do: skipping it
        // saves a copy of every token.
        if self.bare.passes_through(&first) {
            return first;
        }
        let mut out = String::with_capacity(first.len());
        self.bare.feed_str(&first, &mut out);
        out
    }

    /// Ends the text; returns everything still held back.
    pub fn finish(&mut self) -> String {
        let mut first = String::new();
        self.titled.finish(&mut first);
        let mut out = String::new();
        self.bare.feed_str(&first, &mut out);
        self.bare.finish(&mut out);
        out
    }

    /// Whether text is currently held back.
    pub fn is_holding(&self) -> bool {
        self.titled.is_holding() || self.bare.is_holding()
    }
}

/// Cleans a complete text.
pub fn clean_all(text: &str) -> String {
    let mut cleaner = CitationCleaner::new();
    let mut out = cleaner.push(text);
    out.push_str(&cleaner.finish());
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MarkerForm {
    /// `【N†title】`
    Titled,
    /// `【N】`
    Bare,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Not inside a marker; only whitespace may be held.
    Text,
    /// Seen `【`.
    Open,
    /// Seen `【` and this many digits.
    Digits(usize),
    /// Seen `【N†` and this many title characters.
    Title(usize),
}

/// One pass: a leftmost matcher for `\s{0,256}【[0-9]{1,9}†[^】]{0,200}】` (titled) or
/// `\s{0,256}【[0-9]{1,9}】` (bare), working character by character.
#[derive(Debug, Clone)]
struct MarkerPass {
    form: MarkerForm,
    state: State,
    /// Whitespace that would be eaten if a marker follows; only the last `MAX_EATEN_WHITESPACE` are
    /// held, earlier ones can never be part of a match.
    whitespace: VecDeque<char>,
    /// The marker candidate, starting with `【`.
    marker: String,
}

impl MarkerPass {
    fn new(form: MarkerForm) -> Self {
        Self {
            form,
            state: State::Text,
            whitespace: VecDeque::new(),
            marker: String::new(),
        }
    }

    fn is_holding(&self) -> bool {
        !self.whitespace.is_empty() || !self.marker.is_empty()
    }

    /// Whether feeding `text` would pass it on unchanged and leave nothing held: outside a
    /// candidate, holding nothing, no `【` to start one, and no whitespace at the end to hold.
    fn passes_through(&self, text: &str) -> bool {
        self.state == State::Text
            && !self.is_holding()
            && !text.contains(OPEN)
            && !text.ends_with(char::is_whitespace)
    }

    fn feed_str(&mut self, text: &str, out: &mut String) {
        let mut rest = text;
        while !rest.is_empty() {
            // Outside a candidate, a run without `【` and whitespace can neither start a marker nor
            // be eaten by one: it passes whole (what `feed` does for each of its characters).
            if self.state == State::Text {
                let run = rest
                    .find(|c: char| c == OPEN || c.is_whitespace())
                    .unwrap_or(rest.len());
                if run > 0 {
                    out.extend(self.whitespace.drain(..));
                    out.push_str(&rest[..run]);
                    rest = &rest[run..];
                    continue;
                }
            }
            let mut chars = rest.chars();
            if let Some(c) = chars.next() {
                self.feed(c, out);
            }
            rest = chars.as_str();
        }
    }

    fn feed(&mut self, c: char, out: &mut String) {
        match self.state {
            State::Text => {
                if c == OPEN {
                    self.marker.push(c);
                    self.state = State::Open;
                } else if c.is_whitespace() {
                    self.whitespace.push_back(c);
                    if self.whitespace.len() > MAX_EATEN_WHITESPACE {
                        out.extend(self.whitespace.pop_front());
                    }
                } else {
                    out.extend(self.whitespace.drain(..));
                    out.push(c);
                }
            }
            State::Open if c.is_ascii_digit() => self.extend_marker(c, State::Digits(1)),
            State::Digits(n) if c.is_ascii_digit() && n < MAX_MARKER_DIGITS => {
                self.extend_marker(c, State::Digits(n + 1))
            }
            State::Digits(_) if c == CLOSE && self.form == MarkerForm::Bare => self.matched(),
            State::Digits(_) if c == DAGGER && self.form == MarkerForm::Titled => {
                self.extend_marker(c, State::Title(0))
            }
            State::Title(_) if c == CLOSE => self.matched(),
            State::Title(n) if n < MAX_MARKER_TITLE_CHARS => self.extend_marker(c, State::Title(n + 1)),
            State::Open | State::Digits(_) | State::Title(_) => self.no_match(c, out),
        }
    }

    fn extend_marker(&mut self, c: char, next: State) {
        self.marker.push(c);
        self.state = next;
    }

    fn matched(&mut self) {
        self.whitespace.clear();
        self.marker.clear();
        self.state = State::Text;
    }

    /// The candidate failed at `c`. No match can start in the held whitespace or at the `【` (the
    /// marker part is the same for each of those starts), so they are released; a match may still start
    /// inside the rest, so that is fed again.
    fn no_match(&mut self, c: char, out: &mut String) {
        out.extend(self.whitespace.drain(..));
        let candidate = std::mem::take(&mut self.marker);
        self.state = State::Text;
        let mut rest = candidate.chars();
        out.extend(rest.next());
        for held in rest {
            self.feed(held, out);
        }
        self.feed(c, out);
    }

    fn finish(&mut self, out: &mut String) {
        // Every marker ends with `】`, and nothing held contains one, so nothing held can still match.
        out.extend(self.whitespace.drain(..));
        out.push_str(&std::mem::take(&mut self.marker));
        self.state = State::Text;
    }
}

static CITATION: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"\[[0-9]+\]|【[0-9]+】").ok());

/// The distinct citations in `text`, first-seen order: every `[N]` and `【N】` (`[1]` and `【1】` are
/// different; `【2†title】` is not a citation; `[0]` is).
pub fn extract_citations(text: &str) -> Vec<String> {
    let Some(re) = CITATION.as_ref() else {
        return Vec::new();
    };
    let mut seen = HashSet::new();
    re.find_iter(text)
        .map(|m| m.as_str())
        .filter(|m| seen.insert(*m))
        .map(str::to_owned)
        .collect()
}

/// The numbers of the `[N]` citations in `text` (a markdown link `[N](url)` is not a citation), distinct,
/// first-seen order.
pub fn cited_indexes(text: &str) -> Vec<u64> {
    let mut seen = HashSet::new();
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let closes = digits > 0 && after[digits..].starts_with(']');
        if closes
            && !after[digits + 1..].starts_with('(')
            && let Ok(n) = after[..digits].parse::<u64>()
            && seen.insert(n)
        {
            found.push(n);
        }
        rest = after;
    }
    found
}

/// Citations that point at no source: `[0]` and numbers above `registry_len`.
pub fn dangling_citations(text: &str, registry_len: usize) -> Vec<u64> {
    let len = registry_len as u64;
    cited_indexes(text)
        .into_iter()
        .filter(|&n| n == 0 || n > len)
        .collect()
}

/// Source numbers `1..=registry_len` that `text` never cites.
pub fn uncited_indexes(text: &str, registry_len: usize) -> Vec<u64> {
    let cited: HashSet<u64> = cited_indexes(text).into_iter().collect();
    (1..=registry_len as u64).filter(|n| !cited.contains(n)).collect()
}
