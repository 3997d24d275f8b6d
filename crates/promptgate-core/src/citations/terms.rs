//! The terms the support check compares: words and numbers of any script, hashed so that comparing
//! them allocates nothing.
//!
//! A word is a run of characters that are neither whitespace nor punctuation (so combining marks stay
//! inside their word, as in Devanagari), lowercased with Unicode's full mapping and cut to its first
//! [`STEM_CHARS`] characters: a crude stemmer that works the same in every inflecting language
//! ("measured"/"measures", "приливы"/"приливов"). Han ideographs and kana are written without spaces,
//! so their runs become overlapping pairs of characters (a pair with hiragana, mostly grammar, weighs
//! less). A number keeps its digits (any script's
//! decimal digits) with `.`/`,` read as a thousands separator before exactly three digits and as the
//! decimal point otherwise, so "1,250", "1.250" and "1250" are one number and "3,5" is "3.5".

/// Characters of a word that count; longer words are cut here.
pub const STEM_CHARS: usize = 6;

/// One term of a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Term {
    /// A word (or a pair of ideographs) and how much it can say: short words are mostly grammar.
    Word { hash: u64, weight: Weight },
    /// A number, by the hash of its normalised digits.
    Number(u64),
}

/// How much a word can carry, by its length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weight {
    /// One or two letters ("of", "à", "и").
    Slight,
    /// Three letters ("the", "und", "est").
    Light,
    Full,
}

impl Weight {
    pub fn factor(self) -> f32 {
        match self {
            Weight::Slight => 0.15,
            Weight::Light => 0.45,
            Weight::Full => 1.0,
        }
    }
}

/// Where a word's hash starts; pairs of ideographs and numbers start elsewhere, so they never
/// collide with a word.
const WORD_SEED: u64 = 0;
const PAIR_SEED: u64 = 0x9e37_79b9_7f4a_7c15;
const NUMBER_SEED: u64 = 0x6a09_e667_f3bc_c909;

/// Adds one character to a hash being built: a rotation and an xor, so the characters of a word
/// are packed rather than multiplied one by one (the page reading this serves is the check's cost).
fn pack(hash: u64, c: char) -> u64 {
    hash.rotate_left(11) ^ u64::from(c as u32)
}

/// Mixes a packed hash so that every bit depends on every character (the index's maps and filter
/// use both ends of it).
fn seal(hash: u64) -> u64 {
    let hash = (hash ^ 0xff51_afd7_ed55_8ccd).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    hash ^ (hash >> 31)
}

/// Whether `c` separates words: whitespace, and punctuation or symbols of the common blocks.
pub fn is_separator(c: char) -> bool {
    if c.is_ascii() {
        return !c.is_ascii_alphanumeric();
    }
    c.is_whitespace()
        || matches!(c as u32,
            0x00A0..=0x00BF | 0x00D7 | 0x00F7 // Latin-1 punctuation, ×, ÷
            | 0x2000..=0x2BFF // general punctuation, symbols, arrows, shapes
            | 0x3000..=0x3003 | 0x3008..=0x3020 | 0x30FB // CJK punctuation, brackets, the middle dot
            | 0xFE10..=0xFE6F // vertical and small forms
            | 0xFF01..=0xFF0F | 0xFF1A..=0xFF20 | 0xFF3B..=0xFF40 | 0xFF5B..=0xFF65)
}

/// Han ideographs and kana: scripts written without spaces between words.
fn is_unspaced(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2FFFF)
}

fn is_hiragana(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x309F)
}

/// The value of a decimal digit of any of the scripts commonly seen on the web.
fn digit_value(c: char) -> Option<u32> {
    let zero = match c as u32 {
        0x30..=0x39 => 0x30,
        0x660..=0x669 => 0x660,
        0x6F0..=0x6F9 => 0x6F0,
        0x966..=0x96F => 0x966,
        0x9E6..=0x9EF => 0x9E6,
        0xFF10..=0xFF19 => 0xFF10,
        _ => return None,
    };
    Some(c as u32 - zero)
}

/// The character starting at byte `at` of `text` (which is a character boundary).
fn char_at(text: &str, at: usize) -> char {
    text[at..].chars().next().unwrap_or(' ')
}

/// What reading a text finds, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Token {
    /// A term and the byte offset it starts at.
    Term(Term, usize),
    /// A sentence ends at this byte offset: after `.`, `!`, `?` or `;` followed by whitespace or
    /// the end, after their full-width forms and `。`, and at a line break.
    SentenceEnd(usize),
}

/// Calls `found` with each term of `text`, in order.
pub fn for_each_term(text: &str, mut found: impl FnMut(Term)) {
    for_each_token(text, |token| {
        if let Token::Term(term, _) = token {
            found(term);
        }
    });
}

/// Calls `found` with each term and sentence end of `text`, in order, in one pass. Works on bytes,
/// decoding only non-ASCII characters: most web text is mostly ASCII, and this runs over every page
/// a turn read.
pub fn for_each_token(text: &str, mut found: impl FnMut(Token)) {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let b = bytes[at];
        let start = at;
        let mut report = |term| found(Token::Term(term, start));
        if b.is_ascii_alphabetic() {
            at = read_ascii_word(text, at, &mut report);
        } else if b.is_ascii_digit() {
            at = read_number(text, at, &mut report);
        } else if b.is_ascii() {
            at += 1;
            let ends = match b {
                b'\n' => true,
                b'.' | b'!' | b'?' | b';' => text[at..].chars().next().is_none_or(char::is_whitespace),
                _ => false,
            };
            if ends {
                found(Token::SentenceEnd(at));
            }
        } else {
            let c = char_at(text, at);
            at = if digit_value(c).is_some() {
                read_number(text, at, &mut report)
            } else if is_separator(c) {
                if matches!(c, '。' | '！' | '？' | '；') {
                    found(Token::SentenceEnd(at + c.len_utf8()));
                }
                at + c.len_utf8()
            } else if is_unspaced(c) {
                read_unspaced(text, at, &mut report)
            } else {
                read_word(text, at, &mut report)
            };
        }
    }
}

/// A word of ASCII letters is read without decoding; one that goes on in another script is read
/// as any word.
fn read_ascii_word(text: &str, at: usize, found: &mut impl FnMut(Term)) -> usize {
    let bytes = text.as_bytes();
    let len = bytes[at..]
        .iter()
        .position(|b| !b.is_ascii_alphabetic())
        .unwrap_or(bytes.len() - at);
    let end = at + len;
    if bytes.get(end).is_some_and(|b| !b.is_ascii()) {
        return read_word(text, at, found);
    }
    let hash = bytes[at..end].iter().take(STEM_CHARS).fold(WORD_SEED, |hash, b| {
        pack(hash, char::from(b.to_ascii_lowercase()))
    });
    found(Term::Word {
        hash: seal(hash),
        weight: weight_of(len),
    });
    end
}

fn weight_of(chars: usize) -> Weight {
    match chars {
        0..=2 => Weight::Slight,
        3 => Weight::Light,
        _ => Weight::Full,
    }
}

/// Reads the word at `at`; returns where it ends.
fn read_word(text: &str, mut at: usize, found: &mut impl FnMut(Term)) -> usize {
    let bytes = text.as_bytes();
    let mut hash = WORD_SEED;
    let mut len = 0usize;
    while at < bytes.len() {
        let b = bytes[at];
        if b.is_ascii() {
            if !b.is_ascii_alphabetic() {
                break;
            }
            if len < STEM_CHARS {
                hash = pack(hash, char::from(b.to_ascii_lowercase()));
            }
            at += 1;
        } else {
            let c = char_at(text, at);
            if is_separator(c) || is_unspaced(c) || digit_value(c).is_some() {
                break;
            }
            if len < STEM_CHARS {
                for lower in c.to_lowercase() {
                    hash = pack(hash, lower);
                }
            }
            at += c.len_utf8();
        }
        len += 1;
    }
    if len > 0 {
        found(Term::Word {
            hash: seal(hash),
            weight: weight_of(len),
        });
    }
    at
}

/// Reads a run of ideographs and kana at `at` as pairs; returns where it ends.
fn read_unspaced(text: &str, mut at: usize, found: &mut impl FnMut(Term)) -> usize {
    let mut previous: Option<char> = None;
    let mut pairs = 0;
    while at < text.len() {
        let c = char_at(text, at);
        if !is_unspaced(c) {
            break;
        }
        at += c.len_utf8();
        if let Some(p) = previous {
            let hash = seal(pack(pack(PAIR_SEED, p), c));
            // Hiragana mostly spell grammar (particles, endings); kanji and katakana the content.
            let weight = if is_hiragana(p) || is_hiragana(c) {
                Weight::Light
            } else {
                Weight::Full
            };
            found(Term::Word { hash, weight });
            pairs += 1;
        }
        previous = Some(c);
    }
    if pairs == 0
        && let Some(single) = previous
    {
        found(Term::Word {
            hash: seal(pack(PAIR_SEED, single)),
            weight: Weight::Light,
        });
    }
    at
}

/// The most digits of a number that count; a longer one is told apart by these.
const MAX_NUMBER_DIGITS: usize = 40;

/// Digits of a number as read so far, without allocating.
struct NumberDigits {
    digits: [u8; MAX_NUMBER_DIGITS],
    len: usize,
}

impl NumberDigits {
    fn push(&mut self, digit: u8) {
        if self.len < MAX_NUMBER_DIGITS {
            self.digits[self.len] = digit;
            self.len += 1;
        }
    }

    fn remove(&mut self, at: usize) {
        if at < self.len {
            self.digits.copy_within(at + 1..self.len, at);
            self.len -= 1;
        }
    }

    fn as_slice(&self) -> &[u8] {
        &self.digits[..self.len]
    }
}

/// Reads digits with `.`/`,` separators (see the module header), reports the normalised number and
/// returns where it ends.
fn read_number(text: &str, mut at: usize, found: &mut impl FnMut(Term)) -> usize {
    let mut digits = NumberDigits {
        digits: [0; MAX_NUMBER_DIGITS],
        len: 0,
    };
    let mut group_len = 0usize;
    let mut pending_separator: Option<usize> = None;
    while at < text.len() {
        let b = text.as_bytes()[at];
        if b.is_ascii_digit() {
            digits.push(b);
            group_len += 1;
            at += 1;
            continue;
        }
        let c = char_at(text, at);
        if let Some(value) = digit_value(c) {
            digits.push(b'0' + value as u8);
            group_len += 1;
            at += c.len_utf8();
            continue;
        }
        // A separator counts only when a digit follows it.
        let next_is_digit = || digit_value(char_at(text, at + 1)).is_some();
        if matches!(c, '.' | ',') && group_len > 0 && at + 1 < text.len() && next_is_digit() {
            settle_separator(&mut digits, pending_separator, group_len);
            pending_separator = Some(digits.len);
            digits.push(b'.');
            group_len = 0;
            at += 1;
            continue;
        }
        break;
    }
    settle_separator(&mut digits, pending_separator, group_len);
    let mut kept = digits.as_slice();
    if kept.contains(&b'.') {
        while let [rest @ .., b'0'] = kept {
            kept = rest;
        }
        if let [rest @ .., b'.'] = kept {
            kept = rest;
        }
    }
    while let [b'0', rest @ ..] = kept {
        kept = rest;
    }
    let hash = kept
        .iter()
        .fold(NUMBER_SEED, |hash, &b| pack(hash, char::from(b)));
    let hash = seal(hash);
    found(Term::Number(hash));
    at
}

/// The separator at `at` ended a group of `group_len` digits: three digits make it a thousands
/// separator (dropped); otherwise it stays the decimal point.
fn settle_separator(digits: &mut NumberDigits, at: Option<usize>, group_len: usize) {
    if let Some(at) = at
        && group_len == 3
    {
        digits.remove(at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbers(text: &str) -> Vec<u64> {
        let mut out = Vec::new();
        for_each_term(text, |t| {
            if let Term::Number(n) = t {
                out.push(n);
            }
        });
        out
    }

    #[test]
    fn numbers_read_the_same_in_either_convention() {
        assert_eq!(numbers("1,250"), numbers("1250"));
        assert_eq!(numbers("1.250"), numbers("1250"));
        assert_eq!(numbers("3,5"), numbers("3.5"));
        assert_eq!(
            numbers("٣٫٥").len(),
            2,
            "the Arabic decimal sign is no separator we read"
        );
        assert_eq!(numbers("１２"), numbers("12"));
        assert_ne!(numbers("12"), numbers("13"));
        assert_eq!(numbers("2.50"), numbers("2.5"));
        assert_eq!(numbers("In 2024."), numbers("2024"));
    }

    #[test]
    fn words_are_lowercased_and_cut() {
        let mut words = Vec::new();
        for_each_term("Gezeiten GEZEITENTABELLE straße STRASSE", |t| words.push(t));
        assert_eq!(words[0], words[1], "both cut to 'gezeit'");
        assert_eq!(words.len(), 4);
    }
}
