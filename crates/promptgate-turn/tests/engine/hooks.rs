//! The hooks the server plugs its web budget and source registry into.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use promptgate_core::tools::ToolSpec;
use promptgate_core::tools::{ToolError, ToolExecutor, ToolOutput};
use promptgate_llm::ToolChoice;
use promptgate_turn::{Gate, SourceRef, TurnHooks, UiChunk};
use serde_json::{Value, json};

use crate::support::*;

/// A small web budget with a source registry, shaped like the one the server uses.
struct WebBudget {
    cap: usize,
    consumed: AtomicUsize,
    denied: AtomicUsize,
    sources: Mutex<Vec<SourceRef>>,
    announced: AtomicUsize,
}

impl WebBudget {
    fn new(cap: usize) -> Arc<Self> {
        Arc::new(Self {
            cap,
            consumed: AtomicUsize::new(0),
            denied: AtomicUsize::new(0),
            sources: Mutex::default(),
            announced: AtomicUsize::new(0),
        })
    }
}

impl TurnHooks for WebBudget {
    fn budget_key(&self, spec: &ToolSpec, input: &Value) -> Option<String> {
        let query = input["query"].as_str().unwrap_or_default().trim().to_lowercase();
        spec.web.then(|| format!("{}:{query}", spec.name))
    }

    fn gate(&self, _spec: &ToolSpec, _input: &Value) -> Gate {
        if self.consumed.load(Ordering::SeqCst) >= self.cap {
            self.denied.fetch_add(1, Ordering::SeqCst);
            return Gate::Deny(ToolOutput::json(
                json!({"status": "budget_exhausted", "message": "no more"}),
            ));
        }
        self.consumed.fetch_add(1, Ordering::SeqCst);
        Gate::Run
    }

    fn model_text(&self, spec: &ToolSpec, output: &ToolOutput) -> String {
        if !spec.web {
            return output.text_for_model();
        }
        let left = self.cap.saturating_sub(self.consumed.load(Ordering::SeqCst));
        format!(
            "{}\nWeb calls remaining this turn: {left}.",
            output.text_for_model()
        )
    }

    fn floor_active(&self) -> bool {
        self.denied.load(Ordering::SeqCst) > 0
    }

    fn sources_snapshot(&self) -> Option<Value> {
        let sources = self.sources.lock().unwrap();
        (!sources.is_empty()).then(|| {
            json!(
                sources
                    .iter()
                    .map(|s| json!({"index": s.id, "url": s.url}))
                    .collect::<Vec<_>>()
            )
        })
    }

    fn new_sources(&self) -> Vec<SourceRef> {
        let sources = self.sources.lock().unwrap();
        let from = self.announced.swap(sources.len(), Ordering::SeqCst);
        sources[from..].to_vec()
    }
}

/// A search that registers one source per query.
struct Search {
    budget: Arc<WebBudget>,
    calls: AtomicUsize,
}

#[async_trait]
impl ToolExecutor for Search {
    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let mut sources = self.budget.sources.lock().unwrap();
        let index = sources.len() + 1;
        let url = format!("https://example.org/{index}");
        sources.push(SourceRef {
            id: index.to_string(),
            url: url.clone(),
            title: Some(format!("Result {index}")),
        });
        Ok(ToolOutput::json(
            json!({"query": input["query"], "sourceLabel": format!("[Source {index}]"), "url": url}),
        ))
    }
}

fn web_search(budget: &Arc<WebBudget>) -> (Arc<Search>, promptgate_turn::RunnableTool) {
    let search = Arc::new(Search {
        budget: budget.clone(),
        calls: AtomicUsize::new(0),
    });
    let spec = ToolSpec {
        web: true,
        ..spec("search", Some("searching for {query}"), true)
    };
    (search.clone(), tool(spec, search))
}

#[tokio::test(start_paused = true)]
async fn the_budget_dedupes_charges_denies_and_then_floors_the_next_step() {
    let budget = WebBudget::new(1);
    let (search, search_tool) = web_search(&budget);
    let model = ScriptedModel::new(vec![
        tool_calls(&[
            ("c1", "search", r#"{"query":"Rust"}"#),
            ("c2", "search", r#"{"query":" rust "}"#),
        ]),
        tool_calls(&[("c3", "search", r#"{"query":"python"}"#)]),
        answer(&["From what I found [1]."]),
    ]);
    let mut plan = plan(model.clone(), vec![search_tool]);
    plan.hooks = budget.clone();
    let done = run(plan).await;

    assert_eq!(
        search.calls.load(Ordering::SeqCst),
        1,
        "equal budget keys share one call"
    );
    assert_eq!(budget.consumed.load(Ordering::SeqCst), 1);
    assert!(done.chunks.contains(&UiChunk::ToolOutputAvailable {
        tool_call_id: "c3".into(),
        output: json!({"status": "budget_exhausted", "message": "no more"}),
        dynamic: None,
    }));

    let requests = model.requests();
    let step2 = tool_messages(&requests[1]);
    assert!(
        step2[0].1.ends_with("Web calls remaining this turn: 0."),
        "{step2:?}"
    );
    assert_eq!(
        step2[0].1, step2[1].1,
        "the shared result is handed to both calls"
    );
    assert_eq!(requests[1].tool_choice, None, "no floor before a denial");
    assert_eq!(last_user_text(&requests[1]), None);

    assert_eq!(requests[2].tool_choice, Some(ToolChoice::None));
    assert!(
        !requests[2].tools.is_empty(),
        "the floor keeps the tool list, only forbids calling"
    );
    assert_eq!(
        last_user_text(&requests[2]).as_deref(),
        Some("BUDGET: web calls are spent.")
    );
    assert!(tool_messages(&requests[2])[2].1.contains("budget_exhausted"));
}

#[tokio::test(start_paused = true)]
async fn new_sources_are_announced_after_the_tools_and_snapshotted_at_step_end() {
    let budget = WebBudget::new(5);
    let (_, search_tool) = web_search(&budget);
    let model = ScriptedModel::new(vec![
        tool_calls(&[("c1", "search", r#"{"query":"rust"}"#)]),
        answer(&["See [1]."]),
    ]);
    let mut plan = plan(model, vec![search_tool]);
    plan.hooks = budget.clone();
    let done = run(plan).await;

    let kinds = types(&done.chunks);
    let first_step_end = kinds.iter().position(|kind| kind == "finish-step").unwrap();
    assert_eq!(
        kinds[first_step_end - 3..=first_step_end],
        [
            "tool-output-available",
            "source-url",
            "message-metadata",
            "finish-step"
        ]
    );
    assert_eq!(
        done.chunks[first_step_end - 2],
        UiChunk::SourceUrl {
            source_id: "1".into(),
            url: "https://example.org/1".into(),
            title: Some("Result 1".into()),
        }
    );
    let UiChunk::MessageMetadata { message_metadata } = &done.chunks[first_step_end - 1] else {
        unreachable!()
    };
    assert_eq!(
        message_metadata["sources"],
        json!([{"index": "1", "url": "https://example.org/1"}])
    );
    assert_eq!(
        done.chunks
            .iter()
            .filter(|chunk| matches!(chunk, UiChunk::SourceUrl { .. }))
            .count(),
        1
    );
    assert_eq!(
        done.outcome.metadata["sources"],
        json!([{"index": "1", "url": "https://example.org/1"}])
    );
}
