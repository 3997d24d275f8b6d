//! `render_html`: checks an HTML document the model wrote and stores it as an artifact the UI shows.
//!
//! A document that fails the checks is not an error of the call: the model gets `{ok: false, errors}`
//! listing every problem at once, so it can fix them all in one more call.

use std::sync::Arc;

use async_trait::async_trait;
use promptgate_core::storage::{ArtifactStore, NewArtifact};
use promptgate_core::tools::args::RenderHtmlArgs;
use promptgate_core::tools::names;
use serde_json::{Value, json};

use super::{parse, storage_failed};
use promptgate_core::tools::{ToolError, ToolExecutor, ToolOutput};

/// Largest document accepted, in bytes: an artifact is one page, not a bundle of assets.
pub const MAX_HTML_BYTES: usize = 1024 * 1024;
pub const MAX_TITLE_CHARS: usize = 200;

/// Elements whose presence makes a text an HTML document rather than prose or Markdown.
const HTML_MARKERS: &[&str] = &[
    "<!doctype html",
    "<html",
    "<head",
    "<body",
    "<div",
    "<main",
    "<section",
    "<article",
    "<svg",
    "<canvas",
    "<table",
    "<style",
    "<script",
    "<p>",
    "<p ",
    "<h1",
    "<h2",
    "<ul",
    "<ol",
    "<form",
    "<button",
    "<input",
    "<span",
    "<header",
    "<footer",
    "<nav",
];

/// Stores validated HTML artifacts for one user, attached to the send's thread when there is one.
pub struct RenderHtml {
    artifacts: Arc<dyn ArtifactStore>,
    user_id: String,
    thread_id: Option<String>,
}

impl RenderHtml {
    pub fn new(
        artifacts: Arc<dyn ArtifactStore>,
        user_id: impl Into<String>,
        thread_id: Option<String>,
    ) -> Self {
        Self {
            artifacts,
            user_id: user_id.into(),
            thread_id,
        }
    }
}

#[async_trait]
impl ToolExecutor for RenderHtml {
    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        let args: RenderHtmlArgs = parse(names::RENDER_HTML, &input)?;
        let title = args.title.trim();
        let problems = document_problems(title, &args.html);
        if !problems.is_empty() {
            let list: String = problems.iter().map(|p| format!("\n- {p}")).collect();
            return Ok(ToolOutput {
                output: json!({"ok": false, "errors": problems}),
                model_text: Some(format!(
                    "The artifact was not rendered. Fix every problem below and call {} again:{list}",
                    names::RENDER_HTML
                )),
            });
        }
        let artifact = self
            .artifacts
            .create_artifact(
                &self.user_id,
                NewArtifact {
                    thread_id: self.thread_id.as_deref(),
                    title,
                    html: &args.html,
                },
            )
            .await
            .map_err(|e| storage_failed("store the artifact", e))?;
        Ok(ToolOutput::json(json!({
            "ok": true,
            "artifact_id": artifact.id,
            "url": format!("/v1/artifacts/{}", artifact.id),
            "title": artifact.title,
        })))
    }
}

/// Every reason the document cannot be shown as an offline artifact, in document order per check.
pub(crate) fn document_problems(title: &str, html: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let title_chars = title.chars().count();
    if title_chars == 0 {
        problems.push("The title is empty; give the artifact a short title.".to_owned());
    } else if title_chars > MAX_TITLE_CHARS {
        problems.push(format!(
            "The title has {title_chars} characters; use at most {MAX_TITLE_CHARS}."
        ));
    }
    // Postgres cannot hold U+0000 in text and SQLite would: refused here, so a document is stored
    // or not the same way on both, and the model learns what to fix instead of a database failure.
    if title.contains('\0') {
        problems.push("The title contains the NUL character (U+0000); remove it.".to_owned());
    }
    if html.trim().is_empty() {
        problems.push("The html is empty; send a complete HTML document.".to_owned());
        return problems;
    }
    if html.contains('\0') {
        problems.push("The document contains the NUL character (U+0000); remove it.".to_owned());
    }
    if html.len() > MAX_HTML_BYTES {
        problems.push(format!(
            "The document is {} bytes; keep it under {MAX_HTML_BYTES} bytes (1 MiB).",
            html.len()
        ));
        // Scanning a document this large for details helps nobody; its size is the problem to fix.
        return problems;
    }
    let lower = html.to_ascii_lowercase();
    if !HTML_MARKERS.iter().any(|marker| lower.contains(marker)) {
        problems.push(
            "This does not look like HTML: send a document with elements such as <html>, <body> or <div>."
                .to_owned(),
        );
    }
    for (element, attribute) in [("script", "src"), ("link", "href")] {
        for url in network_references(html, &lower, element, attribute) {
            problems.push(format!(
                "<{element} {attribute}=\"{url}\"> loads from the network, but the artifact must work \
                 offline: put its content inline."
            ));
        }
    }
    if contains_call(html, "fetch(") {
        problems.push(
            "The script calls fetch(), but the artifact has no network access: embed the data in the page."
                .to_owned(),
        );
    }
    if html.contains("XMLHttpRequest") {
        problems.push(
            "The script uses XMLHttpRequest, but the artifact has no network access: embed the data in the page."
                .to_owned(),
        );
    }
    let opened = count_tags(&lower, "<script");
    let closed = count_tags(&lower, "</script");
    if opened != closed {
        problems.push(format!(
            "The <script> tags are unbalanced: {opened} opened and {closed} closed."
        ));
    }
    problems
}

/// `attribute` values of `element` tags that point at http(s) or protocol-relative URLs.
fn network_references<'a>(html: &'a str, lower: &str, element: &str, attribute: &str) -> Vec<&'a str> {
    let opening = format!("<{element}");
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(pos) = lower[from..].find(&opening) {
        let start = from + pos + opening.len();
        from = start;
        if !lower[start..].starts_with(|c: char| c.is_ascii_whitespace()) {
            continue;
        }
        let end = tag_end(&lower[start..]).map_or(lower.len(), |e| start + e);
        for (name, value) in attributes(&html[start..end]) {
            let target = value.trim().to_ascii_lowercase();
            let remote = ["http://", "https://", "//"]
                .iter()
                .any(|p| target.starts_with(p));
            if name.eq_ignore_ascii_case(attribute) && remote {
                found.push(value.trim());
            }
        }
        from = end;
    }
    found
}

/// Offset of the `>` closing a tag whose attributes start at 0, skipping quoted values.
fn tag_end(tag: &str) -> Option<usize> {
    let mut quote = None;
    for (i, c) in tag.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '>') => return Some(i),
            _ => {}
        }
    }
    None
}

/// `name=value` pairs of a tag's attribute text (quoted, single-quoted or bare values).
fn attributes(text: &str) -> Vec<(&str, &str)> {
    let mut pairs = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_ascii_whitespace() || c == '/');
        if rest.is_empty() {
            return pairs;
        }
        let name_end = rest
            .find(|c: char| c.is_ascii_whitespace() || c == '=' || c == '/')
            .unwrap_or(rest.len());
        let name = &rest[..name_end];
        rest = rest[name_end..].trim_start();
        // A name without `=` is a bare flag such as `defer`; the name was consumed, so this advances.
        let Some(after_eq) = rest.strip_prefix('=') else {
            continue;
        };
        let after_eq = after_eq.trim_start();
        let (value, remaining) = match after_eq.chars().next() {
            Some(q @ ('"' | '\'')) => {
                let body = &after_eq[1..];
                match body.find(q) {
                    Some(close) => (&body[..close], &body[close + 1..]),
                    None => (body, ""),
                }
            }
            _ => {
                let end = after_eq
                    .find(|c: char| c.is_ascii_whitespace())
                    .unwrap_or(after_eq.len());
                (&after_eq[..end], &after_eq[end..])
            }
        };
        pairs.push((name, value));
        rest = remaining;
    }
}

/// Tags starting with `opening` (already lower-case) followed by whitespace, `>` or `/`.
fn count_tags(lower: &str, opening: &str) -> usize {
    lower
        .match_indices(opening)
        .filter(|(pos, _)| {
            lower[pos + opening.len()..]
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_whitespace() || c == '>' || c == '/')
        })
        .count()
}

/// `call` (such as `fetch(`) as a call of that name, not the end of a longer name like `prefetch(`.
fn contains_call(text: &str, call: &str) -> bool {
    text.match_indices(call).any(|(pos, _)| {
        text[..pos]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '$'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_are_read_with_any_quoting() {
        assert_eq!(
            attributes(r#" type="module" src='https://a.b/x.js' defer data-x=1"#),
            vec![("type", "module"), ("src", "https://a.b/x.js"), ("data-x", "1")]
        );
    }

    #[test]
    fn a_quoted_greater_than_does_not_end_the_tag() {
        assert_eq!(tag_end(r#" alt="a>b" src="x">rest"#), Some(18));
    }

    #[test]
    fn prefixed_names_are_not_fetch_calls() {
        assert!(!contains_call("prefetch(x); my_fetch(y)", "fetch("));
        assert!(contains_call("await fetch('/x')", "fetch("));
        assert!(contains_call("fetch(1)", "fetch("));
    }
}
