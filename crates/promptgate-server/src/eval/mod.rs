//! `promptgate eval`: runs scenarios through the real engine (the turn service over an in-memory
//! SQLite store, with the configured providers and web tools) and scores each answer.

mod scoring;

use std::path::Path;

use anyhow::Context;
use futures::StreamExt;
use promptgate_core::settings::UserSettings;
use promptgate_service::events::{TurnEvent, UiChunk};
use promptgate_service::{Database, SendInput, SendRequest, Service};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub use scoring::{Criteria, Observed, score};

use crate::config::Config;
use crate::routes::library::NewSkill;

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
    /// Skills the user has enabled.
    #[serde(default)]
    pub skills: Vec<NewSkill>,
    /// The model, unless `--model` overrides it; default: the config's default model.
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub criteria: Criteria,
}

/// One scenario's result.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub name: String,
    pub model: String,
    pub passed: bool,
    pub failures: Vec<String>,
    pub citations: usize,
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

/// Runs every scenario, one after the other, each in a thread of its own.
pub async fn run(config: Config, file: &ScenarioFile, model: Option<&str>) -> anyhow::Result<Vec<Outcome>> {
    let database = Database::connect("sqlite::memory:")
        .await
        .context("cannot open an in-memory database")?;
    database.migrate().await.context("database migration failed")?;
    let default_model = config.default_model.clone();
    let state = crate::cli::prepare_with(config, database).await?;
    let mut outcomes = Vec::with_capacity(file.scenarios.len());
    for (n, scenario) in file.scenarios.iter().enumerate() {
        // A user per scenario, so settings and skills of one never leak into the next.
        let user = format!("{EVAL_USER}-{n}");
        state.service.accounts().ensure_user(&user, &user).await?;
        prepare_user(&state.service, &user, scenario).await?;
        let model = model
            .map(str::to_owned)
            .or_else(|| scenario.model.clone())
            .unwrap_or_else(|| default_model.clone());
        let observed = run_one(&state.service, &user, &format!("eval-{n}"), scenario, &model)
            .await
            .with_context(|| format!("scenario {:?} could not run", scenario.name))?;
        let failures = score(&scenario.criteria, &observed);
        outcomes.push(Outcome {
            name: scenario.name.clone(),
            model,
            passed: failures.is_empty(),
            failures,
            citations: observed.citations(),
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
        service.create_skill(user, &skill.clone().into()).await?;
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
            user_id: user.to_owned(),
            thread_id: thread.to_owned(),
            create_thread: true,
            input: SendInput::Message {
                id: None,
                parts: vec![json!({"type": "text", "text": scenario.message})],
            },
            model: Some(model.to_owned()),
            retry_of: None,
            client: None,
            notes: Default::default(),
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
            UiChunk::Error { error_text } => anyhow::bail!("the turn failed: {error_text}"),
            _ => {}
        }
    }
    Ok(observed)
}

/// A plain-text table: one line per scenario, its failures indented below it.
pub fn table(outcomes: &[Outcome]) -> String {
    let width = outcomes
        .iter()
        .map(|o| o.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(8);
    let mut out = format!(
        "{:<width$}  {:<6}  {:>9}  {:>9}  {:>5}\n",
        "scenario", "result", "citations", "web calls", "steps"
    );
    for outcome in outcomes {
        let result = if outcome.passed { "pass" } else { "FAIL" };
        out.push_str(&format!(
            "{:<width$}  {:<6}  {:>9}  {:>9}  {:>5}\n",
            outcome.name, result, outcome.citations, outcome.web_tool_calls, outcome.steps
        ));
        for failure in &outcome.failures {
            out.push_str(&format!("    - {failure}\n"));
        }
    }
    let passed = outcomes.iter().filter(|o| o.passed).count();
    out.push_str(&format!("{passed}/{} scenarios passed", outcomes.len()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scenario_file_reads_settings_skills_and_criteria() {
        let file = parse(
            "scenarios:\n  - name: cited\n    message: /research tides\n    settings: {preferred_name: Ada}\n    \
             skills:\n      - {slug: research, name: Research, instructions: Dig deep.}\n    \
             criteria: {minCitations: 2, noDuplicateToolCalls: true}\n",
        )
        .unwrap();
        let scenario = &file.scenarios[0];
        assert_eq!(scenario.skills[0].slug, "research");
        assert_eq!(scenario.criteria.min_citations, Some(2));
        assert_eq!(scenario.settings.as_ref().unwrap()["preferred_name"], "Ada");
    }

    #[test]
    fn empty_files_and_unknown_criteria_are_refused_with_a_reason() {
        let empty = parse("scenarios: []\n").unwrap_err().to_string();
        assert!(empty.contains("no scenarios"), "{empty}");
        let unknown = parse("scenarios:\n  - name: x\n    message: hi\n    criteria: {minCites: 1}\n")
            .unwrap_err()
            .to_string();
        assert!(unknown.contains("minCites"), "{unknown}");
    }

    #[test]
    fn the_shipped_scenarios_parse() {
        let file = parse(include_str!("../../../../eval/scenarios.yaml")).unwrap();
        assert!((5..=8).contains(&file.scenarios.len()));
    }

    #[test]
    fn the_table_shows_each_failure_under_its_scenario() {
        let outcomes = vec![
            Outcome {
                name: "ok".into(),
                model: "m".into(),
                passed: true,
                failures: vec![],
                citations: 2,
                web_tool_calls: 3,
                steps: 4,
                text: String::new(),
            },
            Outcome {
                name: "broken".into(),
                model: "m".into(),
                passed: false,
                failures: vec!["Too few web tool calls: 0 (min: 1)".into()],
                citations: 0,
                web_tool_calls: 0,
                steps: 1,
                text: String::new(),
            },
        ];
        let table = table(&outcomes);
        assert!(table.contains("broken    FAIL"), "{table}");
        assert!(table.contains("    - Too few web tool calls: 0 (min: 1)"));
        assert!(table.ends_with("1/2 scenarios passed"));
    }
}
