//! What a deployment configures, as the service takes it: the transport fills [`Settings`] from its
//! own configuration (file, environment) and hands it to [`Service::start`](crate::Service::start),
//! which builds everything a server runs with from it: the model providers, the web tools, the MCP
//! hub, the integrations and the key for secrets at rest. The transport also hands over the wire
//! encoding of a turn's stream ([`StreamEncoding`]), which it owns.
//!
//! The types below that come from the crates under the service are re-exported here by name: they
//! are the vocabulary of these settings (and their defaults), so a transport needs no other crate
//! to describe a deployment.

use std::sync::Arc;
use std::time::Duration;

use promptgate_core::settings::Model;

pub use crate::claims::{DEFAULT_HEARTBEAT, DEFAULT_LEASE, DEFAULT_RETRY_WINDOW, InstanceConfig};
#[cfg(feature = "testing")]
pub use crate::encoding::JSON_LINES;
pub use crate::encoding::StreamEncoding;
pub use crate::failover::FailoverSettings;
pub use crate::feed::OnDisconnect;
pub use crate::harness::{DEFAULT_KEPT_HARNESS_BYTES, DEFAULT_KEPT_HARNESSES};
pub use crate::integrations::{GoogleSetup, MicrosoftSetup};
pub use crate::window::{
    ContextSettings, DEFAULT_ANSWER_RESERVE_TOKENS, DEFAULT_HELD_HISTORY_MIB, DEFAULT_KEPT_AFTER_COMPACTION,
    DEFAULT_SUMMARY_MAX_TOKENS, DEFAULT_SUMMARY_TIMEOUT, DEFAULT_WINDOW_TOKENS,
};
pub use promptgate_core::breaker::BreakerSettings;
pub use promptgate_core::pricing::{Price, PriceTable};
pub use promptgate_llm::{ANTHROPIC_BASE_URL, ANTHROPIC_MAX_TOKENS, ThinkingMode, Timeouts};
pub use promptgate_mcp::oauth::ClientCredentials;
pub use promptgate_mcp::{AddressPolicy, DEFAULT_CALL_TIMEOUT, DEFAULT_DISCOVERY_TIMEOUT, HubSettings};
pub use promptgate_store::Backend;
pub use promptgate_tools::google::{DEFAULT_CALENDAR_BASE, DEFAULT_GMAIL_BASE};
pub use promptgate_tools::microsoft::DEFAULT_GRAPH_BASE;
pub use promptgate_tools::oauth::{OAuthProviderConfig, TokenSealer};
pub use promptgate_tools::web::{FetchPolicy, SearchConfig};
pub use promptgate_turn::CitationReview;
pub use promptgate_turn::TurnLimits;
pub use promptgate_turn::documents::{DocumentReader, DocumentSettings, PdfLimits};
/// The tracing target the trace exporter lets through when the operator records content.
pub use promptgate_turn::engine::CONTENT_TARGET;
pub use promptgate_turn::engine::RetryPolicy;
pub use promptgate_workspace::{ShellPool, ShellPoolSize, WorkspaceLimits};

/// How long a final save keeps trying while the store is unavailable.
pub const DEFAULT_SAVE_RETRY: Duration = Duration::from_secs(600);

/// How long a kept response of the Responses API stays, as the API keeps them by default.
pub const DEFAULT_RESPONSE_RETENTION: Duration = Duration::from_secs(30 * 24 * 60 * 60);
/// How many kept responses of the Responses API each user may hold; past it the oldest go.
pub const DEFAULT_RESPONSES_PER_USER: usize = 1_000;

/// Enough for a busy single instance; each turn holds a client connection, an upstream connection
/// and its history, so without a bound overload turns into memory.
pub const DEFAULT_TURNS_IN_FLIGHT: usize = 1024;

#[derive(Clone)]
pub struct ServiceConfig {
    pub default_model: String,
    pub limits: TurnLimits,
    pub mcp_discovery_timeout: Duration,
    pub mcp_call_timeout: Duration,
    /// How long a tool call waits for the user's answer to an MCP server's question.
    pub mcp_elicitation_timeout: Duration,
    /// How long a tool call waits for the user to authorize (again) the service it calls.
    pub authorization_wait: Duration,
    /// The redirect URI MCP servers' authorization servers send the browser back to (this
    /// deployment's `/v1/mcp-servers/oauth/callback`); without it MCP OAuth is off.
    pub mcp_oauth_redirect: Option<String>,
    /// Clients registered by hand with authorization servers, by issuer; the others are registered
    /// on first use.
    pub mcp_oauth_clients: Vec<(String, ClientCredentials)>,
    /// The URL this deployment serves its Client ID Metadata Document at (the client id it uses
    /// with authorization servers that take one); `None` without a public https base.
    pub mcp_oauth_client_metadata_url: Option<String>,
    /// Turns running at once on this server, across all users; a send past it is refused.
    pub max_turns_in_flight: usize,
    /// How long the final save of an answer keeps trying while the store is unavailable.
    pub save_retry: Duration,
    /// Whether a send's turn stops when its client goes away.
    pub on_disconnect: OnDisconnect,
    /// Leases of running turns and the retry window, shared with the other instances on the database.
    pub instance: InstanceConfig,
    /// Bounds of each thread's workspace (harness models).
    pub workspace: WorkspaceLimits,
    /// Where every workspace's `bash` calls run: one bounded pool for the whole server.
    pub shell: ShellPool,
    /// Reads attached files for the model, once each, off the async workers.
    pub documents: DocumentReader,
    /// Threads whose harness transcript this instance keeps in memory.
    pub kept_harnesses: usize,
    /// Bytes of harness transcripts this instance keeps in memory, all threads together.
    pub kept_harness_bytes: usize,
    /// How long a kept response of the Responses API can be read and continued.
    pub response_retention: Duration,
    /// How many kept responses each user holds at most; storing one more drops the oldest.
    pub responses_per_user: usize,
    /// How a send fits its thread to the model's context window.
    pub context: ContextSettings,
    /// What each user may keep.
    pub quota: crate::quota::StorageQuota,
    /// The optional second look at uncertain citations.
    pub citation_review: CitationReviewSettings,
    /// Tool approval: the operator's floors, how long a call waits, and what `ask` becomes for a
    /// client that cannot answer.
    pub approval: ApprovalConfig,
    /// What the deployment's models cost, for the usage ledger.
    pub prices: PriceTable,
    /// How a model with fallbacks is retried and failed over.
    pub failover: FailoverSettings,
}

/// How long a tool call waits for the answer to an MCP server's question, by default.
pub const DEFAULT_ELICITATION_TIMEOUT: Duration = Duration::from_secs(120);

/// How long a tool call waits for the user to authorize its service again, by default.
pub const DEFAULT_AUTHORIZATION_WAIT: Duration = Duration::from_secs(120);

/// How long a call waits for its approval, by default.
pub const DEFAULT_APPROVAL_EXPIRY: Duration = Duration::from_secs(3600);

/// The operator's side of tool approval.
#[derive(Debug, Clone)]
pub struct ApprovalConfig {
    /// Defaults by kind (on or off) and the floors under every user's choices.
    pub operator: promptgate_core::approval::OperatorApproval,
    /// A call unanswered this long is denied (the model is told it expired).
    pub expiry: Duration,
    /// What `ask` becomes where the client cannot answer (a v5 UI stream, the facades): `allow`
    /// or `deny`.
    pub without_client: promptgate_core::approval::ApprovalPolicy,
}

impl Default for ApprovalConfig {
    fn default() -> Self {
        Self {
            operator: Default::default(),
            expiry: DEFAULT_APPROVAL_EXPIRY,
            without_client: promptgate_core::approval::ApprovalPolicy::Allow,
        }
    }
}

/// How long a text part's end waits for the citation review, by default.
pub const DEFAULT_CITATION_REVIEW_TIMEOUT: Duration = Duration::from_secs(10);
/// Citations of one text part put to the reviewing model, by default.
pub const DEFAULT_CITATION_REVIEW_MAX: usize = 20;

/// The model that reviews the citations the check did not find supported; none by default.
#[derive(Debug, Clone)]
pub struct CitationReviewSettings {
    /// The id of a configured model; `None` keeps the check's classes.
    pub model: Option<String>,
    pub timeout: Duration,
    pub max_citations: usize,
}

impl Default for CitationReviewSettings {
    fn default() -> Self {
        Self {
            model: None,
            timeout: DEFAULT_CITATION_REVIEW_TIMEOUT,
            max_citations: DEFAULT_CITATION_REVIEW_MAX,
        }
    }
}

impl Default for ServiceConfig {
    fn default() -> Self {
        Self {
            default_model: "demo".to_owned(),
            limits: TurnLimits::default(),
            mcp_discovery_timeout: promptgate_mcp::DEFAULT_DISCOVERY_TIMEOUT,
            mcp_call_timeout: promptgate_mcp::DEFAULT_CALL_TIMEOUT,
            mcp_elicitation_timeout: DEFAULT_ELICITATION_TIMEOUT,
            authorization_wait: DEFAULT_AUTHORIZATION_WAIT,
            mcp_oauth_redirect: None,
            mcp_oauth_clients: Vec::new(),
            mcp_oauth_client_metadata_url: None,
            max_turns_in_flight: DEFAULT_TURNS_IN_FLIGHT,
            save_retry: DEFAULT_SAVE_RETRY,
            on_disconnect: OnDisconnect::Stop,
            instance: InstanceConfig::default(),
            workspace: WorkspaceLimits::default(),
            shell: ShellPool::default(),
            documents: DocumentReader::default(),
            kept_harnesses: DEFAULT_KEPT_HARNESSES,
            kept_harness_bytes: DEFAULT_KEPT_HARNESS_BYTES,
            response_retention: DEFAULT_RESPONSE_RETENTION,
            responses_per_user: DEFAULT_RESPONSES_PER_USER,
            context: ContextSettings::default(),
            quota: crate::quota::StorageQuota::default(),
            citation_review: CitationReviewSettings::default(),
            approval: ApprovalConfig::default(),
            prices: PriceTable::default(),
            failover: FailoverSettings::default(),
        }
    }
}

/// Everything [`Service::start`](crate::Service::start) builds a running service from.
pub struct Settings {
    pub service: ServiceConfig,
    /// The model providers, by the names models refer to.
    pub providers: Vec<ProviderSettings>,
    /// The search backend; without one the web tools are not offered.
    pub search: Option<SearchConfig>,
    /// What `fetch_content` may reach and how much it reads.
    pub fetch: FetchPolicy,
    /// Loading the `research` skill widens an `auto` web budget.
    pub budget_promotion: bool,
    /// The MCP client: reconnects, liveness and the addresses servers may have.
    pub mcp: HubSettings,
    /// The OAuth clients of the integrations; `None` offers none.
    pub integrations: Option<IntegrationSettings>,
    pub secrets: SecretsSettings,
    /// The deployment's own models, offered to every user.
    pub system_models: Vec<Model>,
    /// The one user of a single-user deployment, as `(id, name)`, created when missing.
    pub local_user: Option<(String, String)>,
    /// How a turn's stream is written for its readers, and kept for followers on this and the
    /// other instances; every instance on a database must use the same.
    pub encoding: StreamEncoding,
}

/// How a provider is spoken to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// The offline demo model.
    Demo,
    /// An OpenAI-compatible chat completions endpoint.
    OpenAi,
    /// Anthropic's messages API.
    Anthropic,
}

/// One model provider.
#[derive(Debug, Clone)]
pub struct ProviderSettings {
    pub name: String,
    pub kind: ProviderKind,
    /// Where it answers; an Anthropic provider without one uses [`ANTHROPIC_BASE_URL`].
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    pub timeouts: Timeouts,
    /// Anthropic only: the answer's length limit (default [`ANTHROPIC_MAX_TOKENS`]).
    pub max_tokens: Option<u64>,
    /// Anthropic only: how a model's reasoning setting becomes thinking.
    pub thinking: ThinkingMode,
    /// Request fields users and facade callers may set beyond the open ones.
    pub allowed_request_fields: Vec<String>,
    /// OpenAI-compatible only: answers a client reads whole are asked for whole (see
    /// `promptgate_llm::ProviderConfig::whole_answers`).
    pub whole_answers: bool,
}

/// The integrations' OAuth clients and the key their token sets are sealed with.
pub struct IntegrationSettings {
    pub token_sealer: TokenSealer,
    pub google: Option<GoogleSetup>,
    pub microsoft: Option<MicrosoftSetup>,
}

/// The key that seals secrets at rest (MCP header values and bearer tokens).
pub struct SecretsSettings {
    /// The key, and where it came from in words for the log and errors (`the variable X`).
    pub key: Option<(Arc<TokenSealer>, String)>,
    /// The variable that would hold the key, named when there is none.
    pub variable: String,
}
