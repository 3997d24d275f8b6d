//! Running the tool calls of a step: argument checks, the dedupe and budget layers, timeouts.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use promptgate_core::budget::tool_call_key;
use promptgate_core::tools::ToolSpec;
use promptgate_core::tools::{ToolError, ToolOutput};
use serde_json::Value;

use super::plan::{Gate, RunnableTool, TurnHooks};

/// The cache keys of calls the web budget admitted start with this, then the budget's key.
const BUDGET_PREFIX: &str = "budget:";

pub(super) type CallResult = Result<ToolOutput, ToolError>;
type SharedCall = Shared<BoxFuture<'static, CallResult>>;

/// Results of identical calls, shared while in flight and after success. A failure is removed so
/// the next identical call tries again. Clones share the same map.
#[derive(Clone, Default)]
pub struct ToolCache {
    calls: Arc<Mutex<HashMap<String, SharedCall>>>,
}

impl fmt::Debug for ToolCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolCache")
            .field("entries", &self.lock().len())
            .finish()
    }
}

impl ToolCache {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, SharedCall>> {
        // A panic while holding this lock cannot leave the map half-updated (single inserts and
        // removes), so a poisoned lock is still safe to use.
        self.calls.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn get(&self, key: &str) -> Option<SharedCall> {
        self.lock().get(key).cloned()
    }

    fn insert(&self, key: String, call: BoxFuture<'static, CallResult>) -> SharedCall {
        let shared = call.shared();
        self.lock().insert(key, shared.clone());
        shared
    }

    fn forget(&self, key: &str, failed: &SharedCall) {
        let mut calls = self.lock();
        if calls.get(key).is_some_and(|current| current.ptr_eq(failed)) {
            calls.remove(key);
        }
    }

    /// Drops calls that have not finished. After a Stop nothing polls them any more, and a later
    /// identical call must run afresh rather than wait on an abandoned one.
    pub fn drop_unfinished(&self) {
        self.lock().retain(|_, call| call.peek().is_some());
    }

    /// The results of the web calls the budget admitted that finished well, by budget key: what an
    /// automatic retry of the turn answers its repeats from, on any instance.
    pub fn budget_results(&self) -> Vec<(String, ToolOutput)> {
        self.lock()
            .iter()
            .filter_map(|(key, call)| {
                let key = key.strip_prefix(BUDGET_PREFIX)?;
                match call.peek()? {
                    Ok(output) => Some((key.to_owned(), output.clone())),
                    Err(_) => None,
                }
            })
            .collect()
    }

    /// A cache that answers a repeat of each of `results` (by budget key) with its stored result,
    /// as if the call had just run in this turn.
    pub fn with_budget_results(results: impl IntoIterator<Item = (String, ToolOutput)>) -> Self {
        let cache = Self::default();
        {
            let mut calls = cache.lock();
            for (key, output) in results {
                let done = futures::future::ready(Ok(output)).boxed().shared();
                calls.insert(format!("{BUDGET_PREFIX}{key}"), done);
            }
        }
        cache
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Awaits a shared call and forgets it if it failed.
    fn join(&self, key: String, shared: SharedCall) -> BoxFuture<'static, CallResult> {
        let cache = self.clone();
        async move {
            let result = shared.clone().await;
            if result.is_err() {
                cache.forget(&key, &shared);
            }
            result
        }
        .boxed()
    }
}

/// A tool call after its name and arguments were checked.
pub(super) enum Checked {
    Run {
        tool: usize,
        input: Value,
    },
    /// Answered with an error without running; `input` is what the UI shows.
    Refused {
        input: Value,
        error: String,
    },
}

/// Checks a call against the tools offered in this step.
pub(super) fn check_call(tools: &[RunnableTool], offered: bool, name: &str, arguments: &str) -> Checked {
    let parsed = parse_arguments(arguments);
    let Some(tool) = tools.iter().position(|tool| tool.spec.name == name) else {
        let input = parsed.unwrap_or_else(|_| Value::String(arguments.to_owned()));
        let names: Vec<&str> = tools.iter().map(|tool| tool.spec.name.as_str()).collect();
        let error = if names.is_empty() {
            format!("there is no tool named `{name}`, and no tools are available")
        } else {
            format!(
                "there is no tool named `{name}`; the available tools are: {}",
                names.join(", ")
            )
        };
        return Checked::Refused { input, error };
    };
    match parsed {
        Err(reason) => Checked::Refused {
            input: Value::String(arguments.to_owned()),
            error: ToolError::InvalidArguments(reason).to_string(),
        },
        Ok(input) if !offered => Checked::Refused {
            input,
            error: "tools cannot be called in this step; answer with the information already gathered"
                .to_owned(),
        },
        Ok(input) => Checked::Run { tool, input },
    }
}

/// Checks a client tool's call before it is handed to the client: the arguments as the JSON
/// object text the client receives, or the error the model gets instead.
pub(super) fn check_client_call(offered: bool, oversized: bool, arguments: &str) -> Result<String, String> {
    if oversized {
        return Err(ToolError::InvalidArguments(
            "the arguments are longer than the gateway accepts (1 MiB)".to_owned(),
        )
        .to_string());
    }
    if !offered {
        return Err(
            "tools cannot be called in this step; answer with the information already gathered".to_owned(),
        );
    }
    match parse_arguments(arguments) {
        Ok(_) if arguments.trim().is_empty() => Ok("{}".to_owned()),
        Ok(_) => Ok(arguments.to_owned()),
        Err(reason) => Err(ToolError::InvalidArguments(reason).to_string()),
    }
}

fn parse_arguments(arguments: &str) -> Result<Value, String> {
    if arguments.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err("the arguments must be a JSON object".to_owned()),
        Err(err) => Err(format!("the arguments are not valid JSON ({err})")),
    }
}

/// Starts one call through the layers: the budget's shared results and gate, then the
/// per-request dedupe of cacheable tools, then the executor under the timeout. The layering
/// decision happens synchronously, so parallel identical calls of one step see each other.
pub(super) fn start_call(
    tool: &RunnableTool,
    input: Value,
    hooks: &dyn TurnHooks,
    cache: &ToolCache,
    timeout: Duration,
) -> BoxFuture<'static, CallResult> {
    let Some(budget_key) = hooks.budget_key(&tool.spec, &input) else {
        return deduped_call(tool, input, cache, timeout);
    };
    let key = format!("{BUDGET_PREFIX}{budget_key}");
    if let Some(shared) = cache.get(&key) {
        return cache.join(key, shared);
    }
    match hooks.gate(&tool.spec, &input) {
        Gate::Deny(output) => {
            metrics::counter!("promptgate_web_budget_denials_total", "tool" => metric_tool_name(&tool.spec))
                .increment(1);
            futures::future::ready(Ok(output)).boxed()
        }
        Gate::Run => {
            let shared = cache.insert(key.clone(), deduped_call(tool, input, cache, timeout));
            cache.join(key, shared)
        }
    }
}

fn deduped_call(
    tool: &RunnableTool,
    input: Value,
    cache: &ToolCache,
    timeout: Duration,
) -> BoxFuture<'static, CallResult> {
    if !tool.spec.cacheable {
        return timed_call(tool, input, timeout);
    }
    let key = format!("call:{}", tool_call_key(&tool.spec.name, &input));
    let shared = match cache.get(&key) {
        Some(shared) => shared,
        None => cache.insert(key.clone(), timed_call(tool, input, timeout)),
    };
    cache.join(key, shared)
}

fn timed_call(tool: &RunnableTool, input: Value, timeout: Duration) -> BoxFuture<'static, CallResult> {
    let executor = Arc::clone(&tool.executor);
    let name = metric_tool_name(&tool.spec);
    async move {
        let started = std::time::Instant::now();
        let result = match super::call_scope::within_call_time(timeout, executor.call(input)).await {
            Some(result) => result,
            None => Err(ToolError::TimedOut(timeout.as_secs())),
        };
        let outcome = match &result {
            Ok(_) => "ok",
            Err(ToolError::TimedOut(_)) => "timeout",
            Err(ToolError::Cancelled) => "cancelled",
            Err(_) => "error",
        };
        let labels = [("tool", name), ("outcome", outcome.to_owned())];
        metrics::counter!("promptgate_tool_calls_total", &labels).increment(1);
        metrics::histogram!("promptgate_tool_call_duration_seconds", &labels)
            .record(started.elapsed().as_secs_f64());
        result
    }
    .boxed()
}

/// The tool's label in metrics. MCP tools are named by their users, so they share one label and a
/// user cannot create series at will.
fn metric_tool_name(spec: &ToolSpec) -> String {
    if spec.mcp.is_some() {
        "mcp".to_owned()
    } else {
        spec.name.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_are_checked() {
        let tools = vec![];
        assert!(matches!(
            check_call(&tools, true, "nope", "{}"),
            Checked::Refused { .. }
        ));
        assert_eq!(parse_arguments("  "), Ok(json!({})));
        assert!(parse_arguments("[1]").is_err());
        assert!(parse_arguments("{\"a\":").is_err());
    }
}
