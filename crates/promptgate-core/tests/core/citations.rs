//! Model-native citation markers removed from text, whole or streamed in pieces.

use promptgate_core::citations::{
    CitationCleaner, MAX_EATEN_WHITESPACE, MAX_MARKER_TITLE_CHARS, cited_indexes, clean_all,
    dangling_citations, extract_citations, uncited_indexes,
};
use proptest::prelude::*;
use regex::Regex;
use std::sync::LazyLock;

#[test]
fn titled_and_bare_markers_are_removed_with_the_whitespace_before_them() {
    assert_eq!(clean_all("Paris is large 【3†Wikipedia】."), "Paris is large.");
    assert_eq!(clean_all("Paris is large 【3】."), "Paris is large.");
    assert_eq!(clean_all("first\n\n【12†notes】second"), "firstsecond");
    assert_eq!(clean_all("see【1†】 then"), "see then");
}

#[test]
fn whitespace_after_a_marker_is_kept() {
    assert_eq!(clean_all("one【1】  two"), "one  two");
    assert_eq!(clean_all("one 【1】\nnext line"), "one\nnext line");
}

#[test]
fn brackets_without_digits_are_ordinary_text() {
    for text in [
        "価格【税込み】です",
        "【】",
        "【x】",
        "【1x】",
        "【 1】",
        "【†a】",
    ] {
        assert_eq!(clean_all(text), text);
    }
}

#[test]
fn ascii_citations_are_untouched() {
    assert_eq!(clean_all("Rust is fast [1][2]."), "Rust is fast [1][2].");
}

#[test]
fn a_titled_pass_runs_before_the_bare_pass() {
    // The titled marker's removal joins `【` and `1】` into a bare marker, which the second pass removes.
    assert_eq!(clean_all("a 【【1†x】1】b"), "ab");
    assert_eq!(clean_all("【1【2】"), "【1");
}

#[test]
fn a_streamed_marker_is_never_shown_in_part() {
    let mut cleaner = CitationCleaner::new();
    assert_eq!(cleaner.push("The answer is 42 "), "The answer is 42");
    assert!(cleaner.is_holding());
    assert_eq!(cleaner.push("【"), "");
    assert_eq!(cleaner.push("4†Hitch"), "");
    assert_eq!(cleaner.push("hiker】, as"), ", as");
    assert_eq!(cleaner.push(" known."), " known.");
    assert_eq!(cleaner.finish(), "");
}

#[test]
fn held_text_that_turns_out_not_to_be_a_marker_is_released() {
    let mut cleaner = CitationCleaner::new();
    assert_eq!(cleaner.push("price \n【"), "price");
    assert_eq!(cleaner.push("税込み】"), " \n【税込み】");
    assert!(!cleaner.is_holding());
}

#[test]
fn an_unfinished_marker_comes_out_at_the_end() {
    let mut cleaner = CitationCleaner::new();
    assert_eq!(cleaner.push("cut off 【7†par"), "cut off");
    assert_eq!(cleaner.finish(), " 【7†par");
}

#[test]
fn memory_is_bounded_for_runaway_titles_and_whitespace() {
    let title = "t".repeat(MAX_MARKER_TITLE_CHARS + 1);
    let text = format!("x 【1†{title}】");
    assert_eq!(clean_all(&text), text);
    let fits = "t".repeat(MAX_MARKER_TITLE_CHARS);
    assert_eq!(clean_all(&format!("x 【1†{fits}】")), "x");

    let spaces = " ".repeat(MAX_EATEN_WHITESPACE + 5);
    assert_eq!(clean_all(&format!("x{spaces}【1】")), "x     ");
    // Each of the two passes holds at most the bound; everything before that is released at once.
    let mut cleaner = CitationCleaner::new();
    let spaces = " ".repeat(2 * MAX_EATEN_WHITESPACE + 10);
    assert_eq!(
        cleaner.push(&format!("x{spaces}")),
        format!("x{}", " ".repeat(10))
    );
}

/// The specification written as two bounded regular expressions applied one after the other.
static REFERENCE: LazyLock<Option<(Regex, Regex)>> = LazyLock::new(|| {
    let titled =
        format!(r"\s{{0,{MAX_EATEN_WHITESPACE}}}【[0-9]{{1,9}}†[^】]{{0,{MAX_MARKER_TITLE_CHARS}}}】");
    let bare = format!(r"\s{{0,{MAX_EATEN_WHITESPACE}}}【[0-9]{{1,9}}】");
    Some((Regex::new(&titled).ok()?, Regex::new(&bare).ok()?))
});

fn reference_clean(text: &str) -> Option<String> {
    let (titled, bare) = REFERENCE.as_ref()?;
    let once = titled.replace_all(text, "");
    Some(bare.replace_all(&once, "").into_owned())
}

fn stream_in_pieces(text: &str, cuts: &[usize]) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (chars.len() + 1)).collect();
    cuts.sort_unstable();
    let mut cleaner = CitationCleaner::new();
    let mut out = String::new();
    let mut start = 0;
    for cut in cuts {
        let piece: String = chars[start..cut].iter().collect();
        out.push_str(&cleaner.push(&piece));
        start = cut;
    }
    let piece: String = chars[start..].iter().collect();
    out.push_str(&cleaner.push(&piece));
    out.push_str(&cleaner.finish());
    out
}

fn marker_heavy_text() -> impl Strategy<Value = String> {
    let alphabet = vec!['a', ' ', '\n', '【', '】', '†', '1', '2', '税', '[', ']'];
    proptest::collection::vec(proptest::sample::select(alphabet), 0..80)
        .prop_map(|chars| chars.into_iter().collect())
}

/// A titled marker whose title runs near the length bound, with nested marker starts inside it.
fn long_title_text() -> impl Strategy<Value = String> {
    let title_chars = vec!['a', ' ', '【', '1', '†'];
    (
        proptest::collection::vec(proptest::sample::select(title_chars), 190..215),
        proptest::collection::vec(proptest::sample::select(vec!['】', 'b', ' ', '【', '2']), 0..12),
    )
        .prop_map(|(title, tail)| {
            let mut text = String::from("x 【1†");
            text.extend(title);
            text.extend(tail);
            text
        })
}

proptest! {
    #[test]
    fn splitting_the_stream_never_changes_the_output(
        text in marker_heavy_text(),
        cuts in proptest::collection::vec(0usize..100, 0..8),
    ) {
        prop_assert_eq!(stream_in_pieces(&text, &cuts), clean_all(&text));
    }

    #[test]
    fn cleaning_matches_the_two_pass_specification(text in marker_heavy_text()) {
        prop_assert_eq!(Some(clean_all(&text)), reference_clean(&text));
    }

    #[test]
    fn titles_near_the_bound_match_the_specification(
        text in long_title_text(),
        cuts in proptest::collection::vec(0usize..260, 0..6),
    ) {
        prop_assert_eq!(Some(clean_all(&text)), reference_clean(&text));
        prop_assert_eq!(stream_in_pieces(&text, &cuts), clean_all(&text));
    }
}

#[test]
fn extracted_citations_are_unique_in_first_seen_order() {
    let text = "A [2] and [1], again [2], native 【1】, titled 【2†t】, zero [0], link [3](https://x.y)";
    assert_eq!(extract_citations(text), ["[2]", "[1]", "【1】", "[0]", "[3]"]);
    assert!(extract_citations("no citations [a] [] 【】").is_empty());
}

#[test]
fn cited_indexes_skip_markdown_links() {
    assert_eq!(cited_indexes("x [3] y [1](http://a) z [3] w [12]"), [3, 12]);
}

#[test]
fn dangling_and_uncited_indexes_are_checked_against_the_registry() {
    let text = "Claims [1] and [4], plus [0] and [2].";
    assert_eq!(dangling_citations(text, 3), [4, 0]);
    assert_eq!(uncited_indexes(text, 3), [3]);
    assert!(dangling_citations(text, 4).contains(&0));
    assert!(uncited_indexes("", 0).is_empty());
}
