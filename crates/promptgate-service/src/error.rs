//! The one error type of the service: what a use case refuses, and what went wrong below it, in
//! terms a transport can map without knowing the MCP client or the tools. The store's own error is
//! carried as it is ([`ServiceError::Store`]), re-exported by the crate for transports to map.

use promptgate_core::settings::IntegrationProvider;
use promptgate_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("thread {0} does not exist")]
    UnknownThread(String),
    #[error("model {0} does not exist")]
    UnknownModel(String),
    #[error("the model's provider {0} is not configured on this server")]
    ProviderMissing(String),
    #[error("a turn is already running in thread {0}; stop it or wait for it to finish")]
    Busy(String),
    #[error("{0}")]
    InvalidMessage(String),
    #[error(
        "thread {0} waits for the answer to a tool approval; approve or deny it (POST /v1/threads/{0}/approvals), \
         or stop the thread to cancel it"
    )]
    ApprovalPending(String),
    /// An approval answer that does not match a call waiting in the thread: unknown, answered
    /// before, cancelled, or for another call or input. The text says which.
    #[error("{0}")]
    ApprovalRefused(String),
    /// An answer to a question a tool call asked the user that was answered, expired or was
    /// cancelled before; the text says which.
    #[error("{0}")]
    QuestionSettled(String),
    #[error("the server is running {0} turns, its limit; try again shortly")]
    Overloaded(usize),
    #[error("turn {0} is not a turn of this thread; send without retry_of to start a fresh turn")]
    UnknownTurn(String),
    /// Client tools named like tools this server runs for the user.
    #[error(
        "these tool names are taken by the server's own tools, so the request cannot define them: {}; rename yours",
        .0.join(", ")
    )]
    ToolNameClash(Vec<String>),
    #[error(
        "turn {0} ended too long ago to retry (a retry must come within {1} seconds); send without retry_of to start a fresh turn"
    )]
    RetryExpired(String, u64),

    /// A record the request names does not exist (for this user): `what` says which kind.
    #[error("{what} {id} does not exist")]
    NotFound { what: &'static str, id: String },
    /// A settings update names a default model the user cannot use.
    #[error("default_model {0} is not a model you can use")]
    UnusableDefaultModel(String),
    /// The user already has this many MCP servers, the most one user may register.
    #[error("you already have {0} MCP servers, the most this server allows; delete one to add another")]
    McpServerLimit(usize),
    /// The user probed MCP servers too often; the duration says when the next probe is allowed.
    #[error("too many MCP server probes; try again in {} s", .0.as_secs().max(1))]
    TooManyProbes(std::time::Duration),
    /// An MCP server URL the outbound address policy refuses.
    #[error("{0}")]
    RefusedAddress(String),
    /// An integration is connected by authorizing it, not by saying so.
    #[error("an integration is connected by authorizing it")]
    ConnectByAuthorizing(IntegrationProvider),
    /// This deployment registered no OAuth client for the provider.
    #[error("this server has no OAuth client for {}", .0.as_str())]
    IntegrationNotConfigured(IntegrationProvider),
    /// An MCP server could not be authorized: it is unreachable, or its authorization server was
    /// refused or refused us; the message says which, never what the server sent.
    #[error("{0}")]
    McpAuthorization(String),
    /// MCP servers that ask for OAuth cannot be authorized: this deployment has no callback URL
    /// (or no MCP support).
    #[error("this server is not set up to authorize MCP servers with OAuth")]
    McpOAuthNotConfigured,
    #[error("too many integration authorizations are in progress; try again in a few minutes")]
    TooManyAuthorizations,
    /// An OAuth callback whose `state` is unknown, used or expired.
    #[error("this authorization is unknown, was already used or has expired; start connecting again")]
    UnknownAuthorization,
    #[error("the callback carries no authorization code")]
    MissingAuthorizationCode,
    /// The provider refused the authorization or the code exchange; the message says how.
    #[error("{0}")]
    ProviderRefused(String),

    /// Upstream request fields the caller may not set; the message names them and what may be set.
    #[error("{0}")]
    FieldsNotAllowed(String),
    /// The user keeps as much as their storage quota allows; the message says which bound.
    #[error("{0}")]
    QuotaExceeded(String),
    /// A budget or token limit of the user or key is spent until its window resets.
    #[error("{0}")]
    OverBudget(crate::budgets::BudgetRefusal),
    /// A money limit is in force and the model (named), or a fallback of it, has no price.
    #[error(
        "model {0} has no price, and a money budget is in force: its cost could not be counted; \
         choose a priced model, or ask an admin to price it ([[prices]]) or to set the budget in tokens"
    )]
    UnpricedModel(String),
    /// Only an admin may do this.
    #[error("only an admin may do this")]
    NotAdmin,

    /// What the store reports, as it words it.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Something else failed on our side; already logged where it happened.
    #[error("internal failure")]
    Internal,

    /// A part of the service could not start; `what` names it, the source says why.
    #[error("{what}")]
    Start {
        what: String,
        #[source]
        cause: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A start-up check refused the deployment as configured; the message says what to change.
    #[error("{0}")]
    Refused(String),
}

impl ServiceError {
    /// A store failure about one named record: its absence names the kind and id.
    pub(crate) fn about(what: &'static str, id: &str) -> impl FnOnce(StoreError) -> Self {
        move |err| match err {
            StoreError::NotFound => Self::NotFound {
                what,
                id: id.to_owned(),
            },
            other => other.into(),
        }
    }

    pub(crate) fn not_found(what: &'static str, id: &str) -> Self {
        Self::NotFound {
            what,
            id: id.to_owned(),
        }
    }

    pub(crate) fn start(
        what: impl Into<String>,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Start {
            what: what.into(),
            cause: Box::new(cause),
        }
    }
}
