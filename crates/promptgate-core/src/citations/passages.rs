//! A source's text as the support check reads it: split into sentences, with an index from each
//! term to the sentences that contain it. A passage is two neighbouring sentences, so a claim whose
//! facts the page spreads over a sentence break is still matched.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Range;

use super::terms::{Term, Token, Weight, for_each_token};

/// Keys that are hashes already (the terms' FNV hashes) go into maps as they are.
#[derive(Debug, Default, Clone, Copy)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn write_u64(&mut self, key: u64) {
        self.0 = key;
    }
}

pub type KeyMap<V> = HashMap<u64, V, BuildHasherDefault<KeyHasher>>;
pub type KeySet = HashSet<u64, BuildHasherDefault<KeyHasher>>;

/// The terms an index keeps, with a 1,024-bit filter in front of the set: most words of a page are
/// in no claim, and one bit test turns nearly all of them away.
struct Wanted<'a> {
    set: &'a KeySet,
    bits: [u64; 16],
}

impl<'a> Wanted<'a> {
    fn new(set: &'a KeySet) -> Self {
        let mut bits = [0u64; 16];
        for &key in set {
            let bit = Self::bit(key);
            bits[bit / 64] |= 1 << (bit % 64);
        }
        Self { set, bits }
    }

    /// The top bits: the keys are FNV products, whose high bits are the best mixed.
    fn bit(key: u64) -> usize {
        (key >> 54) as usize
    }

    fn contains(&self, key: u64) -> bool {
        let bit = Self::bit(key);
        self.bits[bit / 64] & (1 << (bit % 64)) != 0 && self.set.contains(&key)
    }
}

/// A source text read once: its sentences, and each term's key with the sentence it is in. Reading
/// is most of a check's cost, so a page read when it arrives (off the async workers, in the fetch)
/// is indexed for every later check of the turn without being read again.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadText {
    /// Byte ranges of the sentences.
    sentences: Vec<Range<usize>>,
    /// Every term's key and sentence, in the order of the text.
    terms: Vec<(u64, u32)>,
}

impl ReadText {
    pub fn new(text: &str) -> Self {
        let mut sentences: Vec<Range<usize>> = Vec::new();
        let mut terms = Vec::with_capacity(text.len() / 6);
        // Where the open sentence's first term starts; a stretch without terms is no sentence.
        let mut open: Option<usize> = None;
        for_each_token(text, |token| match token {
            Token::Term(term, start) => {
                open.get_or_insert(start);
                terms.push((term_key(term).0, sentences.len() as u32));
            }
            Token::SentenceEnd(end) => {
                if let Some(start) = open.take() {
                    sentences.push(start..end);
                }
            }
        });
        if let Some(start) = open {
            sentences.push(start..text.trim_end().len());
        }
        Self { sentences, terms }
    }
}

/// One source text, indexed.
#[derive(Debug, Clone)]
pub struct IndexedText<'a> {
    text: &'a str,
    /// Byte ranges of the sentences.
    sentences: Cow<'a, [Range<usize>]>,
    /// Each word or number to the sentences containing it, ascending, no repeats.
    postings: KeyMap<Vec<u32>>,
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
    /// Indexes every term of `text`.
    pub fn new(text: &'a str) -> Self {
        let read = ReadText::new(text);
        let postings = postings(&read, None);
        Self {
            text,
            sentences: Cow::Owned(read.sentences),
            postings,
        }
    }

    /// Indexes only the terms in `wanted` (those of the claims that cite this text): the text is
    /// still read whole, but nothing is kept of the rest.
    pub fn with_terms(text: &'a str, wanted: &KeySet) -> Self {
        let read = ReadText::new(text);
        let postings = postings(&read, Some(wanted));
        Self {
            text,
            sentences: Cow::Owned(read.sentences),
            postings,
        }
    }

    /// As [`with_terms`](Self::with_terms), from `text` read before (`read` must be its reading).
    pub fn from_read(text: &'a str, read: &'a ReadText, wanted: &KeySet) -> Self {
        Self {
            text,
            sentences: Cow::Borrowed(&read.sentences),
            postings: postings(read, Some(wanted)),
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

/// Each kept term to the sentences containing it, ascending, no repeats.
fn postings(read: &ReadText, wanted: Option<&KeySet>) -> KeyMap<Vec<u32>> {
    let wanted = wanted.map(Wanted::new);
    let mut postings: KeyMap<Vec<u32>> = KeyMap::with_capacity_and_hasher(
        wanted.as_ref().map_or(256, |wanted| wanted.set.len()),
        Default::default(),
    );
    for &(key, at) in &read.terms {
        if wanted.as_ref().is_some_and(|wanted| !wanted.contains(key)) {
            continue;
        }
        let list = postings.entry(key).or_default();
        if list.last() != Some(&at) {
            list.push(at);
        }
    }
    postings
}
