//! A source's text as the support check reads it: split into sentences, with an index from each
//! term to the sentences that contain it. A passage is two neighbouring sentences, so a claim whose
//! facts the page spreads over a sentence break is still matched.

use std::collections::HashMap;
use std::ops::Range;

use super::terms::{Term, Weight, for_each_term};

/// One source text, indexed.
#[derive(Debug, Clone)]
pub struct IndexedText<'a> {
    text: &'a str,
    /// Byte ranges of the sentences.
    sentences: Vec<Range<usize>>,
    /// Each word or number to the sentences containing it, ascending, no repeats.
    postings: HashMap<u64, Vec<u32>>,
}

/// Where a sentence ends: after `.`, `!`, `?` or `;` followed by whitespace, after their
/// full-width forms and `。`, and at line breaks.
pub fn sentence_ranges(text: &str) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        let ends = match c {
            '\n' => true,
            '.' | '!' | '?' | ';' => next.is_none_or(char::is_whitespace),
            '。' | '！' | '？' | '；' => true,
            _ => false,
        };
        if ends {
            let end = at + c.len_utf8();
            push_trimmed(text, start..end, &mut ranges);
            start = end;
        }
    }
    push_trimmed(text, start..text.len(), &mut ranges);
    ranges
}

fn push_trimmed(text: &str, range: Range<usize>, out: &mut Vec<Range<usize>>) {
    let piece = &text[range.clone()];
    let leading = piece.len() - piece.trim_start().len();
    let trailing = piece.len() - piece.trim_end().len();
    if leading + trailing < piece.len() {
        out.push(range.start + leading..range.end - trailing);
    }
}

/// The key of a term in the postings: words and numbers never collide, as numbers hash with a
/// marker character first.
pub fn term_key(term: Term) -> (u64, Weight) {
    match term {
        Term::Word { hash, weight } => (hash, weight),
        Term::Number(hash) => (hash, Weight::Full),
    }
}

impl<'a> IndexedText<'a> {
    pub fn new(text: &'a str) -> Self {
        let sentences = sentence_ranges(text);
        let mut postings: HashMap<u64, Vec<u32>> = HashMap::new();
        for (at, range) in sentences.iter().enumerate() {
            let at = at as u32;
            for_each_term(&text[range.clone()], |term| {
                let list = postings.entry(term_key(term).0).or_default();
                if list.last() != Some(&at) {
                    list.push(at);
                }
            });
        }
        Self {
            text,
            sentences,
            postings,
        }
    }

    pub fn sentence_count(&self) -> usize {
        self.sentences.len()
    }

    /// The sentences containing a term.
    pub fn sentences_with(&self, key: u64) -> &[u32] {
        self.postings.get(&key).map_or(&[], Vec::as_slice)
    }

    /// Passages are numbered by their first sentence; the last one is a single sentence.
    pub fn passage_count(&self) -> usize {
        self.sentences
            .len()
            .saturating_sub(1)
            .max(1)
            .min(self.sentences.len())
    }

    /// The text of passage `at`.
    pub fn passage(&self, at: usize) -> &'a str {
        let Some(first) = self.sentences.get(at) else {
            return "";
        };
        let last = self.sentences.get(at + 1).unwrap_or(first);
        &self.text[first.start..last.end]
    }
}
