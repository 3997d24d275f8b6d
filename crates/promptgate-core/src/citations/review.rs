//! The optional second pass over a text part's citations: a small model reads each claim the check
//! did not find supported beside the passage it matched best, and its verdict replaces the check's.
//! The check compares words, so a claim the page states in other words comes out `weak` or
//! `unsupported`; a model reads past the wording. Off unless an operator names a model for it.

use super::check::Citation;
use super::support::SupportClass;

/// The reviewer's system prompt.
pub const REVIEW_INSTRUCTIONS: &str = "You check the citations of an answer. Each numbered item \
gives a claim from the answer and the passage of the cited page that matched it best. For each \
item decide whether the passage backs the claim: \"supported\" when it states what the claim says, \
in whatever words; \"weak\" when it backs only part of the claim; \"unsupported\" when it does not \
back it or says something else. Judge only from the passage, not from what you know. Answer with \
JSON and nothing else: {\"verdicts\": [\"supported\", \"weak\", ...]}, one verdict per item, in \
the items' order.";

/// Characters of a claim and of a passage the reviewer is shown; longer ones are cut.
const QUOTED_CHARS: usize = 1_200;

/// The citations worth a second look: those not found supported that have a passage to judge
/// against, in order, at most `max`.
pub fn candidates(citations: &[Citation], max: usize) -> Vec<usize> {
    citations
        .iter()
        .enumerate()
        .filter(|(_, c)| c.class != SupportClass::Supported && c.passage.is_some())
        .map(|(at, _)| at)
        .take(max)
        .collect()
}

/// The claim a citation closes, cut from `text` (the text part it was checked in) by its UTF-16
/// span.
pub fn claim_text<'t>(text: &'t str, citation: &Citation) -> &'t str {
    let mut units = 0;
    let (mut start, mut end) = (text.len(), text.len());
    for (byte, c) in text.char_indices() {
        if units == citation.start {
            start = byte;
        }
        if units == citation.end {
            end = byte;
            break;
        }
        units += c.len_utf16();
    }
    text.get(start..end.max(start)).unwrap_or("")
}

/// The user message asking for the verdicts on `citations` at `candidates`, claims cut from `text`.
pub fn review_task(text: &str, citations: &[Citation], candidates: &[usize]) -> String {
    let mut task = String::new();
    for (item, &at) in candidates.iter().enumerate() {
        let citation = &citations[at];
        let claim = cut(claim_text(text, citation).trim());
        let passage = cut(citation.passage.as_deref().unwrap_or_default().trim());
        task.push_str(&format!(
            "Item {}\nClaim: {claim}\nPassage (from \"{}\"): {passage}\n\n",
            item + 1,
            cut(&citation.title)
        ));
    }
    task.push_str(&format!("Give {} verdicts, as JSON.", candidates.len()));
    task
}

fn cut(text: &str) -> String {
    match text.char_indices().nth(QUOTED_CHARS) {
        Some((byte, _)) => format!("{}…", &text[..byte]),
        None => text.to_owned(),
    }
}

/// The verdicts in the reviewer's answer, when it gave exactly one per item: the first JSON object
/// in it with a `verdicts` list of known classes. Anything else keeps the check's classes.
pub fn parse_verdicts(answer: &str, count: usize) -> Option<Vec<SupportClass>> {
    let start = answer.find('{')?;
    let end = answer.rfind('}')?;
    let value: serde_json::Value = serde_json::from_str(answer.get(start..=end)?).ok()?;
    let verdicts: Vec<SupportClass> = value
        .get("verdicts")?
        .as_array()?
        .iter()
        .map(|v| serde_json::from_value(v.clone()).ok())
        .collect::<Option<_>>()?;
    (verdicts.len() == count).then_some(verdicts)
}

/// Applies the reviewer's verdicts to the citations at `candidates`, marking each as reviewed.
pub fn apply_verdicts(citations: &mut [Citation], candidates: &[usize], verdicts: &[SupportClass]) {
    for (&at, &class) in candidates.iter().zip(verdicts) {
        if let Some(citation) = citations.get_mut(at) {
            citation.class = class;
            citation.reviewed = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn citation(start: usize, end: usize, class: SupportClass, passage: Option<&str>) -> Citation {
        Citation {
            n: 1,
            url: "https://tides.example/".into(),
            title: "Tides".into(),
            text_part: 0,
            start,
            end,
            marker_start: end + 1,
            marker_end: end + 4,
            class,
            snippet_only: false,
            passage: passage.map(str::to_owned),
            reviewed: false,
        }
    }

    #[test]
    fn only_claims_not_found_supported_and_with_a_passage_are_asked_about() {
        let citations = [
            citation(0, 5, SupportClass::Supported, Some("a")),
            citation(0, 5, SupportClass::Weak, Some("b")),
            citation(0, 5, SupportClass::Unsupported, None),
            citation(0, 5, SupportClass::Unsupported, Some("c")),
        ];
        assert_eq!(candidates(&citations, 10), vec![1, 3]);
        assert_eq!(candidates(&citations, 1), vec![1]);
    }

    #[test]
    fn the_claim_is_cut_by_its_utf16_span() {
        // "🌊" is two UTF-16 units, "é" one: the span counts as JavaScript does.
        let text = "🌊 Marée haute à 6h [1]. Basse à midi [1].";
        let c = citation(3, 18, SupportClass::Weak, Some("p"));
        assert_eq!(claim_text(text, &c), "Marée haute à 6");
        let task = review_task(text, &[c], &[0]);
        assert!(
            task.contains("Item 1\nClaim: Marée haute à 6\nPassage (from \"Tides\"): p"),
            "{task}"
        );
        assert!(task.ends_with("Give 1 verdicts, as JSON."), "{task}");
    }

    #[test]
    fn verdicts_are_read_only_when_there_is_one_known_class_per_item() {
        let answer = "Here you go:\n```json\n{\"verdicts\": [\"supported\", \"unsupported\"]}\n```";
        assert_eq!(
            parse_verdicts(answer, 2),
            Some(vec![SupportClass::Supported, SupportClass::Unsupported])
        );
        assert_eq!(parse_verdicts(answer, 3), None, "one verdict missing");
        assert_eq!(parse_verdicts("{\"verdicts\": [\"maybe\"]}", 1), None);
        assert_eq!(parse_verdicts("I cannot tell.", 1), None);
    }

    #[test]
    fn applied_verdicts_replace_the_class_and_say_so() {
        let mut citations = vec![
            citation(0, 5, SupportClass::Supported, Some("a")),
            citation(0, 5, SupportClass::Weak, Some("b")),
        ];
        apply_verdicts(&mut citations, &[1], &[SupportClass::Supported]);
        assert_eq!(citations[1].class, SupportClass::Supported);
        assert!(citations[1].reviewed && !citations[0].reviewed);
    }
}
