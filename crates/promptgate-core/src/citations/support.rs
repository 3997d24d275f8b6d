//! Does the text a source showed the turn say what a claim says? A deterministic comparison, no
//! model: the claim's words weighted by how rare they are in the source (a word in every sentence
//! of the page tells nothing; in one it points at that sentence) and by length (short words are
//! mostly grammar, in any language), its numbers, and its quoted phrases, against each passage of
//! two neighbouring sentences. The best passage decides the class.

use serde::{Deserialize, Serialize};

use super::passages::{IndexedText, term_key};
use super::terms::{Term, Weight, for_each_term};
use crate::tools::text::truncate_chars;

/// The most characters of a passage that are kept with a citation.
pub const PASSAGE_CHARS: usize = 320;
/// Weighted share of the claim's words a passage must contain for `supported`…
pub const SUPPORTED_COVERAGE: f32 = 0.6;
/// …and for `weak`.
pub const WEAK_COVERAGE: f32 = 0.4;
/// What a claim word found elsewhere on the page counts, against one found in the passage.
const ELSEWHERE: f32 = 0.5;

/// How well the cited source backs a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SupportClass {
    Unsupported,
    Weak,
    Supported,
}

impl SupportClass {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Supported => "supported",
            Self::Weak => "weak",
            Self::Unsupported => "unsupported",
        }
    }
}

/// The verdict on one claim.
#[derive(Debug, Clone, PartialEq)]
pub struct Support {
    pub class: SupportClass,
    /// The passage that matched best, cut to [`PASSAGE_CHARS`]; `None` when nothing matched.
    pub passage: Option<String>,
    /// Weighted share of the claim's words found in that passage, 0 to 1.
    pub coverage: f32,
}

impl Support {
    fn none() -> Self {
        Self {
            class: SupportClass::Unsupported,
            passage: None,
            coverage: 0.0,
        }
    }
}

/// The claim's terms, with repeats removed.
#[derive(Debug, Clone, Default)]
pub struct Claim {
    words: Vec<(u64, f32)>,
    numbers: Vec<u64>,
    quotes: Vec<String>,
}

impl Claim {
    pub fn read(claim: &str) -> Self {
        let mut words: Vec<(u64, f32)> = Vec::new();
        let mut numbers = Vec::new();
        for_each_term(claim, |term| match term {
            Term::Number(hash) => {
                if !numbers.contains(&hash) {
                    numbers.push(hash);
                }
            }
            // Words of one or two letters are grammar in nearly every language; they would only
            // add weight that every passage shares.
            Term::Word {
                weight: Weight::Slight,
                ..
            } => {}
            Term::Word { .. } => {
                let (hash, weight) = term_key(term);
                if !words.iter().any(|(h, _)| *h == hash) {
                    words.push((hash, weight.factor()));
                }
            }
        });
        Self {
            words,
            numbers,
            quotes: quoted_phrases(claim),
        }
    }
}

impl Claim {
    /// The keys of the claim's words and numbers, which are all a source's index needs to hold.
    pub fn keys(&self) -> impl Iterator<Item = u64> + '_ {
        self.words
            .iter()
            .map(|(hash, _)| *hash)
            .chain(self.numbers.iter().copied())
    }
}

/// Checks one claim against one source's indexed text.
pub fn check_claim(claim: &str, source: &IndexedText<'_>) -> Support {
    check_read_claim(&Claim::read(claim), source)
}

/// [`check_claim`] for a claim already read.
pub fn check_read_claim(claim: &Claim, source: &IndexedText<'_>) -> Support {
    let passages = source.passage_count();
    if passages == 0 || (claim.words.is_empty() && claim.numbers.is_empty()) {
        return Support::none();
    }
    let sentences = source.sentence_count() as f32;
    let mut word_score = vec![0f32; passages];
    let mut number_hits = vec![0u32; passages];
    let mut total = 0f32;
    // What every passage scores for the claim words found elsewhere on the page.
    let mut everywhere = 0f32;
    for &(hash, factor) in &claim.words {
        let found_in = source.sentences_with(hash);
        // Rarity: 1 for a word in one sentence (or none), falling towards 0 for one in all of them.
        let df = found_in.len().max(1) as f32;
        let rarity = (1.0 + sentences / df).ln() / (1.0 + sentences).ln().max(f32::EPSILON);
        let weight = factor * rarity.clamp(0.05, 1.0);
        total += weight;
        // A word the page has, but not in this passage, counts half: pages name their subject
        // once and then write about it ("It opened in 2017").
        let elsewhere = if found_in.is_empty() {
            0.0
        } else {
            weight * ELSEWHERE
        };
        everywhere += elsewhere;
        add_to_windows(found_in, passages, |at| word_score[at] += weight - elsewhere);
    }
    for &hash in &claim.numbers {
        add_to_windows(source.sentences_with(hash), passages, |at| number_hits[at] += 1);
    }
    let number_share =
        |at: usize| (!claim.numbers.is_empty()).then(|| number_hits[at] as f32 / claim.numbers.len() as f32);
    let coverage = |at: usize| {
        if total > 0.0 {
            (word_score[at] + everywhere) / total
        } else {
            0.0
        }
    };
    let best = (0..passages)
        .max_by(|&a, &b| {
            let score = |at| coverage(at) + 0.5 * number_share(at).unwrap_or(0.0);
            score(a).total_cmp(&score(b)).then(b.cmp(&a))
        })
        .unwrap_or(0);
    let text = source.passage(best);
    let class = classify(
        coverage(best),
        number_share(best),
        quotes_found(&claim.quotes, text),
    );
    let matched = coverage(best) > 0.0 || number_share(best).is_some_and(|share| share > 0.0);
    Support {
        class,
        passage: matched.then(|| truncate_chars(text, PASSAGE_CHARS, "…")),
        coverage: coverage(best),
    }
}

/// Adds to every passage (two sentences from `at`) that holds one of `sentences`, once each.
fn add_to_windows(sentences: &[u32], passages: usize, mut add: impl FnMut(usize)) {
    let mut last: Option<usize> = None;
    for &sentence in sentences {
        let sentence = sentence as usize;
        for window in [sentence.checked_sub(1), Some(sentence)].into_iter().flatten() {
            if window < passages && last.is_none_or(|l| window > l) {
                add(window);
                last = Some(window);
            }
        }
    }
}

/// Whether all, some or none of the claim's quoted phrases occur in the passage; `None` when the
/// claim quotes nothing.
fn quotes_found(quotes: &[String], passage: &str) -> Option<f32> {
    if quotes.is_empty() {
        return None;
    }
    let haystack = normalise(passage);
    let found = quotes.iter().filter(|q| haystack.contains(q.as_str())).count();
    Some(found as f32 / quotes.len() as f32)
}

fn classify(coverage: f32, numbers: Option<f32>, quotes: Option<f32>) -> SupportClass {
    let mut class = if coverage >= SUPPORTED_COVERAGE {
        SupportClass::Supported
    } else if coverage >= WEAK_COVERAGE {
        SupportClass::Weak
    } else {
        SupportClass::Unsupported
    };
    // A quotation found word for word is the strongest evidence there is.
    if quotes == Some(1.0) && coverage >= WEAK_COVERAGE {
        class = SupportClass::Supported;
    }
    // A number or a quotation the passage does not have: at best weak; with none of them there,
    // the claim's most checkable part is not backed, whatever the words share.
    for share in [numbers, quotes].into_iter().flatten() {
        if share < 1.0 {
            class = class.min(SupportClass::Weak);
        }
        if share == 0.0 {
            class = SupportClass::Unsupported;
        }
    }
    class
}

/// Lowercased words joined by single spaces: quotes match across case, punctuation and line breaks.
fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split(super::terms::is_separator).filter(|w| !w.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    out
}

/// Phrases of two or more words the claim puts in quotation marks (`"…"`, `“…”`, `„…“`, `«…»`,
/// `「…」`, `『…』`), normalised.
fn quoted_phrases(claim: &str) -> Vec<String> {
    const PAIRS: [(char, char); 6] = [
        ('"', '"'),
        ('“', '”'),
        ('„', '“'),
        ('«', '»'),
        ('「', '」'),
        ('『', '』'),
    ];
    let mut phrases = Vec::new();
    for (open, close) in PAIRS {
        let mut rest = claim;
        while let Some(at) = rest.find(open) {
            let after = &rest[at + open.len_utf8()..];
            let Some(end) = after.find(close) else { break };
            let phrase = normalise(&after[..end]);
            let unspaced = phrase.chars().count() >= 4 && !phrase.contains(' ');
            if phrase.contains(' ') || unspaced {
                phrases.push(phrase);
            }
            rest = &after[end + close.len_utf8()..];
        }
    }
    phrases
}
