//! The per-turn web budget: how many distinct `search` / `fetch_content` calls one logical turn may make.
//!
//! The budget is plain state; the async layer asks [`WebBudget::admit`] before each web call, runs the
//! call on [`Admission::Run`], shares the earlier result on [`Admission::Reuse`], and reports a failed
//! run with [`WebBudget::failed`]. Repeats of a call already admitted are free, even after the budget is
//! spent, and a failed call keeps its charge.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::Error;
use crate::tools::names;

/// How much web work the user asked for in this turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum WebIntent {
    Auto,
    Search,
    Research,
}

impl WebIntent {
    /// Distinct web calls allowed per turn.
    pub fn cap(self) -> u32 {
        match self {
            Self::Auto => 5,
            Self::Search => 12,
            Self::Research => 30,
        }
    }

    /// The intent a skill or slash token stands for: `search` and `research` widen the budget, every
    /// other name is `Auto`. Case-sensitive, like skill names.
    pub fn of_skill(slug: &str) -> Self {
        match slug {
            "search" => Self::Search,
            "research" => Self::Research,
            _ => Self::Auto,
        }
    }
}

/// The intent of a turn from its last user text: `/research` anywhere as a token wins over `/search`;
/// prose ("please research this"), URLs and paths never count.
pub fn resolve_web_intent(last_user_text: &str) -> WebIntent {
    let mut intent = WebIntent::Auto;
    for slug in slash_tokens(last_user_text) {
        match WebIntent::of_skill(slug) {
            WebIntent::Research => return WebIntent::Research,
            WebIntent::Search => intent = WebIntent::Search,
            WebIntent::Auto => {}
        }
    }
    intent
}

/// Slugs of `/slug` tokens: a `/` at the start or after whitespace, one or more of `[A-Za-z0-9_-]`,
/// then whitespace or the end. `/notes.` and `a/b` are not tokens.
fn slash_tokens(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            let at = i;
            i += 1;
            let starts_token = bytes[at] == b'/'
                && (at == 0 || text[..at].chars().next_back().is_some_and(char::is_whitespace));
            if !starts_token {
                continue;
            }
            let slug_start = at + 1;
            let slug_len = bytes[slug_start..]
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_' || **b == b'-')
                .count();
            let slug_end = slug_start + slug_len;
            let ends_token =
                slug_end == bytes.len() || text[slug_end..].chars().next().is_some_and(char::is_whitespace);
            if slug_len > 0 && ends_token {
                i = slug_end;
                return Some(&text[slug_start..slug_end]);
            }
        }
        None
    })
}

/// Name of the switch for research promotion, as operators write it in the environment.
pub const PROMOTION_SETTING: &str = "PROMPTGATE_WEB_BUDGET_PROMOTION";

/// Reads the promotion switch: unset or `on` enables it, `off` disables it, anything else is refused so
/// a typo cannot silently change behaviour.
pub fn parse_promotion_setting(value: Option<&str>) -> Result<bool, Error> {
    match value {
        None | Some("on") => Ok(true),
        Some("off") => Ok(false),
        Some(other) => Err(Error::InvalidSetting {
            setting: PROMOTION_SETTING,
            value: other.to_owned(),
            expected: "\"on\" or \"off\"",
        }),
    }
}

/// The message of the result a denied web call gets unless the caller supplies its own.
pub const DEFAULT_EXHAUSTED_MESSAGE: &str = "This turn has used all of its web calls. Answer now with \
    the results gathered so far.";

/// What a denied web call returns to the model: `{status: "budget_exhausted", message}`.
pub fn budget_exhausted_result(message: Option<&str>) -> Value {
    json!({
        "status": "budget_exhausted",
        "message": message.unwrap_or(DEFAULT_EXHAUSTED_MESSAGE),
    })
}

/// The budget's decision on one web call.
#[derive(Debug, Clone, PartialEq)]
pub enum Admission {
    /// Run the call; it has been charged. Report a failure with [`WebBudget::failed`].
    Run { key: String },
    /// An equal call was admitted before: share its result. Free of charge.
    Reuse { key: String },
    /// The budget is spent; hand the model this result instead of running the call.
    Exhausted(Value),
}

/// Web-call budget of one logical turn. Retries of the same turn keep using it, also on another
/// instance (it is stored with the turn as JSON).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WebBudget {
    intent: WebIntent,
    cap: u32,
    consumed: u32,
    exhausted_attempts: u32,
    promotion_enabled: bool,
    exhausted_message: Option<String>,
    admitted: HashSet<String>,
}

impl WebBudget {
    pub fn new(intent: WebIntent, promotion_enabled: bool) -> Self {
        Self {
            intent,
            cap: intent.cap(),
            consumed: 0,
            exhausted_attempts: 0,
            promotion_enabled,
            exhausted_message: None,
            admitted: HashSet::new(),
        }
    }

    /// Replaces the default message of the `budget_exhausted` result.
    pub fn with_exhausted_message(mut self, message: impl Into<String>) -> Self {
        self.exhausted_message = Some(message.into());
        self
    }

    /// The intent the budget was created with; promotion does not change it.
    pub fn intent(&self) -> WebIntent {
        self.intent
    }
    pub fn initial_cap(&self) -> u32 {
        self.intent.cap()
    }
    pub fn cap(&self) -> u32 {
        self.cap
    }
    pub fn consumed(&self) -> u32 {
        self.consumed
    }
    pub fn remaining(&self) -> u32 {
        self.cap.saturating_sub(self.consumed)
    }
    pub fn promoted(&self) -> bool {
        self.cap != self.intent.cap()
    }
    pub fn is_exhausted(&self) -> bool {
        self.consumed >= self.cap
    }
    /// Web calls denied so far; the first denial is what switches the next step to answering.
    pub fn exhausted_attempts(&self) -> u32 {
        self.exhausted_attempts
    }

    /// Widens an `Auto` budget to the research cap when a research skill is loaded mid-turn. Only that
    /// one transition exists, and only with promotion enabled; nothing already counted is reset.
    pub fn promote(&mut self, next: WebIntent) {
        if self.promotion_enabled && self.intent == WebIntent::Auto && next == WebIntent::Research {
            self.cap = WebIntent::Research.cap();
        }
    }

    /// Decides whether a web call may run. Non-web tools are outside the budget and always run.
    pub fn admit(&mut self, tool: &str, input: &Value) -> Admission {
        let key = normalize_web_tool_key(tool, input);
        if !names::WEB.contains(&tool) {
            return Admission::Run { key };
        }
        if self.admitted.contains(&key) {
            return Admission::Reuse { key };
        }
        if self.is_exhausted() {
            self.exhausted_attempts += 1;
            return Admission::Exhausted(budget_exhausted_result(self.exhausted_message.as_deref()));
        }
        self.consumed += 1;
        self.admitted.insert(key.clone());
        Admission::Run { key }
    }

    /// The keys of the calls admitted so far (their repeats are free).
    pub fn admitted_keys(&self) -> impl Iterator<Item = &str> {
        self.admitted.iter().map(String::as_str)
    }

    /// Forgets a call that failed so a repeat runs again. The charge stays.
    pub fn failed(&mut self, key: &str) {
        self.admitted.remove(key);
    }

    /// The line appended to every web result shown to the model. Computed when the result is shown, so
    /// a shared result reports the capacity left at that moment.
    pub fn remaining_line(&self) -> String {
        let mut line = format!("Web calls remaining this turn: {}.", self.remaining());
        if self.is_exhausted() {
            line.push_str(" Write your answer now from the evidence you have; make no further web calls.");
        }
        line
    }

    /// The two text parts a web result is shown to the model as: the result as JSON, then
    /// [`Self::remaining_line`]. The UI keeps the plain result.
    pub fn model_output_parts(&self, output: &Value) -> [String; 2] {
        [output.to_string(), self.remaining_line()]
    }
}

/// The dedupe key of a web call: `search` queries are trimmed, lower-cased and have whitespace runs
/// collapsed; `fetch_content` URLs are normalised (see [`normalize_url`]). Other arguments stay.
pub fn normalize_web_tool_key(tool: &str, input: &Value) -> String {
    let Value::Object(args) = input else {
        return tool_call_key(tool, input);
    };
    let mut args = args.clone();
    if tool == names::SEARCH {
        if let Some(Value::String(query)) = args.get("query") {
            let query = query
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase();
            args.insert("query".to_owned(), Value::String(query));
        }
    } else if let Some(Value::String(url)) = args.get("url") {
        let url = normalize_url(url);
        args.insert("url".to_owned(), Value::String(url));
    }
    tool_call_key(tool, &Value::Object(args))
}

/// A URL rebuilt as scheme, `//`, lower-case host (default port dropped), path, query and fragment:
/// user-info disappears, an empty `?` or `#` disappears, the root path `/` disappears, and path case
/// and trailing slashes are kept. Unparseable input is only trimmed.
pub fn normalize_url(raw: &str) -> String {
    let trimmed = raw.trim();
    let Ok(url) = url::Url::parse(trimmed) else {
        return trimmed.to_owned();
    };
    let mut out = format!("{}://", url.scheme());
    if let Some(host) = url.host_str() {
        out.push_str(&host.to_lowercase());
    }
    if let Some(port) = url.port() {
        out.push_str(&format!(":{port}"));
    }
    if url.path() != "/" {
        out.push_str(url.path());
    }
    if let Some(query) = url.query().filter(|q| !q.is_empty()) {
        out.push('?');
        out.push_str(query);
    }
    if let Some(fragment) = url.fragment().filter(|f| !f.is_empty()) {
        out.push('#');
        out.push_str(fragment);
    }
    out
}

/// `name:` plus the arguments as JSON with every object's keys sorted, so key order never matters.
pub fn tool_call_key(name: &str, input: &Value) -> String {
    let mut key = String::with_capacity(name.len() + 64);
    key.push_str(name);
    key.push(':');
    write_stable(&mut key, input);
    key
}

/// JSON with object keys sorted at every depth; arrays keep their order.
pub fn stable_stringify(value: &Value) -> String {
    let mut out = String::new();
    write_stable(&mut out, value);
    out
}

fn write_stable(out: &mut String, value: &Value) {
    match value {
        Value::Object(map) => write_sorted_object(out, map),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_stable(out, item);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

fn write_sorted_object(out: &mut String, map: &Map<String, Value>) {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    out.push('{');
    for (i, (k, v)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&Value::String(k.clone()).to_string());
        out.push(':');
        write_stable(out, v);
    }
    out.push('}');
}
