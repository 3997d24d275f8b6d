//! Everything a turn is given up front, and what it reports at the end.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use promptgate_core::approval::ApprovalPolicy;
use promptgate_core::citations::check::Citation;
use promptgate_core::citations::markers::Marker;
use promptgate_core::settings::ModelProfile;
use promptgate_core::tools::ToolSpec;
use promptgate_core::tools::{ToolExecutor, ToolOutput};
use promptgate_llm::{ChatMessage, ChatModel, Usage};
use serde_json::{Map, Value};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::tools::ToolCache;
use crate::client_tools::ClientTools;
use crate::ui::UiFinishReason;

/// A tool of this send with the executor that runs it.
#[derive(Clone)]
pub struct RunnableTool {
    pub spec: ToolSpec,
    pub executor: Arc<dyn ToolExecutor>,
    /// Whether a call runs at once, waits for the user's approval, or is refused.
    pub approval: ApprovalPolicy,
}

impl RunnableTool {
    /// A tool whose calls run at once.
    pub fn allowed(spec: ToolSpec, executor: Arc<dyn ToolExecutor>) -> Self {
        Self {
            spec,
            executor,
            approval: ApprovalPolicy::Allow,
        }
    }
}

/// A call that waits for the user's approval: the turn ended with it, and the answer to it
/// continues the same message in a later turn. Bound to the call and its input, so an answer
/// can be checked against exactly what was asked.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingApproval {
    pub approval_id: String,
    pub tool_call_id: String,
    pub tool_name: String,
    pub input: Value,
}

/// The user's answer to a [`PendingApproval`], checked by the caller against what was stored.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalAnswer {
    pub pending: PendingApproval,
    pub approved: bool,
    /// The user's reason, as the client keeps it on the part.
    pub reason: Option<String>,
    /// What the model reads when the call does not run (denied, expired, cancelled).
    pub refusal: String,
}

/// A turn that continues a message whose calls waited for approval: the message as stored and
/// the answers to its calls, run or refused before the model is asked again.
#[derive(Debug, Clone, PartialEq)]
pub struct Resume {
    pub parts: Vec<Value>,
    pub metadata: Value,
    pub answers: Vec<ApprovalAnswer>,
}

/// How the model/tool loop is steered, from the model's profile.
#[derive(Debug, Clone, PartialEq)]
pub struct StepPolicy {
    /// Model steps per attempt; the last one is forced to answer without tools.
    pub max_steps: u32,
    /// Tool steps after which the preventive nudge is added.
    pub nudge_threshold: u32,
    /// Attempts of the empty-response retry (the first run counts as one).
    pub max_attempts: u32,
    pub temperature: Option<f64>,
    /// `false` asks the provider for one tool call per step.
    pub parallel_tool_calls: bool,
    pub reasoning_effort: Option<String>,
    /// The client's limit on the tokens each model request may produce.
    pub max_output_tokens: Option<u64>,
    /// The model takes images: those MCP tools return are shown to it after the step's results.
    pub tool_images: bool,
    /// Each step asks the provider for its answer whole (a facade client that reads one JSON
    /// answer and sees nothing before it): one body to read instead of a frame per token.
    pub whole_answers: bool,
}

impl StepPolicy {
    pub fn from_profile(profile: &ModelProfile, parallel_tool_calls: bool) -> Self {
        Self {
            max_steps: profile.max_steps(),
            nudge_threshold: profile.nudge_threshold(),
            max_attempts: profile.max_attempts(),
            temperature: Some(profile.temperature()),
            parallel_tool_calls,
            reasoning_effort: None,
            max_output_tokens: None,
            tool_images: false,
            whole_answers: false,
        }
    }
}

impl Default for StepPolicy {
    fn default() -> Self {
        Self::from_profile(&ModelProfile::default(), true)
    }
}

/// The texts added as user messages to steer the model. They come from the prompt module (and
/// the profile's overrides); the engine only decides when each one applies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Nudges {
    /// The last step of an attempt: answer now, no more tools.
    pub final_step: String,
    /// After `nudge_threshold` tool steps: synthesise and answer.
    pub preventive: String,
    /// The empty-response retry.
    pub retry: String,
    /// Appended to `retry` on the last retry: the answer must not be empty.
    pub retry_last: String,
    /// After the web budget denied a call: answer with what was gathered.
    pub web_budget: String,
}

/// Bounds on one turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnLimits {
    /// Attempts (the first run and each empty-response retry) the turn may start.
    pub max_upstream_requests: u32,
    /// The turn's whole life, retries of it included: at this age it is cut wherever it is (a
    /// stream still arriving, a tool still running) and ends with what it has.
    pub wall_clock: Duration,
    /// The most model steps of one attempt, whatever a model's profile asks for.
    pub max_steps: u32,
    /// A tool call that has not finished after this is answered with a timeout error.
    pub tool_timeout: Duration,
    /// Silence after which the transport is told to send a heartbeat.
    pub keep_alive: Duration,
    /// How long the end of the stream waits for the answer to be stored before it says so instead.
    pub save_grace: Duration,
    /// The most streamed text goes unrecorded: a checkpoint follows a text delta this long after
    /// the previous one (and every step end is one).
    pub checkpoint_every: Duration,
}

impl Default for TurnLimits {
    fn default() -> Self {
        Self {
            max_upstream_requests: 6,
            wall_clock: Duration::from_secs(120),
            max_steps: 100,
            tool_timeout: Duration::from_secs(60),
            keep_alive: Duration::from_secs(15),
            save_grace: Duration::from_secs(5),
            checkpoint_every: Duration::from_secs(1),
        }
    }
}

/// The turn request budget: a count of attempts and a wall clock, shared by an automatic retry of
/// the same turn so that retries cannot loop forever.
#[derive(Debug)]
pub struct RequestBudget {
    started: Instant,
    max_requests: u32,
    wall_clock: Duration,
    consumed: AtomicU32,
}

impl RequestBudget {
    pub fn new(max_requests: u32, wall_clock: Duration) -> Self {
        Self {
            started: Instant::now(),
            max_requests,
            wall_clock,
            consumed: AtomicU32::new(0),
        }
    }

    pub fn from_limits(limits: &TurnLimits) -> Self {
        Self::new(limits.max_upstream_requests, limits.wall_clock)
    }

    /// The budget of a turn that already used `consumed` requests over `elapsed` (a retry restored
    /// from the store, possibly on another instance).
    pub fn resumed(limits: &TurnLimits, consumed: u32, elapsed: Duration) -> Self {
        let budget = Self::from_limits(limits);
        Self {
            started: Instant::now().checked_sub(elapsed).unwrap_or(budget.started),
            consumed: AtomicU32::new(consumed),
            ..budget
        }
    }

    /// When the turn's wall clock runs out.
    pub fn deadline(&self) -> Instant {
        // A wall clock too long to add is as good as none: about thirty years.
        self.started
            .checked_add(self.wall_clock)
            .unwrap_or_else(|| self.started + Duration::from_secs(1 << 30))
    }

    /// Time since the turn's first attempt started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    pub fn is_exhausted(&self) -> bool {
        self.consumed.load(Ordering::SeqCst) >= self.max_requests || self.started.elapsed() >= self.wall_clock
    }

    /// Takes one request, or returns `false` when the budget is spent.
    pub fn try_consume(&self) -> bool {
        if self.started.elapsed() >= self.wall_clock {
            return false;
        }
        self.consumed
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < self.max_requests).then_some(n + 1)
            })
            .is_ok()
    }

    pub fn consumed(&self) -> u32 {
        self.consumed.load(Ordering::SeqCst)
    }
}

/// What the budget layer decides for a budgeted tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum Gate {
    /// The call may run; it has been charged.
    Run,
    /// The call must not run; this output answers it instead (e.g. `budget_exhausted`).
    Deny(ToolOutput),
}

/// A source first registered during the turn, announced to the UI as a `source-url` part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRef {
    pub id: String,
    pub url: String,
    pub title: Option<String>,
}

/// Where the server plugs the per-turn web budget and source registry into the loop. Every method
/// has a neutral default, so a turn without web tools uses [`NoHooks`].
pub trait TurnHooks: Send + Sync {
    /// A budgeted call's normalised key. Calls with equal keys share one result and are charged
    /// once. `None` means the tool is not budgeted.
    fn budget_key(&self, _spec: &ToolSpec, _input: &Value) -> Option<String> {
        None
    }

    /// Charges a budgeted call whose key has no result yet, or denies it.
    fn gate(&self, _spec: &ToolSpec, _input: &Value) -> Gate {
        Gate::Run
    }

    /// The tool message the model receives for a successful call. Called when the result is
    /// handed to the model, so a live counter (remaining web calls) is current.
    fn model_text(&self, _spec: &ToolSpec, output: &ToolOutput) -> String {
        output.text_for_model()
    }

    /// The budget has denied a call this turn: the floor applies to the next step.
    fn floor_active(&self) -> bool {
        false
    }

    /// A research promotion has reopened web capacity since the floor went up. Only the harness
    /// floor lifts on it; the legacy floor holds for the rest of the turn.
    fn floor_lifted(&self) -> bool {
        false
    }

    /// The `sources` message metadata at a step end, or `None` while there are none.
    fn sources_snapshot(&self) -> Option<Value> {
        None
    }

    /// Sources registered since the previous call.
    fn new_sources(&self) -> Vec<SourceRef> {
        Vec::new()
    }

    /// The numbers of the turn's sources when its `[N]` citations are checked; `None` leaves them
    /// alone (a turn without a source registry).
    fn citable_sources(&self) -> Option<Vec<u32>> {
        None
    }

    /// The kept citations of a finished text part, each tied to its source and checked against what
    /// the turn saw of it.
    fn check_citations(&self, _text: &str, _text_part: u32, _markers: &[Marker]) -> Vec<Citation> {
        Vec::new()
    }

    /// How much source text a citation check may read, in bytes. Reading is most of the
    /// check's cost, so above a size the engine runs it on the blocking pool.
    fn citation_source_bytes(&self) -> usize {
        0
    }
}

/// Keeps the answer as it grows and when it ends. The engine knows nothing of storage; the service
/// behind this decides where and how (with retries) the answer goes.
/// What a turn has used so far: the tokens its provider reported (for the steps that ended, and
/// for the running step once the provider reported them), and the fallback answering, if one is.
#[derive(Debug, Default)]
pub struct UsageSoFar(std::sync::Mutex<(Usage, Option<super::failover::AnsweredBy>)>);

impl UsageSoFar {
    pub fn get(&self) -> (Usage, Option<super::failover::AnsweredBy>) {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    pub(super) fn set(&self, usage: Usage, answered_by: Option<super::failover::AnsweredBy>) {
        *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = (usage, answered_by);
    }
}

pub trait AnswerRecorder: Send + Sync {
    /// The answer so far. Must return at once: a slow store may not slow the stream down, and a
    /// checkpoint that is overtaken by a newer one need never be written.
    fn checkpoint(&self, parts: Vec<Value>, metadata: Value);

    /// The final answer. Resolves to true once it is stored; the turn waits for that (at most
    /// `TurnLimits::save_grace`) before the stream says it is done. Called with the turn's trace
    /// context attached (`crate::trace::Scope::current` takes it along).
    fn finish(&self, outcome: TurnOutcome) -> Pin<Box<dyn Future<Output = bool> + Send>>;
}

/// How a turn answers the web budget's first denial.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Floor {
    /// The following steps may not call tools and each carries the web-budget nudge (legacy).
    #[default]
    NoTools,
    /// Only the web tools leave the toolset and this message steers the model once; a promotion
    /// that reopens capacity brings the tools back and withdraws the message (harness).
    Steer(String),
}

/// How the progress title of a running tool reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ToolTitles {
    /// The tool's verb with its input, as core renders it (`Searching for "rust"...`) (legacy).
    #[default]
    Verb,
    /// The tool's name: a harness shows which tool ran.
    Name,
}

impl ToolTitles {
    pub fn title(self, spec: &ToolSpec, input: &Value) -> String {
        match self {
            ToolTitles::Verb => promptgate_core::tools::verb::loading_message_for(spec, input),
            ToolTitles::Name => spec.name.clone(),
        }
    }
}

/// Work due when a turn ends, before its stream says done: whatever a later send relies on
/// (the harness transcript, the workspace's last changes) is in place once the client sees the end.
pub trait TurnEnd: Send + Sync {
    /// `transcript` is the conversation the model saw, ending with its answer when it gave one.
    fn turn_ended<'a>(
        &'a self,
        status: TurnStatus,
        transcript: &'a [ChatMessage],
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;
}

/// Hooks that change nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHooks;

impl TurnHooks for NoHooks {}

/// One send, ready to run.
pub struct TurnPlan {
    pub turn_id: String,
    /// The id of the assistant message being written.
    pub message_id: String,
    /// The model id as the user knows it (recorded in metadata).
    pub model_id: String,
    pub model: Arc<dyn ChatModel>,
    /// The name the provider is asked for.
    pub upstream_model: String,
    pub system_prompt: String,
    /// Length of the system prompt's leading part that is the same on every send of the thread
    /// (the stable half); providers with explicit prompt caching end a cache breakpoint there.
    pub system_stable_len: Option<usize>,
    /// Appended to the system prompt of every step that follows a tool step.
    pub citation_reinforcement: Option<String>,
    /// The conversation so far, ending with the new user message. No system message.
    pub history: Vec<ChatMessage>,
    pub tools: Vec<RunnableTool>,
    /// Tools the client runs itself, offered beside `tools`; a call to one ends the turn. A name
    /// that is also one of `tools` is the server's.
    pub client: ClientTools,
    pub policy: StepPolicy,
    pub nudges: Nudges,
    pub limits: TurnLimits,
    /// Shared with an automatic retry of the same turn; `None` starts a fresh one from `limits`.
    pub request_budget: Option<Arc<RequestBudget>>,
    /// Results of cacheable and budgeted calls; shared with an automatic retry of the same turn.
    pub tool_cache: ToolCache,
    /// Cancelling it stops the turn.
    pub cancel: CancellationToken,
    /// Merged into every upstream request body.
    pub extra: Map<String, Value>,
    pub hooks: Arc<dyn TurnHooks>,
    /// What the web budget's first denial changes.
    pub floor: Floor,
    /// The turn ends at once with this error, before any upstream request (a harness run that
    /// would start on an already exhausted web budget).
    pub refusal: Option<String>,
    /// Run when the turn ends, within `TurnLimits::save_grace`, before the final chunks go out.
    pub on_end: Vec<Arc<dyn TurnEnd>>,
    /// How tool progress titles read.
    pub titles: ToolTitles,
    /// The turn's place among the turns a server runs at once; released when the turn ends.
    pub admission: Option<tokio::sync::OwnedSemaphorePermit>,
    /// Fold the chunks into the message the outcome carries (parts and metadata). A turn whose
    /// answer is not stored (the OpenAI facade) skips it; its outcome then has no parts.
    pub record_message: bool,
    /// Where the answer is checkpointed and finally stored; `None` keeps it only in the outcome.
    pub recorder: Option<Arc<dyn AnswerRecorder>>,
    /// Kept up to date with what the turn has used, for a caller that may drop the turn before
    /// it ends and so never see its outcome (a facade whose client goes away).
    pub usage_so_far: Option<Arc<UsageSoFar>>,
    /// Owns the turn's task, so a shutdown can wait for every turn it stopped.
    pub tasks: tokio_util::task::TaskTracker,
    /// Added to the metadata of the stream's `start` chunk: what was decided before the turn ran
    /// (which part of the thread the model sees), so the answer carries it.
    pub start_metadata: Map<String, Value>,
    /// A model that takes a second look at the citations the check did not find supported;
    /// `None` keeps the check's classes.
    pub citation_review: Option<CitationReview>,
    /// The client answers approval requests (an AI SDK 6+ UI stream whose answer is stored): a
    /// call of an `ask` tool ends the turn waiting for it. Otherwise such a call is refused.
    pub can_ask_approval: bool,
    /// The answers to the approvals this turn's message waited for; the turn continues it.
    pub resume: Option<Resume>,
    /// The models that answer when this one's provider fails before a step's first event.
    pub failover: super::failover::Failover,
    /// Parts the answer opens with, after `start` (what the send found before the turn ran that
    /// the user should see, such as a server asking to be authorized). A continued answer has
    /// them already.
    pub opening_parts: Vec<crate::ui::UiChunk>,
}

/// The model that reviews a text part's uncertain citations, and how long the part's end may wait
/// for it.
#[derive(Clone)]
pub struct CitationReview {
    pub model: Arc<dyn ChatModel>,
    pub upstream_model: String,
    pub timeout: std::time::Duration,
    /// Most citations of one text part put to the model.
    pub max_citations: usize,
}

impl TurnPlan {
    /// A plan without tools: default policy and limits, no nudge texts, no hooks, a fresh request
    /// budget and tool cache. Set the other fields directly.
    pub fn new(
        turn_id: impl Into<String>,
        message_id: impl Into<String>,
        model_id: impl Into<String>,
        model: Arc<dyn ChatModel>,
        upstream_model: impl Into<String>,
        system_prompt: impl Into<String>,
        history: Vec<ChatMessage>,
    ) -> Self {
        Self {
            turn_id: turn_id.into(),
            message_id: message_id.into(),
            model_id: model_id.into(),
            model,
            upstream_model: upstream_model.into(),
            system_prompt: system_prompt.into(),
            system_stable_len: None,
            citation_reinforcement: None,
            history,
            tools: Vec::new(),
            client: ClientTools::default(),
            policy: StepPolicy::default(),
            nudges: Nudges::default(),
            limits: TurnLimits::default(),
            request_budget: None,
            tool_cache: ToolCache::new(),
            cancel: CancellationToken::new(),
            extra: Map::new(),
            hooks: Arc::new(NoHooks),
            floor: Floor::NoTools,
            refusal: None,
            on_end: Vec::new(),
            titles: ToolTitles::Verb,
            admission: None,
            record_message: true,
            recorder: None,
            usage_so_far: None,
            tasks: tokio_util::task::TaskTracker::new(),
            citation_review: None,
            start_metadata: Map::new(),
            can_ask_approval: false,
            resume: None,
            failover: Default::default(),
            opening_parts: Vec::new(),
        }
    }
}

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnStatus {
    Complete,
    Stopped,
    Error,
}

impl TurnStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Complete => "complete",
            Self::Stopped => "stopped",
            Self::Error => "error",
        }
    }
}

/// The assistant message as it should be stored, however the turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    pub message_id: String,
    pub parts: Vec<Value>,
    pub metadata: Value,
    pub status: TurnStatus,
    pub finish_reason: Option<UiFinishReason>,
    /// The calls the turn ended waiting for; they are stored with the answer.
    pub pending_approvals: Vec<PendingApproval>,
    pub usage_total: Usage,
    /// The model that answered, when a fallback did (the last step's model).
    pub answered_by: Option<super::failover::AnsweredBy>,
    /// Calls of the server's tools that ran (client tools are the client's to count).
    pub tool_calls: u32,
    /// Of `tool_calls`, those of web tools (search, fetch).
    pub web_calls: u32,
    /// Model steps taken, over all attempts.
    pub steps: u32,
    /// Requests sent to the model (one per step, retries included).
    pub upstream_requests: u32,
    /// Runs drawn from the request budget: the first, plus each empty-response retry.
    pub attempts: u32,
    /// The short text sent in the `error` chunk, when the turn failed.
    pub error: Option<String>,
}

impl TurnOutcome {
    /// The metadata to store with the message: what the stream sent, plus how the turn ended
    /// (`status`, and `finishReason` when there is one).
    pub fn stored_metadata(&self) -> Value {
        let mut metadata = match &self.metadata {
            Value::Object(object) => object.clone(),
            _ => Map::new(),
        };
        metadata.insert("status".into(), self.status.as_str().into());
        if let Some(reason) = self.finish_reason {
            metadata.insert("finishReason".into(), reason.as_str().into());
        }
        Value::Object(metadata)
    }
}
