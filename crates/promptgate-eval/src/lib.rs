//! The library behind `promptgate eval`: scenario files read and bounded, each scenario run as a
//! send through the real service (the caller builds it, with its providers and web tools, over a
//! database of its own) and its answer scored against the scenario's criteria.
//!
//! It depends on the service and core only; the server's command line opens the database, builds
//! the service from its configuration and prints what [`run`] returns.

#![deny(clippy::disallowed_methods)]

mod citations;
mod scoring;

use std::path::Path;

use anyhow::Context;
use futures::StreamExt;
use promptgate_core::settings::UserSettings;
use promptgate_service::events::{TurnEvent, UiChunk};
use promptgate_service::records::NewSkill;
use promptgate_service::{SendInput, SendRequest, Service};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub use citations::CitationRates;
pub use promptgate_core::citations::check::CitationCounts;
pub use scoring::{Criteria, Observed, score};

/// Bounds on what a scenario file may ask for.
const MAX_SCENARIOS: usize = 200;
const MAX_FILE_BYTES: u64 = 1 << 20;
const EVAL_USER: &str = "eval";

/// A scenario file: `scenarios:` followed by a list.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    pub scenarios: Vec<Scenario>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    /// The user's message; slash tokens such as `/research` work as in the chat.
    pub message: String,
    /// Fields of the user's settings (as `PUT /v1/settings` takes them).
    #[serde(default)]
    pub settings: Option<Value>,
    /// Skills the scenario's user has, in the shape `POST /v1/skills` takes.
    #[serde(default)]
    pub skills: Vec<NewSkill>,
    /// The model, unless `--model` overrides it; default: the config's default model.
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub criteria: Criteria,
}

/// One scenario's result.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub name: String,
    pub model: String,
    pub passed: bool,
    pub failures: Vec<String>,
    pub citations: usize,
    /// The engine's check of the answer's citations; `None` when the turn had no sources to check
    /// against (no web tools).
    pub citation_counts: Option<CitationCounts>,
    pub citation_rates: CitationRates,
    pub web_tool_calls: usize,
    pub steps: u32,
    pub text: String,
}

pub fn load(path: &Path) -> anyhow::Result<ScenarioFile> {
    let size = std::fs::metadata(path)
        .with_context(|| format!("cannot read the scenario file {}", path.display()))?
        .len();
    anyhow::ensure!(
        size <= MAX_FILE_BYTES,
        "the scenario file {} is larger than 1 MiB",
        path.display()
    );
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the scenario file {}", path.display()))?;
    parse(&text).with_context(|| format!("the scenario file {} is invalid", path.display()))
}

pub fn parse(text: &str) -> anyhow::Result<ScenarioFile> {
    let file: ScenarioFile = yaml_serde::from_str(text)?;
    anyhow::ensure!(!file.scenarios.is_empty(), "it lists no scenarios");
    anyhow::ensure!(
        file.scenarios.len() <= MAX_SCENARIOS,
        "it lists more than {MAX_SCENARIOS} scenarios"
    );
    for scenario in &file.scenarios {
        anyhow::ensure!(
            !scenario.message.trim().is_empty(),
            "scenario {:?} has an empty message",
            scenario.name
        );
    }
    Ok(file)
}

/// Runs every scenario on `service`, one after the other, each for a user and in a thread of its
/// own. A scenario's model is `model` when given, else its own, else `default_model`.
pub async fn run(
    service: &Service,
    default_model: &str,
    file: &ScenarioFile,
    model: Option<&str>,
) -> anyhow::Result<Vec<Outcome>> {
    let mut outcomes = Vec::with_capacity(file.scenarios.len());
    for (n, scenario) in file.scenarios.iter().enumerate() {
        // A user per scenario, so settings and skills of one never leak into the next.
        let user = format!("{EVAL_USER}-{n}");
        service.accounts().ensure_user(&user, &user).await?;
        prepare_user(service, &user, scenario).await?;
        let model = model
            .or(scenario.model.as_deref())
            .unwrap_or(default_model)
            .to_owned();
        let observed = run_one(service, &user, &format!("eval-{n}"), scenario, &model)
            .await
            .with_context(|| format!("scenario {:?} could not run", scenario.name))?;
        let failures = score(&scenario.criteria, &observed);
        outcomes.push(Outcome {
            name: scenario.name.clone(),
            model,
            passed: failures.is_empty(),
            failures,
            citations: observed.citations(),
            citation_counts: observed.citation_counts,
            citation_rates: observed.citation_rates(),
            web_tool_calls: observed.web_calls().count(),
            steps: observed.steps,
            text: observed.text,
        });
    }
    Ok(outcomes)
}

async fn prepare_user(service: &Service, user: &str, scenario: &Scenario) -> anyhow::Result<()> {
    if let Some(changes) = &scenario.settings {
        let mut settings = serde_json::to_value(service.settings(user).await?)?;
        if let (Some(target), Some(changes)) = (settings.as_object_mut(), changes.as_object()) {
            for (key, value) in changes {
                target.insert(key.clone(), value.clone());
            }
        }
        let settings: UserSettings = serde_json::from_value(settings)
            .with_context(|| format!("scenario {:?}: invalid settings", scenario.name))?;
        service.put_settings(user, &settings).await?;
    }
    for skill in &scenario.skills {
        service.create_skill(user, skill).await?;
    }
    Ok(())
}

async fn run_one(
    service: &Service,
    user: &str,
    thread: &str,
    scenario: &Scenario,
    model: &str,
) -> anyhow::Result<Observed> {
    let handle = service
        .send(SendRequest {
            create_thread: true,
            model: Some(model.to_owned()),
            ..SendRequest::new(
                user,
                thread,
                SendInput::Message {
                    id: None,
                    parts: vec![json!({"type": "text", "text": scenario.message})],
                },
            )
        })
        .await?;
    let mut observed = Observed::default();
    let mut events = handle.events;
    while let Some(event) = events.next().await {
        let TurnEvent::Chunk(chunk) = event else {
            continue;
        };
        match chunk {
            UiChunk::StartStep => observed.steps += 1,
            UiChunk::TextDelta { delta, .. } => observed.text.push_str(&delta),
            UiChunk::ToolInputAvailable { tool_name, input, .. } => {
                observed.tool_calls.push((tool_name, input))
            }
            UiChunk::MessageMetadata { message_metadata } => {
                if let Some(counts) = message_metadata.get("citationCounts") {
                    observed.citation_counts = serde_json::from_value(counts.clone()).ok();
                }
            }
            UiChunk::Error { error_text } => anyhow::bail!("the turn failed: {error_text}"),
            _ => {}
        }
    }
    Ok(observed)
}

/// A plain-text table: one line per scenario, its failures indented below it, then the citation
/// rates of all scenarios together.
pub fn table(outcomes: &[Outcome]) -> String {
    let width = outcomes
        .iter()
        .map(|o| o.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(8);
    let row = |name: &str, result: &str, cited: &str, rates: &CitationRates, calls: &str, steps: &str| {
        format!(
            "{name:<width$}  {result:<6}  {cited:>9}  {:>9}  {:>8}  {:>12}  {calls:>9}  {steps:>5}\n",
            citations::percent(rates.precision),
            citations::percent(rates.dangling_rate),
            citations::percent(rates.snippet_only_rate),
        )
    };
    let mut out = format!(
        "{:<width$}  {:<6}  {:>9}  {:>9}  {:>8}  {:>12}  {:>9}  {:>5}\n",
        "scenario", "result", "citations", "precision", "dangling", "snippet-only", "web calls", "steps"
    );
    for outcome in outcomes {
        let result = if outcome.passed { "pass" } else { "FAIL" };
        out.push_str(&row(
            &outcome.name,
            result,
            &outcome.citations.to_string(),
            &outcome.citation_rates,
            &outcome.web_tool_calls.to_string(),
            &outcome.steps.to_string(),
        ));
        for failure in &outcome.failures {
            out.push_str(&format!("    - {failure}\n"));
        }
    }
    let all = citations::sum(outcomes.iter().filter_map(|o| o.citation_counts.as_ref()));
    out.push_str(&row("overall", "", "", &CitationRates::of(&all), "", ""));
    let passed = outcomes.iter().filter(|o| o.passed).count();
    out.push_str(&format!("{passed}/{} scenarios passed", outcomes.len()));
    out
}
