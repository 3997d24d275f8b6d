//! The web budget and the source registry of one logical turn, plugged into the engine.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};

use promptgate_core::budget::{Admission, WebBudget, normalize_web_tool_key};
use promptgate_core::citations::check::{Citation, check_citations};
use promptgate_core::citations::markers::Marker;
use promptgate_core::sources::SourceRegistry;
use promptgate_core::tools::ToolOutput;
use promptgate_core::tools::ToolSpec;
use serde_json::Value;

use promptgate_turn::engine::{Gate, SourceRef, TurnHooks};

/// Budget and registry of one logical turn. An automatic retry of the turn (`retry_of`) gets the same
/// state back, so it neither re-spends nor renumbers.
pub struct TurnState {
    pub budget: Mutex<WebBudget>,
    pub sources: Arc<Mutex<SourceRegistry>>,
    /// Calls the earlier attempt ran whose results were not kept with its state (too large, or
    /// saved before results were kept): the first repeat of each runs again without a charge.
    pub carried: Mutex<HashSet<String>>,
}

impl TurnState {
    pub fn new(budget: WebBudget) -> Self {
        Self::restored(budget, SourceRegistry::new(), &HashSet::new())
    }

    /// The state of an earlier attempt, read back from the store with the results of the calls
    /// in `answered` (the turn's cache answers their repeats).
    pub fn restored(budget: WebBudget, sources: SourceRegistry, answered: &HashSet<&str>) -> Self {
        let carried = budget
            .admitted_keys()
            .filter(|key| !answered.contains(key))
            .map(str::to_owned)
            .collect();
        Self {
            budget: Mutex::new(budget),
            sources: Arc::new(Mutex::new(sources)),
            carried: Mutex::new(carried),
        }
    }

    pub fn budget(&self) -> MutexGuard<'_, WebBudget> {
        self.budget
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn sources(&self) -> MutexGuard<'_, SourceRegistry> {
        self.sources
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Hooks of one send: the turn state plus where this send's new sources start.
pub struct WebHooks {
    state: Arc<TurnState>,
    announced: Mutex<usize>,
}

impl WebHooks {
    pub fn new(state: Arc<TurnState>) -> Self {
        let announced = state.sources().mark();
        Self {
            state,
            announced: Mutex::new(announced),
        }
    }
}

impl TurnHooks for WebHooks {
    fn budget_key(&self, spec: &ToolSpec, input: &Value) -> Option<String> {
        spec.web.then(|| normalize_web_tool_key(&spec.name, input))
    }

    fn gate(&self, spec: &ToolSpec, input: &Value) -> Gate {
        let mut budget = self.state.budget();
        let mut admission = budget.admit(&spec.name, input);
        if let Admission::Reuse { key } = &admission
            && self
                .state
                .carried
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(key)
        {
            return Gate::Run;
        }
        if let Admission::Reuse { key } = &admission {
            // The engine shares results of calls still cached; a key the budget knows but the engine
            // asked about anyway belongs to a call that failed, which is forgotten (not refunded).
            let key = key.clone();
            budget.failed(&key);
            admission = budget.admit(&spec.name, input);
        }
        match admission {
            Admission::Run { .. } | Admission::Reuse { .. } => Gate::Run,
            Admission::Exhausted(result) => Gate::Deny(ToolOutput::json(result)),
        }
    }

    fn model_text(&self, spec: &ToolSpec, output: &ToolOutput) -> String {
        if !spec.web {
            return output.text_for_model();
        }
        // Computed now, not when the call ran, so a shared result shows the live remaining capacity.
        let [result, remaining] = self.state.budget().model_output_parts(&output.output);
        let result = output.model_text.clone().unwrap_or(result);
        format!("{result}\n\n{remaining}")
    }

    fn floor_active(&self) -> bool {
        self.state.budget().exhausted_attempts() > 0
    }

    fn floor_lifted(&self) -> bool {
        let budget = self.state.budget();
        budget.exhausted_attempts() > 0 && !budget.is_exhausted()
    }

    fn sources_snapshot(&self) -> Option<Value> {
        let sources = self.state.sources();
        if sources.is_empty() {
            return None;
        }
        serde_json::to_value(sources.snapshot()).ok()
    }

    fn citable_sources(&self) -> Option<Vec<u32>> {
        Some(self.state.sources().indexes())
    }

    fn check_citations(&self, text: &str, text_part: u32, markers: &[Marker]) -> Vec<Citation> {
        let sources = self.state.sources();
        check_citations(text, text_part, markers, &sources.seen_sources())
    }

    fn citation_source_bytes(&self) -> usize {
        self.state
            .sources()
            .seen_sources()
            .iter()
            .map(|s| s.text.len())
            .sum()
    }

    fn new_sources(&self) -> Vec<SourceRef> {
        let sources = self.state.sources();
        let mut announced = self
            .announced
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let fresh = sources
            .new_since(*announced)
            .iter()
            .map(|s| SourceRef {
                id: format!("source-{}", s.index),
                url: s.url.clone(),
                title: Some(s.title.clone()),
            })
            .collect();
        *announced = sources.mark();
        fresh
    }
}
