//! The use cases of promptgate: one send, end to end (load what the user configured, store their
//! message, discover MCP tools, compose the prompt and toolset, run the turn engine, and persist the
//! answer however the turn ends), the stateless completion, and the user's records (threads,
//! projects, skills, models, MCP servers, settings, integrations, accounts). Transports (the HTTP
//! server's routes, the UI stream, the OpenAI facade, the CLI) sit on top of [`Service`].
//!
//! # Where it sits
//!
//! `server → service → {turn, store, mcp, tools, llm, workspace} → core`. The server depends on
//! this crate and core only: it fills [`deployment::Settings`] from its configuration, opens a
//! [`Database`], and [`Service::start`] builds everything else (providers, web tools, MCP hub,
//! integrations, the key for secrets at rest). Its API names what it takes and returns by name:
//! [`deployment`] (deployment vocabulary), [`records`] (the rows the record use cases take and
//! return), [`events`] (what a started turn streams), [`facade`] (a facade request's conversation
//! and tools) and one error type, [`ServiceError`].
//!
//! The service is framing-agnostic: a started turn's stream is written for its readers in the
//! [`StreamEncoding`] the transport hands over in its settings (the server's: the UI message stream
//! as SSE). The service keeps those bytes as they are for readers that follow or resume a turn, in
//! memory and, across instances, in the store; of their format it knows only the encoding's
//! keep-alive and done frames, to leave out the first and find the end of the stream.
//!
//! The engine ([`promptgate_turn`]) knows neither storage nor transports; this crate gives it
//! everything as parts: the tools with their executors (behind `promptgate_core::tools::ToolExecutor`),
//! hooks over the turn's web budget and sources ([`WebHooks`]), and an answer recorder that stores
//! checkpoints and the final answer.
//!
//! # Records
//!
//! Every record use case takes the user's id, so no request reaches another user's rows, and owns
//! the rules beyond the shape of the input: a thread's project must be one of the user's, a default
//! model must be one they can use, an MCP server's URL must pass the outbound address policy,
//! an integration is connected only by authorizing it.
//!
//! # Where `Service`'s methods live
//!
//! The struct, its construction and its lifetime (spawn, stop, drain) are here; each group of
//! use cases is an `impl Service` in the module named for it:
//!
//! | methods | module |
//! |---|---|
//! | [`Service::start`]: open the database and build every long-lived part | `open` |
//! | [`Service::send`] and its steps; `admit`, `load_with_model` (shared with completions) | `send` |
//! | `prepare`, [`Service::preview`]: from the stored context to a ready turn | `prepare` |
//! | `window`, `compact`: the thread as it fits the model's context window | `window` |
//! | `discover_mcp`: the MCP tools a send gets | `mcp_servers` |
//! | [`Service::complete`], [`Service::count_input_tokens`]: stateless turns for the facades | `complete` |
//! | [`Service::respond`] and the kept responses of the Responses API | `respond` |
//! | [`Service::follow`], `mirror`: following a running turn from any instance | `follow` |
//! | [`Service::stop`], the claims in the store, the instance heartbeat | `claims` |
//! | threads, projects, skills, models, settings, artifacts, MCP servers and their probe | `library` |
//! | the integrations and their OAuth flow | `oauth` |
//! | `admit_storage`, [`Service::storage_report`]: per-user quotas | `quota` |
//! | users, tokens, the database's health | `accounts` |
//!
//! # Background work
//!
//! Every task a send leaves behind (the turn, its answer writer, claim releases, the instance
//! heartbeat) runs on a task tracker the service owns; [`Service::drain`] waits for them at
//! shutdown, so `tokio::spawn` is not used here.

#![deny(clippy::disallowed_methods)]

mod accounts;
mod approve;
mod budgets;
mod builtin;
mod claims;
mod complete;
mod consent;
pub mod deployment;
mod elicit;
mod encoding;
mod error;
pub mod events;
pub mod facade;
mod failover;
mod feed;
mod follow;
mod handoffs;
mod harness;
mod hooks;
mod integrations;
mod keys;
mod ledger;
mod ledger_batch;
mod library;
mod live;
mod mcp_known;
mod mcp_oauth;
mod mcp_servers;
mod oauth;
mod open;
mod prepare;
mod preview;
mod providers;
mod questions;
mod quota;
mod record;
pub mod records;
mod respond;
mod send;
mod store_retry;
mod toolset;
mod window;
mod workspace;

use std::sync::Arc;
use std::time::Duration;

use promptgate_mcp::McpHub;
use promptgate_store::Store;
use promptgate_tools::web::{SafeFetcher, SearchBackend};
use tokio_util::sync::CancellationToken;

pub use approve::{ApprovalReply, MAX_APPROVAL_REASON, MAX_APPROVAL_REPLIES};
pub use budgets::{BudgetCheck, BudgetRefusal, Spender, WARN_AT_PERCENT, judge, money, to_micros};
pub use complete::{CompletionRequest, OutputCap};
pub use elicit::{ElicitationAction, ElicitationReply};
pub use error::ServiceError;
pub use feed::{FELL_BEHIND_TEXT, Follow, FollowStream, Frames, MAX_FEED_BYTES, SendStream};
pub use follow::LOST_TURN_TEXT;
pub use harness::{ClientIdentity, REPLAY_REFUSED_TEXT};
pub use hooks::{TurnState, WebHooks};
pub use integrations::Integrations;
pub use library::ProbeOutcome;
pub use live::{Continuation, LiveTurns};
pub use mcp_oauth::McpAuthorization;
pub use mcp_servers::tool_hints;
pub use oauth::OAuthCallback;
pub use open::Database;
pub use prepare::{Asking, Prepared, RunParts};
pub use preview::{PreviewAsk, SendPreview, WebToolsOff};
pub use promptgate_store::{StoreError, WriteWaits};
/// The spans every request makes, for the transport's server span and the work it hands to tasks.
pub use promptgate_turn::trace;
pub use providers::{ModelProvider, ProviderClient, Providers, check_request_fields};
pub use quota::{StorageQuota, StorageReport};
pub use record::{PendingSave, PendingSaves};
pub use respond::{ResponseKeeper, ResponseRequest, ResponseRun};
pub(crate) use send::TurnIds;
pub use send::{ClientNotes, SendHandle, SendInput, SendRequest, TraceLink};
pub use toolset::{Executors, McpToolExecutor};
pub use window::ContextReport;

use deployment::{ServiceConfig, StreamEncoding};
use harness::KeptTranscripts;

/// Web tools of this deployment; absent parts mean the tools are not offered.
#[derive(Clone, Default)]
pub struct WebTools {
    pub search: Option<Arc<dyn SearchBackend>>,
    pub fetcher: Option<Arc<SafeFetcher>>,
    /// Loading the `research` skill widens an `auto` budget.
    pub promotion_enabled: bool,
}

impl WebTools {
    pub fn available(&self) -> bool {
        self.search.is_some() && self.fetcher.is_some()
    }
}

/// Runs sends. Cheap to clone.
#[derive(Clone)]
pub struct Service {
    pub(crate) store: Store,
    pub(crate) providers: Providers,
    pub(crate) web: WebTools,
    pub(crate) mcp: Option<McpHub>,
    pub(crate) config: ServiceConfig,
    /// Google and Microsoft, when this deployment registered OAuth clients for them.
    pub(crate) integrations: Option<Integrations>,
    live: LiveTurns,
    admission: Arc<tokio::sync::Semaphore>,
    /// Owns turns and answer writers, so a shutdown can stop the first and wait for the second.
    tasks: tokio_util::task::TaskTracker,
    /// The parent of every turn's Stop: cancelled when a shutdown's grace is over.
    stop_all: CancellationToken,
    pending: PendingSaves,
    /// This process among the instances on the database: its id, heartbeat and signal listener.
    instance: Arc<claims::Instance>,
    /// Per-thread transcripts of harness-engine models.
    transcripts: KeptTranscripts,
    /// What each user's sends last left out of their MCP tools, so the log says it once per change.
    mcp_left_out: Arc<mcp_servers::LeftOut>,
    /// The MCP grants being renewed on this instance.
    mcp_renewing: mcp_oauth::RenewLocks,
    /// The MCP tool lists this instance kept for the users' authorized servers.
    mcp_known: Arc<mcp_known::KnownTools>,
    /// The transport's wire format of a turn's stream, for its readers and followers.
    encoding: StreamEncoding,
    /// The older part of long threads, held between sends.
    pub(crate) held: Arc<window::HeldHistories>,
    /// Token counts of the messages sends have seen, shared by all sends.
    pub(crate) token_counters: promptgate_llm::tokens::TokenCounters,
    /// The model that summarises a thread's older part, when one is configured.
    pub(crate) summariser: Option<window::Summariser>,
    /// The model that takes a second look at uncertain citations, when one is configured.
    pub(crate) citation_reviewer: Option<promptgate_turn::CitationReview>,
    /// Every provider's circuit breaker, shared by the turns of this process.
    pub(crate) breakers: Arc<promptgate_turn::engine::Breakers>,
    /// The facades' ledger rows on their way to the store, in batches.
    pub(crate) ledger: Arc<ledger_batch::LedgerBatch>,
}

impl Service {
    /// The service over its parts; [`Service::start`] builds them from settings.
    pub(crate) fn new(
        store: Store,
        providers: Providers,
        web: WebTools,
        mcp: Option<McpHub>,
        config: ServiceConfig,
        encoding: StreamEncoding,
    ) -> Self {
        let admission = Arc::new(tokio::sync::Semaphore::new(config.max_turns_in_flight.max(1)));
        let transcripts = KeptTranscripts::new(config.kept_harnesses, config.kept_harness_bytes);
        let tasks = tokio_util::task::TaskTracker::new();
        Self {
            ledger: ledger_batch::LedgerBatch::new(store.clone(), tasks.clone()),
            store,
            providers,
            web,
            mcp,
            integrations: None,
            live: LiveTurns::default(),
            admission,
            tasks,
            stop_all: CancellationToken::new(),
            pending: PendingSaves::default(),
            instance: Arc::new(claims::Instance::default()),
            transcripts,
            mcp_left_out: Arc::default(),
            mcp_renewing: Arc::default(),
            mcp_known: Arc::default(),
            encoding,
            token_counters: promptgate_llm::tokens::TokenCounters::default(),
            held: Arc::new(window::HeldHistories::new(config.context.held_history_bytes)),
            summariser: None,
            citation_reviewer: None,
            breakers: Arc::new(promptgate_turn::engine::Breakers::new(config.failover.breaker)),
            config,
        }
    }

    /// Turns running now (sends and facade completions).
    pub fn turns_in_flight(&self) -> usize {
        self.config.max_turns_in_flight.max(1) - self.admission.available_permits()
    }

    /// Stops every running turn (their partial answers are saved as stopped) and refuses new ones.
    pub fn stop_all(&self) {
        self.admission.close();
        self.stop_all.cancel();
    }

    /// Runs `work` on a task of its own, which a shutdown waits for as it waits for turns.
    pub fn spawn<F>(&self, work: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.tasks.spawn(work)
    }

    /// Waits until every turn has ended and every answer writer is done, or until `deadline`, then
    /// ends the MCP hub's background reconnects. Returns the answers still not stored (empty when
    /// all are).
    pub async fn drain(&self, deadline: Duration) -> Vec<PendingSave> {
        self.tasks.close();
        let _ = tokio::time::timeout(deadline, self.tasks.wait()).await;
        // Every turn has released its claim by now; the heartbeat has nothing left to renew.
        self.stop_instance(Duration::from_secs(1)).await;
        if let Some(hub) = &self.mcp {
            hub.shutdown(Duration::from_secs(1)).await;
        }
        self.pending.list()
    }

    /// Offers the integration tools of the configured providers to users who connected them.
    pub(crate) fn with_integrations(mut self, integrations: Integrations) -> Self {
        self.integrations = Some(integrations);
        self
    }

    /// The store under the use cases, for tests that check what reached the database.
    #[cfg(feature = "testing")]
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// How long the database's writes wait, for the admission gate.
    pub fn write_waits(&self) -> std::sync::Arc<WriteWaits> {
        self.store.write_waits()
    }

    /// This instance's id among those sharing the database (it owns the claims of its turns).
    pub fn instance_id(&self) -> &str {
        &self.instance.id
    }
}

/// The time core's decisions are made at (the prompt's date, a workspace's clock): the service is
/// the edge that reads the clock, so core can take time as an argument.
#[expect(
    clippy::disallowed_methods,
    reason = "the one clock the use cases read; everything below takes the time as an argument"
)]
pub(crate) fn now() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now()
}
