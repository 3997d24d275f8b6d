//! Scoring one scenario's answer against its criteria. The failure texts are what the eval prints, so
//! each one says what was expected and what was found.

use std::collections::HashSet;

use promptgate_core::budget::tool_call_key;
use promptgate_core::citations::extract_citations;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The tools whose calls the tool-call criteria count.
const WEB_TOOLS: [&str; 2] = ["search", "fetch_content"];

/// What a scenario requires of its answer. Every criterion is optional.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Criteria {
    /// Distinct `[N]` / `【N】` citations in the answer.
    pub min_citations: Option<usize>,
    pub must_produce_output: bool,
    pub must_use_link_previews: bool,
    /// A `<widget:NAME` tag the answer must contain.
    pub must_use_widget: Option<String>,
    pub must_not_use_widgets: bool,
    pub max_steps: Option<u32>,
    /// Calls of the web tools (`search`, `fetch_content`).
    pub min_tool_calls: Option<usize>,
    pub max_tool_calls: Option<usize>,
    /// Two web calls with the same name and input (key order ignored) fail the scenario.
    pub no_duplicate_tool_calls: bool,
}

/// What a turn did, as far as scoring cares.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observed {
    pub text: String,
    pub steps: u32,
    /// Every tool call: name and input.
    pub tool_calls: Vec<(String, Value)>,
}

impl Observed {
    pub fn web_calls(&self) -> impl Iterator<Item = &(String, Value)> {
        self.tool_calls
            .iter()
            .filter(|(name, _)| WEB_TOOLS.contains(&name.as_str()))
    }

    pub fn citations(&self) -> usize {
        extract_citations(&self.text).len()
    }

    /// Web calls that repeat an earlier one.
    pub fn duplicate_web_calls(&self) -> usize {
        let mut seen = HashSet::new();
        self.web_calls()
            .filter(|(name, input)| !seen.insert(tool_call_key(name, input)))
            .count()
    }
}

/// The criteria `observed` fails, as readable reasons; empty when it passes.
pub fn score(criteria: &Criteria, observed: &Observed) -> Vec<String> {
    let mut failures = Vec::new();
    let citations = observed.citations();
    if let Some(min) = criteria.min_citations
        && citations < min
    {
        failures.push(format!(
            "Insufficient citations: {citations} found, {min} required"
        ));
    }
    if criteria.must_produce_output && observed.text.trim().is_empty() {
        failures.push("Empty response: no text output produced".to_owned());
    }
    let widgets = widget_names(&observed.text);
    if criteria.must_use_link_previews && !widgets.iter().any(|w| w == "link-preview") {
        failures.push("No <widget:link-preview> tags found in response".to_owned());
    }
    if let Some(wanted) = &criteria.must_use_widget
        && !widgets.iter().any(|w| w == wanted)
    {
        failures.push(format!("No <widget:{wanted}> tag found in response"));
    }
    if criteria.must_not_use_widgets && !widgets.is_empty() {
        failures.push(format!("Unexpected widget tags found: {}", widgets.join(", ")));
    }
    if let Some(max) = criteria.max_steps
        && observed.steps > max
    {
        failures.push(format!("Too many steps: {} (max: {max})", observed.steps));
    }
    let web_calls = observed.web_calls().count();
    if let Some(min) = criteria.min_tool_calls
        && web_calls < min
    {
        failures.push(format!("Too few web tool calls: {web_calls} (min: {min})"));
    }
    if let Some(max) = criteria.max_tool_calls
        && web_calls > max
    {
        failures.push(format!("Too many web tool calls: {web_calls} (max: {max})"));
    }
    let duplicates = observed.duplicate_web_calls();
    if criteria.no_duplicate_tool_calls && duplicates > 0 {
        failures.push(format!("Duplicate web tool calls: {duplicates}"));
    }
    failures
}

/// The distinct widget names of `<widget:NAME ...>` tags, first-seen order.
fn widget_names(text: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (at, _) in text.match_indices("<widget:") {
        let rest = &text[at + "<widget:".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        if !name.is_empty() && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer(text: &str) -> Observed {
        Observed {
            text: text.to_owned(),
            steps: 1,
            tool_calls: Vec::new(),
        }
    }

    fn with_calls(calls: &[(&str, Value)]) -> Observed {
        Observed {
            text: "ok".into(),
            steps: 2,
            tool_calls: calls.iter().map(|(n, v)| ((*n).to_owned(), v.clone())).collect(),
        }
    }

    #[test]
    fn citations_count_distinct_brackets_of_both_kinds_but_not_titled_markers() {
        let criteria = Criteria {
            min_citations: Some(3),
            ..Criteria::default()
        };
        assert!(score(&criteria, &answer("a [1] b [2] c 【1】 d [1]")).is_empty());
        assert_eq!(
            score(&criteria, &answer("a [1] b 【2†title】 c [1](http://x)")),
            ["Insufficient citations: 1 found, 3 required"]
        );
    }

    #[test]
    fn an_empty_or_blank_answer_fails_must_produce_output() {
        let criteria = Criteria {
            must_produce_output: true,
            ..Criteria::default()
        };
        assert_eq!(
            score(&criteria, &answer(" \n")),
            ["Empty response: no text output produced"]
        );
        assert!(score(&criteria, &answer("Hi")).is_empty());
    }

    #[test]
    fn only_web_tools_count_towards_tool_call_limits() {
        let observed = with_calls(&[
            ("search", json!({"query": "a"})),
            ("skill", json!({"name": "research"})),
            ("fetch_content", json!({"url": "https://a.example"})),
        ]);
        let too_many = Criteria {
            max_tool_calls: Some(1),
            ..Criteria::default()
        };
        assert_eq!(
            score(&too_many, &observed),
            ["Too many web tool calls: 2 (max: 1)"]
        );
        let too_few = Criteria {
            min_tool_calls: Some(3),
            ..Criteria::default()
        };
        assert_eq!(score(&too_few, &observed), ["Too few web tool calls: 2 (min: 3)"]);
    }

    #[test]
    fn duplicates_ignore_key_order_but_not_case_or_spacing() {
        let criteria = Criteria {
            no_duplicate_tool_calls: true,
            ..Criteria::default()
        };
        let observed = with_calls(&[
            ("search", json!({"query": "tides", "max_results": 5})),
            ("search", json!({"max_results": 5, "query": "tides"})),
            ("search", json!({"query": "Tides", "max_results": 5})),
            ("skill", json!({"name": "x"})),
            ("skill", json!({"name": "x"})),
        ]);
        assert_eq!(score(&criteria, &observed), ["Duplicate web tool calls: 1"]);
    }

    #[test]
    fn widgets_are_found_by_tag_name() {
        let text = "See <widget:link-preview url=\"a\"/> and <widget:weather-forecast city=\"x\"/>";
        let forbid = Criteria {
            must_not_use_widgets: true,
            ..Criteria::default()
        };
        assert_eq!(
            score(&forbid, &answer(text)),
            ["Unexpected widget tags found: link-preview, weather-forecast"]
        );
        let require = Criteria {
            must_use_link_previews: true,
            must_use_widget: Some("map".into()),
            ..Criteria::default()
        };
        assert_eq!(
            score(&require, &answer(text)),
            ["No <widget:map> tag found in response"]
        );
        assert_eq!(
            score(&require, &answer("none")),
            [
                "No <widget:link-preview> tags found in response",
                "No <widget:map> tag found in response"
            ]
        );
    }

    #[test]
    fn steps_over_the_limit_fail() {
        let criteria = Criteria {
            max_steps: Some(1),
            ..Criteria::default()
        };
        assert_eq!(score(&criteria, &with_calls(&[])), ["Too many steps: 2 (max: 1)"]);
    }

    #[test]
    fn scenario_criteria_read_the_camel_case_keys() {
        let criteria: Criteria = serde_json::from_value(json!({
            "minCitations": 2, "mustProduceOutput": true, "noDuplicateToolCalls": true, "maxToolCalls": 4
        }))
        .unwrap();
        assert_eq!(criteria.min_citations, Some(2));
        assert!(criteria.must_produce_output && criteria.no_duplicate_tool_calls);
        assert!(serde_json::from_value::<Criteria>(json!({"minCitation": 1})).is_err());
    }
}
