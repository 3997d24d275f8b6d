//! Consent in the middle of a turn. A tool call whose service needs the user to authorize it again
//! (an MCP server whose grant cannot be renewed or is too narrow, an integration whose refresh
//! token stopped working) starts that authorization, shows it as a `data-authorization` part of the
//! running answer and waits for it, as a question in the store (see `questions`): the OAuth
//! callback, on whichever instance the browser lands, completes the authorization and answers the
//! question, which wakes the call, and the call runs again with the new grant. Past
//! `[mcp] authorization_wait_secs`, on Stop, or for a client that cannot show the card (the
//! facades, UI streams before v6, a send without a thread), the call ends with an error the model
//! reads.
//!
//! A server that refuses a send's discovery and whose tools are not known cannot be called, so
//! nothing waits: the answer opens with a card in the state `needed`, whose URL starts the same
//! authorization (kept a while and shown again by the next sends rather than started anew).

use std::time::Duration;

use promptgate_core::settings::IntegrationProvider;
use promptgate_core::tools::ToolError;
use promptgate_store::{NewQuestion, QuestionState};
use promptgate_turn::engine::CallScope;
use promptgate_turn::ui::UiChunk;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::questions::{Waited, Waiting};
use crate::{Service, ServiceError};

/// The kind of question a consent is kept as.
const AUTHORIZATION: &str = "authorization";
/// How many times one tool call may ask for consent: once, and once more for a step-up the first
/// grant turned out too narrow for.
pub(crate) const MAX_CONSENTS_PER_CALL: usize = 2;

/// What needs the user's authorization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Consent {
    /// One of the user's MCP servers; `scope` is what to ask for beyond what discovery finds (the
    /// union of the granted scopes and a `403 insufficient_scope` challenge's).
    Mcp {
        server_id: String,
        name: String,
        scope: Option<String>,
    },
    Integration(IntegrationProvider),
}

/// The question an authorization answers when its callback completes: kept with the pending
/// authorization, so any instance taking the callback can wake the waiting call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WaitingCall {
    pub thread_id: String,
    pub question_id: String,
}

/// What a turn's tool calls need to ask for consent.
#[derive(Clone)]
pub(crate) struct ConsentSetup {
    pub service: Service,
    pub user_id: String,
    /// `None` for a send that keeps no thread (a facade's): no card can be shown there.
    pub thread_id: Option<String>,
}

impl ConsentSetup {
    /// What the user calls the service: the server's display name, the provider's ("Google").
    fn name_of(&self, consent: &Consent) -> String {
        match consent {
            Consent::Mcp { name, .. } => name.clone(),
            Consent::Integration(provider) => self
                .service
                .integrations
                .as_ref()
                .and_then(|integrations| integrations.oauth(*provider))
                .map_or_else(
                    || provider.as_str().to_owned(),
                    |oauth| oauth.config().display_name.clone(),
                ),
        }
    }

    /// Asks the user to authorize `consent` and waits until they did: `Ok` once the callback
    /// completed (the caller runs the call again), else the error the model reads.
    pub(crate) async fn ask(&self, consent: &Consent) -> Result<(), ToolError> {
        let name = self.name_of(consent);
        let not_connected = |why: &str| {
            ToolError::Unauthorized(format!(
                "the user did not connect {name} ({why}); its tools cannot be used until they do"
            ))
        };
        let call = CallScope::current().filter(|call| call.can_ask);
        let (Some(call), Some(thread_id)) = (call, self.thread_id.clone()) else {
            return Err(not_connected("this client cannot ask them to authorize it"));
        };
        let question_id = format!("auth_{}", uuid::Uuid::now_v7().simple());
        let waiting = WaitingCall {
            thread_id: thread_id.clone(),
            question_id: question_id.clone(),
        };
        let started = self.service.start_consent(&self.user_id, consent, &waiting).await;
        let url = match started {
            Ok(url) => url,
            Err(err) => {
                tracing::warn!(error = %err, service = %name, "an authorization could not be started mid-turn");
                return Err(not_connected("the authorization could not be started"));
            }
        };
        let wait = self.service.config.authorization_wait;
        let mut data = shown(&question_id, &name, consent, &call, &url, wait);
        let question = NewQuestion {
            question_id: question_id.clone(),
            thread_id,
            message_id: call.message_id.clone(),
            turn_id: call.turn_id.clone(),
            tool_call_id: call.tool_call_id.clone(),
            kind: AUTHORIZATION.to_owned(),
            question: data.to_string(),
        };
        let _user_time = call.waiting_for_user();
        let store = &self.service.store;
        let kept = Waiting::keep(store, &self.user_id, &question, wait, &self.service.tasks).await;
        // Stop drops this future, and the kept question is cancelled with it.
        let waited = match kept {
            Ok(waiting) => {
                show(&call, &question_id, &data).await;
                waiting.answer(&CancellationToken::new()).await
            }
            Err(err) => Err(err),
        };
        let (state, outcome) = match waited {
            Ok(Waited::Answered(_)) => ("authorized", Ok(())),
            Ok(Waited::Expired) => (
                "expired",
                Err(not_connected(&format!(
                    "no authorization within {} s",
                    wait.as_secs()
                ))),
            ),
            Ok(Waited::Cancelled) => ("cancelled", Err(not_connected("the wait was cancelled"))),
            Err(err) => {
                tracing::warn!(error = %err, "a consent could not be kept or waited on");
                ("cancelled", Err(not_connected("the wait failed")))
            }
        };
        data["state"] = json!(state);
        show(&call, &question_id, &data).await;
        outcome
    }
}

/// The part's data: what the card shows, `name` being what the user calls the service.
fn shown(id: &str, name: &str, consent: &Consent, call: &CallScope, url: &str, wait: Duration) -> Value {
    let mut data = json!({
        "authorizationId": id,
        "server": name,
        "toolCallId": call.tool_call_id,
        "url": url,
        "state": "waiting",
        "expiresInSecs": wait.as_secs(),
    });
    match consent {
        Consent::Mcp { server_id, scope, .. } => {
            data["kind"] = json!("mcp");
            data["serverId"] = json!(server_id);
            data["scopes"] = json!(scopes_of(scope.as_deref()));
        }
        Consent::Integration(provider) => {
            data["kind"] = json!("integration");
            data["provider"] = json!(provider.as_str());
            data["scopes"] = json!([]);
        }
    }
    data
}

async fn show(call: &CallScope, id: &str, data: &Value) {
    let chunk = UiChunk::DataAuthorization {
        id: id.to_owned(),
        data: data.clone(),
    };
    if !call.show(chunk).await {
        tracing::debug!("an authorization part came after its turn stopped reading");
    }
}

/// How long a send may take to start the authorizations its opening cards show; past it, the
/// cards are left out (the model still reads its note).
const NOTICE_BUDGET: Duration = Duration::from_secs(3);

impl Service {
    /// The opening cards of a send for the MCP servers (id, name) that want the user's
    /// authorization and offer no tools: each asks the user to connect the server, without waiting.
    pub(crate) async fn authorization_notices(
        &self,
        user_id: &str,
        servers: &[(String, String)],
    ) -> Vec<UiChunk> {
        // Started side by side, so several such servers cost the answer's start one budget.
        let started = servers.iter().map(|(server_id, name)| async move {
            match tokio::time::timeout(NOTICE_BUDGET, self.notice_url(user_id, server_id)).await {
                Ok(Ok(url)) => Some(needed_card(server_id, name, &url)),
                Ok(Err(err)) => {
                    tracing::info!(error = %err, server = %name, "no authorization could be started for a send's card");
                    None
                }
                Err(_) => None,
            }
        });
        futures::future::join_all(started)
            .await
            .into_iter()
            .flatten()
            .collect()
    }

    /// The URL of an authorization of the server this instance started lately for a card, else
    /// of one started now.
    async fn notice_url(&self, user_id: &str, server_id: &str) -> Result<String, ServiceError> {
        if let Some(url) = self.mcp_known.recent_notice(user_id, server_id) {
            return Ok(url);
        }
        let url = self
            .begin_mcp_authorization(user_id, server_id, None, None)
            .await?;
        self.mcp_known.note_notice(user_id, server_id, &url);
        Ok(url)
    }
}

/// The card of a server the send could not use until the user connects it at `url`.
fn needed_card(server_id: &str, name: &str, url: &str) -> UiChunk {
    let id = format!("auth_{}", uuid::Uuid::now_v7().simple());
    let data = json!({
        "authorizationId": id,
        "server": name,
        "kind": "mcp",
        "serverId": server_id,
        "url": url,
        "state": "needed",
        "scopes": [],
    });
    UiChunk::DataAuthorization { id, data }
}

fn scopes_of(scope: Option<&str>) -> Vec<&str> {
    scope.map(|s| s.split_whitespace().collect()).unwrap_or_default()
}

impl Service {
    /// Starts the authorization `consent` asks for, remembering the waiting call with it; returns
    /// the URL for the user's browser.
    async fn start_consent(
        &self,
        user_id: &str,
        consent: &Consent,
        waiting: &WaitingCall,
    ) -> Result<String, ServiceError> {
        match consent {
            Consent::Mcp { server_id, scope, .. } => {
                self.begin_mcp_authorization(user_id, server_id, scope.as_deref(), Some(waiting.clone()))
                    .await
            }
            Consent::Integration(provider) => {
                self.begin_authorization(user_id, *provider, Some(waiting)).await
            }
        }
    }

    /// Wakes the call that waits for the authorization just completed, wherever it runs. The
    /// authorization itself stands whatever happens here: a call that stopped waiting meanwhile
    /// (expired, Stop) is simply not woken.
    pub(crate) async fn wake_waiting_call(&self, user_id: &str, waiting: &WaitingCall) {
        let question = self
            .store
            .question(user_id, &waiting.thread_id, &waiting.question_id)
            .await;
        let question = match question {
            Ok(Some(question)) if question.asked.kind == AUTHORIZATION => question,
            Ok(_) => return,
            Err(err) => {
                tracing::warn!(error = %err, "the call waiting for an authorization could not be read");
                return;
            }
        };
        if question.state != QuestionState::Pending || question.expired {
            tracing::info!(user = %user_id, "authorized after the call stopped waiting for it");
            return;
        }
        if let Err(err) = self
            .give_answer(
                user_id,
                &question,
                &json!({"action": "authorized"}),
                AUTHORIZATION,
            )
            .await
        {
            tracing::info!(error = %err, "the call waiting for an authorization was not woken");
        }
    }
}
