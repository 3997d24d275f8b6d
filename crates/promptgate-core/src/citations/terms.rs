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

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

fn mix(hash: u64, c: char) -> u64 {
    let mut hash = hash;
    for byte in (c as u32).to_le_bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash
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

/// Calls `found` with each term of `text`, in order.
pub fn for_each_term(text: &str, mut found: impl FnMut(Term)) {
    let mut chars = text.char_indices().peekable();
    while let Some(&(_, c)) = chars.peek() {
        if digit_value(c).is_some() {
            found(Term::Number(read_number(&mut chars)));
        } else if is_separator(c) {
            chars.next();
        } else if is_unspaced(c) {
            read_unspaced(&mut chars, &mut found);
        } else {
            read_word(&mut chars, &mut found);
        }
    }
}

type Chars<'a> = std::iter::Peekable<std::str::CharIndices<'a>>;

fn read_word(chars: &mut Chars<'_>, found: &mut impl FnMut(Term)) {
    let mut hash = FNV_OFFSET;
    let mut len = 0usize;
    while let Some(&(_, c)) = chars.peek() {
        if is_separator(c) || is_unspaced(c) || digit_value(c).is_some() {
            break;
        }
        chars.next();
        if len < STEM_CHARS {
            for lower in c.to_lowercase() {
                hash = mix(hash, lower);
            }
        }
        len += 1;
    }
    let weight = match len {
        0 => return,
        1 | 2 => Weight::Slight,
        3 => Weight::Light,
        _ => Weight::Full,
    };
    found(Term::Word { hash, weight });
}

fn read_unspaced(chars: &mut Chars<'_>, found: &mut impl FnMut(Term)) {
    let mut previous: Option<char> = None;
    let mut pairs = 0;
    while let Some(&(_, c)) = chars.peek() {
        if !is_unspaced(c) {
            break;
        }
        chars.next();
        if let Some(p) = previous {
            let hash = mix(mix(FNV_OFFSET, p), c);
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
            hash: mix(FNV_OFFSET, single),
            weight: Weight::Light,
        });
    }
}

/// Reads digits with `.`/`,` separators (see the module header) and hashes the normalised number.
fn read_number(chars: &mut Chars<'_>) -> u64 {
    // Digit groups and whether each separator before a group is kept as the decimal point.
    let mut digits = String::new();
    let mut group_len = 0usize;
    let mut pending_separator: Option<usize> = None;
    loop {
        let Some(&(_, c)) = chars.peek() else { break };
        if let Some(value) = digit_value(c) {
            chars.next();
            digits.extend(char::from_digit(value, 10));
            group_len += 1;
            continue;
        }
        if matches!(c, '.' | ',') && group_len > 0 {
            // A separator counts only when a digit follows it.
            let mut ahead = chars.clone();
            ahead.next();
            if ahead.peek().is_some_and(|&(_, d)| digit_value(d).is_some()) {
                settle_separator(&mut digits, pending_separator, group_len);
                chars.next();
                pending_separator = Some(digits.len());
                digits.push('.');
                group_len = 0;
                continue;
            }
        }
        break;
    }
    settle_separator(&mut digits, pending_separator, group_len);
    let trimmed = if digits.contains('.') {
        digits.trim_end_matches('0').trim_end_matches('.')
    } else {
        digits.as_str()
    };
    let trimmed = trimmed.trim_start_matches('0');
    trimmed.chars().fold(mix(FNV_OFFSET, '#'), mix)
}

/// The separator at `at` ended a group of `group_len` digits: three digits make it a thousands
/// separator (dropped); otherwise it stays the decimal point.
fn settle_separator(digits: &mut String, at: Option<usize>, group_len: usize) {
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
