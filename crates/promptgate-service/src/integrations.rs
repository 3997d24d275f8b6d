//! The Google and Microsoft integrations of this deployment: their OAuth clients, the process-wide
//! token sealer and refresh locks, and the per-send executors for a user whose integration is
//! connected and enabled.

use std::sync::Arc;
use std::time::Duration;

use promptgate_core::settings::{IntegrationProvider, IntegrationStatus};
use promptgate_store::Store;
use promptgate_tools::google::{GoogleClient, GoogleExecutor};
use promptgate_tools::microsoft::{GraphClient, MicrosoftExecutor};
use promptgate_tools::oauth::{AccessTokens, OAuthClient, OAuthProviderConfig, RefreshLocks, TokenSealer};

use super::consent::ConsentSetup;
use super::toolset::{ConsentingExecutor, Executors};
use promptgate_core::tools::ToolExecutor;

/// Google as this deployment registered it, with the API bases its tools call.
#[derive(Debug, Clone)]
pub struct GoogleSetup {
    pub oauth: OAuthProviderConfig,
    pub gmail_base: String,
    pub calendar_base: String,
}

/// Microsoft as this deployment registered it, with the Graph base its tools call.
#[derive(Debug, Clone)]
pub struct MicrosoftSetup {
    pub oauth: OAuthProviderConfig,
    pub graph_base: String,
}

/// Provider APIs answer well within this; the per-request timeouts of the tools are tighter still.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The configured integration providers. A provider that is absent is not offered at all.
#[derive(Clone)]
pub struct Integrations {
    sealer: Arc<TokenSealer>,
    locks: RefreshLocks,
    http: reqwest::Client,
    google: Option<(OAuthClient, GoogleSetup)>,
    microsoft: Option<(OAuthClient, MicrosoftSetup)>,
}

impl Integrations {
    pub fn new(
        sealer: TokenSealer,
        google: Option<GoogleSetup>,
        microsoft: Option<MicrosoftSetup>,
    ) -> Result<Self, reqwest::Error> {
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            // The token and API endpoints answer directly; following a redirect could carry the
            // bearer token somewhere it was not meant for.
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        let google = google.map(|setup| (OAuthClient::new(setup.oauth.clone(), http.clone()), setup));
        let microsoft = microsoft.map(|setup| (OAuthClient::new(setup.oauth.clone(), http.clone()), setup));
        Ok(Self {
            sealer: Arc::new(sealer),
            locks: RefreshLocks::new(),
            http,
            google,
            microsoft,
        })
    }

    /// The OAuth client of `provider`, when this deployment configured it.
    pub fn oauth(&self, provider: IntegrationProvider) -> Option<&OAuthClient> {
        match provider {
            IntegrationProvider::Google => self.google.as_ref().map(|(oauth, _)| oauth),
            IntegrationProvider::Microsoft => self.microsoft.as_ref().map(|(oauth, _)| oauth),
        }
    }

    /// The token source of one user at `provider`, reading and writing the store's sealed secret
    /// (the store is the token vault).
    pub fn tokens(
        &self,
        store: &Store,
        user_id: &str,
        provider: IntegrationProvider,
    ) -> Option<AccessTokens> {
        let oauth = self.oauth(provider)?;
        Some(AccessTokens::new(
            oauth.clone(),
            Arc::new(store.clone()),
            Arc::clone(&self.sealer),
            self.locks.clone(),
            user_id,
            provider,
        ))
    }

    /// Adds the tools of every provider the user connected and enabled. A disabled one adds none;
    /// the prompt's integration status explains why.
    pub(super) fn register(
        &self,
        executors: &mut Executors,
        store: &Store,
        user_id: &str,
        status: &IntegrationStatus,
        consent: &ConsentSetup,
    ) {
        let consenting = |provider, inner| -> Arc<dyn ToolExecutor> {
            Arc::new(ConsentingExecutor {
                inner,
                provider,
                consent: consent.clone(),
            })
        };
        if status.google.usable()
            && let (Some((_, setup)), Some(tokens)) = (
                &self.google,
                self.tokens(store, user_id, IntegrationProvider::Google),
            )
        {
            let mut client = GoogleClient::new(self.http.clone(), tokens);
            client.gmail_base = setup.gmail_base.clone();
            client.calendar_base = setup.calendar_base.clone();
            for (name, executor) in GoogleExecutor::all(Arc::new(client)) {
                executors.insert(name, consenting(IntegrationProvider::Google, executor));
            }
        }
        if status.microsoft.usable()
            && let (Some((_, setup)), Some(tokens)) = (
                &self.microsoft,
                self.tokens(store, user_id, IntegrationProvider::Microsoft),
            )
        {
            let mut client = GraphClient::new(self.http.clone(), tokens);
            client.base = setup.graph_base.clone();
            for (name, executor) in MicrosoftExecutor::all(Arc::new(client)) {
                executors.insert(name, consenting(IntegrationProvider::Microsoft, executor));
            }
        }
    }
}
