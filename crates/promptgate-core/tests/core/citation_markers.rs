//! `[N]` citations found as text streams, removed when they name no source, and tied to the claim
//! they close and the source they name.

use promptgate_core::citations::check::{SeenSource, check_citations, claim_range};
use promptgate_core::citations::markers::{MarkerScanner, scan_all};
use promptgate_core::citations::support::SupportClass;
use proptest::prelude::*;

#[test]
fn citations_of_unknown_sources_go_with_the_whitespace_before_them() {
    let (text, scanner) = scan_all(
        "Tides follow the moon [1]. The office closes at dusk [7].",
        vec![1, 2],
    );
    assert_eq!(text, "Tides follow the moon [1]. The office closes at dusk.");
    assert_eq!(scanner.dangling(), [7]);
    assert_eq!(scanner.markers().len(), 1);
    let marker = scanner.markers()[0];
    assert_eq!(&text[marker.start..marker.end], "[1]");
    let (text, scanner) = scan_all("Zero [0] and [1][3] and [2].", vec![1, 2]);
    assert_eq!(text, "Zero and [1] and [2].");
    assert_eq!(scanner.dangling(), [0, 3]);
}

#[test]
fn links_code_and_other_brackets_are_text() {
    for text in [
        "see [1](https://example.org/) here",
        "use `xs[5]` to read it",
        "```\nlet a = xs[9];\n```\nafter",
        "an array [12 items] or [x] or [] or [ 3]",
        "a long [1234567890] number",
        "read xs[5] or m[2][9]",
    ] {
        let (out, scanner) = scan_all(text, vec![1]);
        assert_eq!(out, text);
        assert!(scanner.dangling().is_empty(), "{text}");
    }
    let (out, scanner) = scan_all("datum[1] and xs[1]", vec![1]);
    assert_eq!(out, "datum[1] and xs[1]");
    assert_eq!(
        scanner.markers().len(),
        2,
        "an attached [1] that names a source is a citation"
    );
    let (out, _) = scan_all("`code` then a fact [4].", vec![1]);
    assert_eq!(
        out, "`code` then a fact.",
        "code that closed leaves prose behind it"
    );
}

fn streamed(text: &str, cuts: &[usize], known: Vec<u32>) -> (String, Vec<(u32, usize)>) {
    let mut scanner = MarkerScanner::new(known);
    let mut out = String::new();
    let mut last = 0;
    for &cut in cuts {
        let cut = cut.min(text.len()).max(last);
        if !text.is_char_boundary(cut) {
            continue;
        }
        out.push_str(&scanner.push(&text[last..cut]));
        last = cut;
    }
    out.push_str(&scanner.push(&text[last..]));
    out.push_str(&scanner.finish());
    let markers = scanner.markers().iter().map(|m| (m.n, m.start)).collect();
    (out, markers)
}

proptest! {
    #[test]
    fn splitting_the_stream_never_changes_the_result(
        text in "[a-z \\[\\]0-9`().]{0,60}",
        cuts in proptest::collection::vec(0usize..60, 0..8),
    ) {
        let mut cuts = cuts;
        cuts.sort_unstable();
        let whole = streamed(&text, &[], vec![1, 2]);
        prop_assert_eq!(streamed(&text, &cuts, vec![1, 2]), whole);
    }
}

#[test]
fn the_claim_is_the_clause_before_the_citation() {
    let text = "Tides rise twice a day [1], and the office closes at dusk [2][3]. Next.";
    let (_, scanner) = scan_all(text, vec![1, 2, 3]);
    let m = scanner.markers();
    let claim = |at: usize| &text[claim_range(text, &m[..at], m[at].start)];
    assert_eq!(claim(0), "Tides rise twice a day");
    assert_eq!(claim(1), "and the office closes at dusk");
    assert_eq!(
        claim(2),
        "and the office closes at dusk",
        "[2][3] close one claim"
    );
    let text = "First sentence. Heights count from datum.[1]";
    let (_, scanner) = scan_all(text, vec![1]);
    let m = scanner.markers();
    assert_eq!(
        &text[claim_range(text, &[], m[0].start)],
        "Heights count from datum"
    );
}

#[test]
fn each_kept_citation_gets_its_source_class_and_utf16_span() {
    let page = "The harbour office opens at eight in the morning and closes at dusk from April to October.";
    let sources = [
        SeenSource {
            index: 1,
            url: "https://coast.example/harbour",
            title: "Harbour",
            text: page,
            fetched: true,
            read: None,
        },
        SeenSource {
            index: 2,
            url: "https://coast.example/search-hit",
            title: "Hit",
            text: "Ferries leave hourly.",
            fetched: false,
            read: None,
        },
    ];
    // "é" and "🌊" are one and two UTF-16 units: the offsets are JavaScript's.
    let text = "Café 🌊 opens early. The harbour office closes at dusk [1]. The moon is made of cheese [2].";
    let (_, scanner) = scan_all(text, vec![1, 2]);
    let citations = check_citations(text, 0, scanner.markers(), &sources);
    assert_eq!(citations.len(), 2);
    let utf16: Vec<u16> = text.encode_utf16().collect();
    let slice = |a: usize, b: usize| String::from_utf16(&utf16[a..b]).unwrap();
    assert_eq!(
        slice(citations[0].start, citations[0].end),
        "The harbour office closes at dusk"
    );
    assert_eq!(slice(citations[0].marker_start, citations[0].marker_end), "[1]");
    assert_eq!(citations[0].class, SupportClass::Supported);
    assert!(!citations[0].snippet_only);
    assert_eq!(citations[0].passage.as_deref(), Some(page));
    assert_eq!(citations[1].class, SupportClass::Unsupported);
    assert!(citations[1].snippet_only);
    assert_eq!(citations[1].url, "https://coast.example/search-hit");
    let json = serde_json::to_value(&citations[0]).unwrap();
    assert_eq!(json["class"], "supported");
    assert_eq!(json["snippetOnly"], false);
    assert_eq!(json["n"], 1);
}

#[test]
fn a_page_read_when_it_arrived_checks_the_same_as_one_read_at_the_end() {
    use promptgate_core::citations::passages::ReadText;
    let page = "Die Fähre nach Helgoland fährt ab 1. April täglich um 9:30 Uhr. Die Überfahrt dauert \
                2,5 Stunden.\nIm Winter fährt sie nur dreimal pro Woche; Tickets kosten 1.250 Yen? Nein: 62 Euro.";
    let text = "Die Überfahrt dauert 2,5 Stunden [1]. Tickets kosten 62 Euro [1]. Im Winter gibt es \
                keine Fähre [1].";
    let mut scanner = MarkerScanner::new(vec![1]);
    let shown = scanner.push(text) + &scanner.finish();
    let reading = ReadText::new(page);
    let source = |read| SeenSource {
        index: 1,
        url: "https://faehre.example/",
        title: "Fähre",
        text: page,
        fetched: true,
        read,
    };
    let at_the_end = check_citations(&shown, 0, scanner.markers(), &[source(None)]);
    let on_arrival = check_citations(&shown, 0, scanner.markers(), &[source(Some(&reading))]);
    assert_eq!(at_the_end.len(), 3);
    assert_eq!(on_arrival, at_the_end);
    assert!(
        on_arrival.iter().any(|c| c.class == SupportClass::Supported)
            && on_arrival.iter().any(|c| c.class != SupportClass::Supported),
        "the page supports some claims and not others: {on_arrival:?}"
    );
}
