//! OAuth for the user's MCP servers that are protected resources: starting an authorization (the
//! server's challenge, its authorization server, a client identity: one the operator gave for it,
//! else the gateway's own Client ID Metadata Document where the server takes one, else one
//! registered there; the scopes, widened when the server asked for more; the URL for the browser),
//! completing it on whichever instance the callback lands (the pending authorization lives in the
//! store, sealed), and the access token a send or probe uses, renewed shortly before it lapses and
//! when the server rejects it. Grants are sealed in the store per user and server and forgotten,
//! revoked where the server offers it, with their server.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use promptgate_mcp::oauth::{
    AuthServer, ClientCredentials, McpOAuth, TokenSet, check_issuer, client_metadata_document, union_scopes,
};
use promptgate_mcp::{McpError, McpHub};
use promptgate_store::{McpOAuthClient, OAuthPending, PendingRefused, Store};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::consent::WaitingCall;
use crate::oauth::{OAuthCallback, limits, valid_code};
use crate::{Service, ServiceError};

/// The `provider` of an MCP server's pending authorization: this prefix and the server's id.
const PROVIDER_PREFIX: &str = "mcp:";
/// Renew this long before the stated expiry, so a token does not lapse mid-send.
const REFRESH_MARGIN_MS: i64 = 60_000;
/// How long a registration waits for the server's answer to a tokenless request.
const REGISTRATION_CHALLENGE_BUDGET: std::time::Duration = std::time::Duration::from_millis(500);
/// How promptgate names itself when it registers as a client.
const CLIENT_NAME: &str = "promptgate";

/// What a user's MCP server needs before its tools can be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpAuthorization {
    /// The server answers without a token, or with the static secret stored with it.
    NotNeeded,
    /// The user authorized it; a token is stored.
    Connected,
    /// The server asks for OAuth and the user has not authorized it (or the grant ended): open
    /// `url` in the user's browser.
    NeedsAuthorization { url: String },
}

/// Everything a grant needs to be used and renewed, sealed as one value.
#[derive(Serialize, Deserialize)]
struct Grant {
    server: AuthServer,
    client: ClientCredentials,
    tokens: TokenSet,
    /// Set when the server refused the token for want of scopes (`403 insufficient_scope`): the
    /// scopes it named (possibly none), asked for on top of the granted ones when the user
    /// authorizes again.
    #[serde(default)]
    step_up: Option<String>,
}

impl Grant {
    /// The scopes to ask for when authorizing again: those granted and those asked for since.
    fn wanted_scopes(&self) -> Option<String> {
        union_scopes([self.tokens.scope.as_deref(), self.step_up.as_deref()])
    }
}

/// What the callback needs beyond the PKCE verifier.
#[derive(Serialize, Deserialize)]
struct PendingDetails {
    server: AuthServer,
    client: ClientCredentials,
    redirect_uri: String,
    /// The tool call that waits for this authorization mid-turn, if one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    waiting: Option<WaitingCall>,
}

fn from_mcp(error: McpError) -> ServiceError {
    match error {
        McpError::RefusedAddress(reason) => ServiceError::RefusedAddress(reason),
        McpError::TooManyProbes { retry_after } => ServiceError::TooManyProbes(retry_after),
        other => ServiceError::McpAuthorization(other.to_string()),
    }
}

fn now_ms() -> i64 {
    crate::now().timestamp_millis()
}

impl Service {
    /// Where one of the user's MCP servers stands with OAuth; a server that asks for it and has no
    /// grant gets an authorization started, whose URL comes back.
    pub async fn mcp_authorization(&self, user_id: &str, id: &str) -> Result<McpAuthorization, ServiceError> {
        if self.store.get_mcp_grant(user_id, id).await?.is_some() {
            return Ok(McpAuthorization::Connected);
        }
        let server = self.mcp_server(user_id, id).await?;
        let Some(hub) = &self.mcp else {
            return Ok(McpAuthorization::NotNeeded);
        };
        // A server given a static secret is authorized by it; it is not asked without it.
        let secrets = self.store.mcp_server_secrets(user_id, id).await?;
        if secrets.bearer_token.is_some() || !secrets.headers.is_empty() {
            return Ok(McpAuthorization::NotNeeded);
        }
        // A registration does not wait on a server that is slow or hangs; the probe and
        // `POST .../authorize` ask again.
        let challenge =
            tokio::time::timeout(REGISTRATION_CHALLENGE_BUDGET, hub.oauth().challenge(&server.url)).await;
        match challenge {
            Ok(Ok(Some(_))) => Ok(McpAuthorization::NeedsAuthorization {
                url: self.start_mcp_authorization(user_id, id).await?,
            }),
            // Unreachable now says nothing about authorization; the probe reports it.
            _ => Ok(McpAuthorization::NotNeeded),
        }
    }

    /// The ids of the user's MCP servers they authorized with OAuth.
    pub async fn authorized_mcp_servers(&self, user_id: &str) -> Result<Vec<String>, ServiceError> {
        Ok(self.store.mcp_grant_server_ids(user_id).await?)
    }

    /// Starts authorizing one of the user's MCP servers (Connect, Reconnect): see
    /// [`Service::start_mcp_authorization_with_scopes`].
    pub async fn start_mcp_authorization(&self, user_id: &str, id: &str) -> Result<String, ServiceError> {
        self.begin_mcp_authorization(user_id, id, None, None).await
    }

    /// Starts authorizing one of the user's MCP servers, asking for `scopes` on top of the rest
    /// (see [`Service::begin_mcp_authorization`]).
    pub async fn start_mcp_authorization_with_scopes(
        &self,
        user_id: &str,
        id: &str,
        scopes: Option<&str>,
    ) -> Result<String, ServiceError> {
        self.begin_mcp_authorization(user_id, id, scopes, None).await
    }

    /// Starts authorizing one of the user's MCP servers: finds its authorization server, settles
    /// the client identity there, keeps the pending authorization and returns the URL for the
    /// browser. It asks for the union of the server's challenge, the scopes already granted, those
    /// the server asked for since (step-up) and `scopes`; on behalf of the tool call `waiting`
    /// mid-turn, if one waits.
    pub(crate) async fn begin_mcp_authorization(
        &self,
        user_id: &str,
        id: &str,
        scopes: Option<&str>,
        waiting: Option<WaitingCall>,
    ) -> Result<String, ServiceError> {
        let server = self.mcp_server(user_id, id).await?;
        let hub = self.mcp.as_ref().ok_or(ServiceError::McpOAuthNotConfigured)?;
        let redirect_uri = self
            .config
            .mcp_oauth_redirect
            .clone()
            .ok_or(ServiceError::McpOAuthNotConfigured)?;
        // Discovery and registration reach the server and its authorization server on the user's
        // demand, as a probe does, and count as one.
        let _contact = hub.admit_probe(user_id).map_err(from_mcp)?;
        let oauth = hub.oauth();
        let challenge = oauth
            .challenge(&server.url)
            .await
            .map_err(from_mcp)?
            .ok_or_else(|| {
                ServiceError::InvalidMessage("this MCP server does not ask for authorization".into())
            })?;
        let mut found = oauth.discover(&server.url, &challenge).await.map_err(from_mcp)?;
        let held = match self.mcp_grants() {
            Some(grants) => grants.load(user_id, id).await,
            None => None,
        };
        found.scope = union_scopes([
            found.scope.as_deref(),
            held.as_ref().and_then(Grant::wanted_scopes).as_deref(),
            scopes,
        ]);
        let given = self.store.mcp_server_oauth_client(user_id, id).await?;
        let client = self.client_at(&oauth, &found, &redirect_uri, given).await?;
        let pkce = promptgate_tools::oauth::pkce_pair();
        let state = promptgate_tools::oauth::new_state();
        let url = oauth
            .authorization_url(&found, &client, &redirect_uri, &state, &pkce.challenge)
            .map_err(from_mcp)?;
        let details = PendingDetails {
            server: found,
            client,
            redirect_uri,
            waiting,
        };
        let pending = OAuthPending {
            user_id: user_id.to_owned(),
            provider: format!("{PROVIDER_PREFIX}{id}"),
            code_verifier: pkce.verifier,
            details: Some(serde_json::to_string(&details).map_err(|_| ServiceError::Internal)?),
        };
        if let Err(PendingRefused::TooMany) = self.store.put_oauth_pending(&state, &pending, limits()).await?
        {
            return Err(ServiceError::TooManyAuthorizations);
        }
        tracing::info!(user = %user_id, server_id = %id, "MCP server authorization started");
        Ok(url)
    }

    /// The client identity at `found`: the one the user gave with the server (`given`), else the
    /// one the operator registered with that issuer, else the gateway's Client ID Metadata Document
    /// where the authorization server takes one (and the gateway serves one), else a client
    /// registered there now (RFC 7591). A client someone registered by hand comes first: an
    /// authorization server that has one for promptgate may offer neither of the others.
    async fn client_at(
        &self,
        oauth: &McpOAuth,
        found: &AuthServer,
        redirect_uri: &str,
        given: Option<McpOAuthClient>,
    ) -> Result<ClientCredentials, ServiceError> {
        if let Some(client) = given {
            return Ok(ClientCredentials {
                client_id: client.client_id,
                client_secret: client.client_secret,
            });
        }
        let given = self
            .config
            .mcp_oauth_clients
            .iter()
            .find(|(issuer, _)| *issuer == found.issuer);
        if let Some((_, client)) = given {
            return Ok(client.clone());
        }
        if found.client_id_metadata_document_supported
            && let Some(url) = &self.config.mcp_oauth_client_metadata_url
        {
            return Ok(ClientCredentials {
                client_id: url.clone(),
                client_secret: None,
            });
        }
        oauth
            .register(found, redirect_uri, CLIENT_NAME)
            .await
            .map_err(from_mcp)
    }

    /// The Client ID Metadata Document the gateway serves at its client id URL; `None` when it
    /// serves none (no public https base configured).
    pub fn mcp_client_metadata_document(&self) -> Option<Value> {
        let url = self.config.mcp_oauth_client_metadata_url.as_deref()?;
        let redirect_uri = self.config.mcp_oauth_redirect.as_deref()?;
        Some(client_metadata_document(url, redirect_uri, CLIENT_NAME))
    }

    /// The user's OAuth-authorized MCP servers that asked for more scopes than were granted
    /// (`403 insufficient_scope`), each with the scopes authorizing again asks for.
    pub async fn mcp_step_ups(&self, user_id: &str) -> Result<Vec<(String, String)>, ServiceError> {
        let Some(grants) = self.mcp_grants() else {
            return Ok(Vec::new());
        };
        let mut wanted = Vec::new();
        for id in self.store.mcp_grant_server_ids(user_id).await? {
            if let Some(grant) = grants.load(user_id, &id).await
                && grant.step_up.is_some()
            {
                wanted.push((id, grant.wanted_scopes().unwrap_or_default()));
            }
        }
        Ok(wanted)
    }

    /// Completes an MCP server's authorization on the authorization server's redirect, on any
    /// instance: checks `state` (once, while fresh) and `iss`, trades the code for tokens and keeps
    /// them. Returns the server's name for the page the browser shows.
    pub async fn complete_mcp_authorization(&self, callback: &OAuthCallback) -> Result<String, ServiceError> {
        let pending = self.take_pending(callback).await?;
        let server_id = pending
            .provider
            .strip_prefix(PROVIDER_PREFIX)
            .ok_or(ServiceError::UnknownAuthorization)?;
        let details: PendingDetails = pending
            .details
            .as_deref()
            .and_then(|d| serde_json::from_str(d).ok())
            .ok_or(ServiceError::UnknownAuthorization)?;
        // RFC 9207: a callback from another authorization server is not acted on, nor its errors shown.
        check_issuer(&details.server, callback.iss.as_deref()).map_err(from_mcp)?;
        if let Some(error) = &callback.error {
            tracing::info!(user = %pending.user_id, server_id, "the authorization server refused the authorization");
            return Err(ServiceError::ProviderRefused(format!(
                "the MCP server's authorization server refused the authorization ({})",
                error.chars().take(60).collect::<String>()
            )));
        }
        let code = valid_code(callback)?;
        let server = self.mcp_server(&pending.user_id, server_id).await?;
        let hub = self.mcp.as_ref().ok_or(ServiceError::McpOAuthNotConfigured)?;
        let tokens = hub
            .oauth()
            .exchange_code(
                &details.server,
                &details.client,
                &details.redirect_uri,
                code,
                &pending.code_verifier,
                now_ms(),
            )
            .await
            .map_err(from_mcp)?;
        let waiting = details.waiting;
        let grant = Grant {
            server: details.server,
            client: details.client,
            tokens,
            step_up: None,
        };
        self.keep_grant(&pending.user_id, server_id, &grant).await?;
        // A session opened without the token is of no use now.
        hub.forget(&pending.user_id, server_id);
        self.mcp_known.forget_notice(&pending.user_id, server_id);
        tracing::info!(user = %pending.user_id, server_id, "MCP server authorized");
        if let Some(waiting) = &waiting {
            self.wake_waiting_call(&pending.user_id, waiting).await;
        }
        Ok(server.name)
    }

    /// The access token a send or probe uses for the server (see [`McpGrants::access_token`]).
    pub(crate) async fn mcp_access_token(&self, user_id: &str, id: &str, rejected: bool) -> Option<String> {
        self.mcp_grants()?.access_token(user_id, id, rejected).await
    }

    /// The grants' handle, for the tool executors of a send; `None` without MCP.
    pub(crate) fn mcp_grants(&self) -> Option<McpGrants> {
        Some(McpGrants {
            store: self.store.clone(),
            hub: self.mcp.clone()?,
            renewing: self.mcp_renewing.clone(),
        })
    }

    /// Revokes the grant's tokens where the authorization server offers it (RFC 7009: the refresh
    /// token, which ends the grant, then the access token, which a server may keep honouring until
    /// it lapses) and forgets it. A revocation that fails is logged; the grant is forgotten anyway.
    pub(crate) async fn forget_mcp_grant(&self, user_id: &str, id: &str) -> Result<(), ServiceError> {
        if let (Some(hub), Some(sealed)) = (&self.mcp, self.store.get_mcp_grant(user_id, id).await?)
            && let Ok(grant) = serde_json::from_str::<Grant>(&sealed)
        {
            let tokens = [
                grant.tokens.refresh_token.as_deref(),
                Some(grant.tokens.access_token.as_str()),
            ];
            for token in tokens.into_iter().flatten() {
                if let Err(error) = hub.oauth().revoke(&grant.server, &grant.client, token).await {
                    tracing::info!(server_id = %id, %error, "revoking an MCP token failed; forgetting it anyway");
                }
            }
        }
        self.store.delete_mcp_grant(user_id, id).await?;
        Ok(())
    }

    async fn keep_grant(&self, user_id: &str, id: &str, grant: &Grant) -> Result<(), ServiceError> {
        keep(&self.store, user_id, id, grant).await
    }
}

async fn keep(store: &Store, user_id: &str, id: &str, grant: &Grant) -> Result<(), ServiceError> {
    let text = serde_json::to_string(grant).map_err(|_| ServiceError::Internal)?;
    store.put_mcp_grant(user_id, id, &text).await?;
    Ok(())
}

/// One lock per user and server, so the calls of one instance renew a grant once rather than
/// racing each other with a refresh token that rotates.
pub(crate) type RenewLocks = Arc<Mutex<HashMap<(String, String), Arc<tokio::sync::Mutex<()>>>>>;

/// The users' MCP grants, for whoever needs a token: a send's discovery, a probe, a tool call.
#[derive(Clone)]
pub(crate) struct McpGrants {
    store: Store,
    hub: McpHub,
    renewing: RenewLocks,
}

impl McpGrants {
    /// The access token for the server, renewed first when it lapses within a minute or `rejected`
    /// says the server refused it. `None`: the server has no grant, or it cannot be renewed (the
    /// user must authorize again).
    pub async fn access_token(&self, user_id: &str, id: &str, rejected: bool) -> Option<String> {
        let grant = self.load(user_id, id).await?;
        if !rejected && !grant.tokens.expires_within(REFRESH_MARGIN_MS, now_ms()) {
            return Some(grant.tokens.access_token);
        }
        let lock = self.lock_for(user_id, id);
        let _renewing = lock.lock().await;
        // Whoever held the lock, or another instance, may have renewed it meanwhile.
        let mut grant = self.load(user_id, id).await?;
        let renewed_meanwhile = !grant.tokens.expires_within(REFRESH_MARGIN_MS, now_ms());
        if renewed_meanwhile && !rejected {
            return Some(grant.tokens.access_token);
        }
        let oauth = self.hub.oauth();
        match oauth
            .refresh(&grant.server, &grant.client, &grant.tokens, now_ms())
            .await
        {
            Ok(tokens) => {
                grant.tokens = tokens;
                keep(&self.store, user_id, id, &grant).await.ok()?;
                tracing::debug!(user = %user_id, server_id = %id, "MCP access token renewed");
                Some(grant.tokens.access_token)
            }
            Err(error) => {
                // Another instance may have renewed with the same (now rotated) refresh token.
                let latest = self.load(user_id, id).await?;
                if latest.tokens.refresh_token != grant.tokens.refresh_token {
                    return Some(latest.tokens.access_token);
                }
                tracing::info!(user = %user_id, server_id = %id, %error, "MCP grant could not be renewed; the user must authorize again");
                None
            }
        }
    }

    /// The user authorized the server with OAuth (the grant may have ended since).
    pub async fn has_grant(&self, user_id: &str, id: &str) -> bool {
        matches!(self.store.get_mcp_grant(user_id, id).await, Ok(Some(_)))
    }

    /// Notes that the server refused the token for want of scopes (`scope`, when it named them), so
    /// the server shows as needing authorization and authorizing again asks for them too.
    pub async fn want_wider_scope(&self, user_id: &str, id: &str, scope: Option<&str>) {
        let lock = self.lock_for(user_id, id);
        let _writing = lock.lock().await;
        let Some(mut grant) = self.load(user_id, id).await else {
            return;
        };
        let wanted = union_scopes([grant.step_up.as_deref(), scope]).unwrap_or_default();
        if grant.step_up.as_deref() == Some(wanted.as_str()) {
            return;
        }
        grant.step_up = Some(wanted);
        if keep(&self.store, user_id, id, &grant).await.is_ok() {
            tracing::info!(user = %user_id, server_id = %id, "the MCP server asks for more scopes; the user must authorize again");
        }
    }

    /// The scopes authorizing the server again asks for: granted, and wanted since.
    pub async fn wanted_scopes(&self, user_id: &str, id: &str) -> Option<String> {
        self.load(user_id, id).await?.wanted_scopes()
    }

    async fn load(&self, user_id: &str, id: &str) -> Option<Grant> {
        let text = self.store.get_mcp_grant(user_id, id).await.ok()??;
        serde_json::from_str(&text).ok()
    }

    fn lock_for(&self, user_id: &str, id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self
            .renewing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Only locks someone holds are kept, so the map stays as small as the renewals under way.
        locks.retain(|_, lock| Arc::strong_count(lock) > 1);
        locks
            .entry((user_id.to_owned(), id.to_owned()))
            .or_default()
            .clone()
    }
}
