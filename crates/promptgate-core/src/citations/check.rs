//! Every citation of a finished text part, resolved and checked: the source it names, the claim it
//! closes (the sentence or clause before it), and how well the text the turn saw of that source
//! supports the claim.

use std::collections::HashMap;
use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::markers::Marker;
use super::passages::{IndexedText, KeySet, ReadText};
use super::support::{Claim, SupportClass, check_read_claim};

/// A source as the check needs it: what the turn saw of it.
#[derive(Debug, Clone, Copy)]
pub struct SeenSource<'a> {
    pub index: u32,
    pub url: &'a str,
    pub title: &'a str,
    /// The fetched page's text, or the search snippet when the page was never fetched.
    pub text: &'a str,
    pub fetched: bool,
    /// `text` read when it arrived; `None` reads it now.
    pub read: Option<&'a ReadText>,
}

/// One checked citation, as the answer's metadata lists it. Offsets count UTF-16 code units of the
/// text part (what JavaScript's string indices count), so a browser can slice the text with them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Citation {
    /// The cited source number, `[n]`.
    pub n: u32,
    pub url: String,
    pub title: String,
    /// Which text part of the answer (0 = the first) the citation is in.
    pub text_part: u32,
    /// The claim the citation closes.
    pub start: usize,
    pub end: usize,
    /// The `[n]` marker itself.
    pub marker_start: usize,
    pub marker_end: usize,
    pub class: SupportClass,
    /// The turn only saw the source as a search result: the claim was checked against its snippet.
    pub snippet_only: bool,
    /// The best-matching passage of what the turn saw of the source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passage: Option<String>,
    /// The class is the reviewing model's verdict rather than the check's (see [`super::review`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reviewed: bool,
}

/// Checks the kept `markers` of `text` (one text part) against `sources`. Each cited source is read
/// once, keeping only the terms of the claims that cite it.
pub fn check_citations(
    text: &str,
    text_part: u32,
    markers: &[Marker],
    sources: &[SeenSource<'_>],
) -> Vec<Citation> {
    let claims: Vec<Option<(&SeenSource<'_>, Range<usize>, Claim)>> = markers
        .iter()
        .enumerate()
        .map(|(at, marker)| {
            let source = sources.iter().find(|s| s.index == marker.n)?;
            let range = claim_range(text, &markers[..at], marker.start);
            let claim = Claim::read(&text[range.clone()]);
            Some((source, range, claim))
        })
        .collect();
    let mut wanted: HashMap<u32, KeySet> = HashMap::new();
    for (source, _, claim) in claims.iter().flatten() {
        wanted.entry(source.index).or_default().extend(claim.keys());
    }
    let indexed: HashMap<u32, IndexedText<'_>> = wanted
        .iter()
        .filter_map(|(index, keys)| {
            let source = sources.iter().find(|s| s.index == *index)?;
            let indexed = match source.read {
                Some(read) => IndexedText::from_read(source.text, read, keys),
                None => IndexedText::with_terms(source.text, keys),
            };
            Some((*index, indexed))
        })
        .collect();
    let mut offsets = Utf16Offsets::new(text);
    let mut citations = Vec::with_capacity(markers.len());
    for (marker, checked) in markers.iter().zip(claims) {
        let Some((source, claim, terms)) = checked else {
            continue;
        };
        let Some(index) = indexed.get(&source.index) else {
            continue;
        };
        let support = check_read_claim(&terms, index);
        citations.push(Citation {
            n: marker.n,
            url: source.url.to_owned(),
            title: source.title.to_owned(),
            text_part,
            start: offsets.at(claim.start),
            end: offsets.at(claim.end),
            marker_start: offsets.at(marker.start),
            marker_end: offsets.at(marker.end),
            class: support.class,
            snippet_only: !source.fetched,
            passage: support.passage,
            reviewed: false,
        });
    }
    citations
}

/// The claim before a marker at `marker_start`: back over whitespace, the citations right before it
/// (`[1][2]` close the same claim) and one closing punctuation mark, then to the previous sentence
/// end, line break or citation.
pub fn claim_range(text: &str, earlier: &[Marker], marker_start: usize) -> std::ops::Range<usize> {
    let mut end = marker_start;
    let mut previous = earlier.iter().rev().peekable();
    loop {
        let trimmed = text[..end].trim_end().len();
        match previous.peek() {
            Some(m) if m.end == trimmed => {
                end = m.start;
                previous.next();
            }
            _ => {
                end = trimmed;
                break;
            }
        }
    }
    let body = &text[..end];
    let body_end = body
        .trim_end_matches(['.', '!', '?', ';', ':', ',', '。', '！', '？', '；', '、', '，'])
        .len();
    let floor = previous.next().map_or(0, |m| m.end);
    let start = sentence_start(&text[floor..body_end]) + floor;
    let claim = &text[start..body_end];
    let leading = claim.len()
        - claim
            .trim_start_matches(|c: char| c.is_whitespace() || c == ',')
            .len();
    (start + leading)..body_end
}

/// Where the last sentence of `text` starts.
fn sentence_start(text: &str) -> usize {
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        let ends = match c {
            '\n' => true,
            '.' | '!' | '?' | ';' => next.is_some_and(char::is_whitespace),
            '。' | '！' | '？' | '；' => true,
            _ => false,
        };
        if ends {
            start = at + c.len_utf8();
        }
    }
    start
}

/// Byte offsets to UTF-16 offsets, for positions asked in (mostly) rising order.
struct Utf16Offsets<'a> {
    text: &'a str,
    byte: usize,
    utf16: usize,
}

impl<'a> Utf16Offsets<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            byte: 0,
            utf16: 0,
        }
    }

    fn at(&mut self, byte: usize) -> usize {
        if byte < self.byte {
            self.byte = 0;
            self.utf16 = 0;
        }
        let byte = byte.min(self.text.len());
        if let Some(piece) = self.text.get(self.byte..byte) {
            self.utf16 += piece.encode_utf16().count();
            self.byte = byte;
        }
        self.utf16
    }
}

/// The answer-wide counts stored beside the citations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CitationCounts {
    /// Citations kept (each `[n]` occurrence).
    pub total: u32,
    pub supported: u32,
    pub weak: u32,
    pub unsupported: u32,
    pub snippet_only: u32,
    /// Citations removed because they named no source.
    pub dangling: u32,
}

impl CitationCounts {
    pub fn add(&mut self, citations: &[Citation], dangling: usize) {
        for citation in citations {
            self.total += 1;
            match citation.class {
                SupportClass::Supported => self.supported += 1,
                SupportClass::Weak => self.weak += 1,
                SupportClass::Unsupported => self.unsupported += 1,
            }
            if citation.snippet_only {
                self.snippet_only += 1;
            }
        }
        self.dangling += u32::try_from(dangling).unwrap_or(u32::MAX);
    }
}
