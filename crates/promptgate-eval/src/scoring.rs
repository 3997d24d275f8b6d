//! Scoring one scenario's answer against its criteria. The failure texts are what the eval prints, so
//! each one says what was expected and what was found.

use std::collections::HashSet;

use promptgate_core::budget::tool_call_key;
use promptgate_core::citations::check::CitationCounts;
use promptgate_core::citations::extract_citations;

use crate::citations::CitationRates;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The tools whose calls the tool-call criteria count.
const WEB_TOOLS: [&str; 2] = ["search", "fetch_content"];

/// Review and aggregator sites `noReviewSites` refuses as link-preview targets: a link to one of these
/// hosts, or to any subdomain of one, points at someone else's opinion rather than a primary source.
/// Hosts are compared lower-cased and without a leading `www.`. Wirecutter also lives under
/// `nytimes.com/wirecutter`, which [`is_review_site`] checks separately.
const REVIEW_SITES: [&str; 13] = [
    "yelp.com",
    "tripadvisor.com",
    "trustpilot.com",
    "g2.com",
    "capterra.com",
    "consumerreports.org",
    "wirecutter.com",
    "rtings.com",
    "tomsguide.com",
    "pcmag.com",
    "cnet.com",
    "reddit.com",
    "quora.com",
];

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
    /// A link preview of a site's homepage (empty or `/` path) fails the scenario.
    pub no_homepage_links: bool,
    /// A link preview of a review or aggregator site ([`REVIEW_SITES`]) fails the scenario.
    pub no_review_sites: bool,
    /// The least share of the answer's citations the cited page must support (0 to 1).
    pub min_citation_precision: Option<f64>,
    /// The largest share of the citations written that may name no source (0 to 1).
    pub max_dangling_rate: Option<f64>,
    /// The largest share of the citations that may cite a page only seen as a search snippet.
    pub max_snippet_only_rate: Option<f64>,
}

/// What a turn did, as far as scoring cares.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observed {
    pub text: String,
    pub steps: u32,
    /// Every tool call: name and input.
    pub tool_calls: Vec<(String, Value)>,
    /// The engine's citation check, from the answer's metadata.
    pub citation_counts: Option<CitationCounts>,
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

    pub fn citation_rates(&self) -> CitationRates {
        self.citation_counts
            .as_ref()
            .map(CitationRates::of)
            .unwrap_or_default()
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
    citation_failures(criteria, &observed.citation_rates(), &mut failures);
    if criteria.no_homepage_links || criteria.no_review_sites {
        let urls = link_preview_urls(&observed.text);
        let matching = |check: fn(&str, &str) -> bool| -> Vec<&str> {
            urls.iter()
                .map(String::as_str)
                .filter(|url| split_url(url).is_some_and(|(host, path)| check(&host, path)))
                .collect()
        };
        if criteria.no_homepage_links {
            let homepages = matching(|_, path| path.is_empty() || path == "/");
            if !homepages.is_empty() {
                failures.push(format!("Homepage links found: {}", homepages.join(", ")));
            }
        }
        if criteria.no_review_sites {
            let reviews = matching(is_review_site);
            if !reviews.is_empty() {
                failures.push(format!("Review-site links found: {}", reviews.join(", ")));
            }
        }
    }
    failures
}

/// The citation rates outside their bounds. A rate with nothing to count (no citation at all)
/// passes: `minCitations` is what asks for citations.
fn citation_failures(criteria: &Criteria, rates: &CitationRates, failures: &mut Vec<String>) {
    let percent = |r: f64| format!("{:.0}%", r * 100.0);
    if let (Some(min), Some(found)) = (criteria.min_citation_precision, rates.precision)
        && found < min
    {
        failures.push(format!(
            "Citation precision too low: {} supported (min: {})",
            percent(found),
            percent(min)
        ));
    }
    if let (Some(max), Some(found)) = (criteria.max_dangling_rate, rates.dangling_rate)
        && found > max
    {
        failures.push(format!(
            "Too many dangling citations: {} (max: {})",
            percent(found),
            percent(max)
        ));
    }
    if let (Some(max), Some(found)) = (criteria.max_snippet_only_rate, rates.snippet_only_rate)
        && found > max
    {
        failures.push(format!(
            "Too many snippet-only citations: {} (max: {})",
            percent(found),
            percent(max)
        ));
    }
}

/// Whether `host` (lower-cased, no leading `www.`) and `path` point at a review or aggregator site.
fn is_review_site(host: &str, path: &str) -> bool {
    let on = |domain: &str| host == domain || host.strip_suffix(domain).is_some_and(|sub| sub.ends_with('.'));
    if REVIEW_SITES.iter().any(|domain| on(domain)) {
        return true;
    }
    // Wirecutter's pages under the New York Times: `/wirecutter` and everything below it.
    let first_segment = path.trim_start_matches('/').split('/').next().unwrap_or("");
    on("nytimes.com") && first_segment.eq_ignore_ascii_case("wirecutter")
}

/// The distinct `url` attributes of `<widget:link-preview ...>` tags, first-seen order. Attributes
/// may come in any order, quoted with `"` or `'`; a `>` inside a quoted value does not end the tag.
fn link_preview_urls(text: &str) -> Vec<String> {
    const TAG: &str = "<widget:link-preview";
    let mut urls: Vec<String> = Vec::new();
    for (at, _) in text.match_indices(TAG) {
        let rest = &text[at + TAG.len()..];
        // `<widget:link-preview-card` is another widget.
        if !rest.starts_with(|c: char| c.is_whitespace() || c == '/' || c == '>') {
            continue;
        }
        if let Some(url) = tag_attribute(rest, "url")
            && !url.is_empty()
            && !urls.contains(&url)
        {
            urls.push(url);
        }
    }
    urls
}

/// The value of attribute `wanted` in `rest`, the text just after a tag's name, up to the tag's end.
fn tag_attribute(rest: &str, wanted: &str) -> Option<String> {
    let mut chars = rest.char_indices().peekable();
    loop {
        // Skip separators; the tag ends at `>` or at the end of the text.
        while chars.next_if(|(_, c)| c.is_whitespace() || *c == '/').is_some() {}
        let (start, first) = chars.next()?;
        if first == '>' {
            return None;
        }
        let mut end = start + first.len_utf8();
        while let Some((i, c)) = chars.next_if(|(_, c)| !c.is_whitespace() && !matches!(c, '=' | '>' | '/')) {
            end = i + c.len_utf8();
        }
        let name = &rest[start..end];
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        if chars.next_if(|(_, c)| *c == '=').is_none() {
            continue; // a bare attribute
        }
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let value: String = match chars.peek().map(|(_, c)| *c) {
            Some(quote @ ('"' | '\'')) => {
                chars.next();
                let mut value = String::new();
                loop {
                    match chars.next()? {
                        (_, c) if c == quote => break value,
                        (_, c) => value.push(c),
                    }
                }
            }
            _ => {
                let mut value = String::new();
                while let Some((_, c)) = chars.next_if(|(_, c)| !c.is_whitespace() && *c != '>') {
                    value.push(c);
                }
                // `url=x/>`: the `/` belongs to the tag's end.
                if value.ends_with('/') && chars.peek().is_some_and(|(_, c)| *c == '>') {
                    value.pop();
                }
                value
            }
        };
        if name.eq_ignore_ascii_case(wanted) {
            return Some(value.trim().to_owned());
        }
    }
}

/// A link's host (lower-cased, without port, user info, trailing dot or leading `www.`) and its path
/// (without query or fragment). Takes `http(s)://` and `//` links, and bare `host.tld/...` ones; other
/// schemes and relative paths give `None`.
fn split_url(url: &str) -> Option<(String, &str)> {
    let url = url.trim();
    let after_scheme = match url.find("://") {
        Some(at) => {
            let scheme = &url[..at];
            if !(scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")) {
                return None;
            }
            &url[at + 3..]
        }
        None => match url.strip_prefix("//") {
            Some(rest) => rest,
            None if url.starts_with('/') || url.contains(':') => return None,
            None => url,
        },
    };
    let authority_end = after_scheme.find(['/', '?', '#']).unwrap_or(after_scheme.len());
    let (authority, rest) = after_scheme.split_at(authority_end);
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if host_port.starts_with('[') {
        host_port.split_inclusive(']').next().unwrap_or(host_port)
    } else {
        host_port.split(':').next().unwrap_or(host_port)
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let host = host.strip_prefix("www.").map(str::to_owned).unwrap_or(host);
    if host.is_empty() || (!url.contains("//") && !host.contains('.')) {
        return None;
    }
    let path = &rest[..rest.find(['?', '#']).unwrap_or(rest.len())];
    Some((host, path))
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
