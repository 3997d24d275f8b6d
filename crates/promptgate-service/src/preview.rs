//! The inspector's preview: the prompt and toolset a send would get, for a thread that exists or
//! for a new chat's first send, prepared by the send's own code with nothing run.

use promptgate_core::settings::Model;
use promptgate_store::SendContext;

use super::prepare::{Asked, SendFacts};
use super::providers::ModelProvider;
use super::window::{ContextReport, Mode};
use super::{ClientNotes, Service, ServiceError};
use promptgate_core::compose::ComposedSend;

/// What a preview is asked about, besides the thread: the inputs of a send that change its prompt.
#[derive(Debug, Clone, Copy, Default)]
pub struct PreviewAsk<'a> {
    /// The model id; default: the user's default model, then the server's.
    pub model: Option<&'a str>,
    /// The text of the message about to be sent (its `/slug` tokens add skill instructions).
    pub message: Option<&'a str>,
    /// The user talks by voice (the prompt's notes ask for spoken replies).
    pub voice_mode: bool,
}

/// Why a send offers no web tools, so the settings and the preview never disagree silently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebToolsOff {
    /// The user's "Web tools" setting is off.
    Settings,
    /// The model calls no tools at all.
    Model,
    /// This deployment has no search backend (or no fetcher) to run them.
    NoBackend,
}

/// The prompt and toolset a send would use now (what the preview shows).
pub struct SendPreview {
    pub model: Model,
    pub composed: ComposedSend,
    /// What the model would be shown of the thread.
    pub context: ContextReport,
    /// Why there are no web tools, when there are none.
    pub web_tools_off: Option<WebToolsOff>,
    /// Each offered tool's approval policy, by name, as a client that can answer approvals gets it.
    pub approvals: std::collections::BTreeMap<String, promptgate_core::approval::ApprovalPolicy>,
}

impl Service {
    /// The prompt and toolset for a send to `thread_id` made now, without running anything.
    pub async fn preview(
        &self,
        user_id: &str,
        thread_id: &str,
        ask: PreviewAsk<'_>,
    ) -> Result<SendPreview, ServiceError> {
        let (ctx, model, provider) = self.load_with_model(user_id, Some(thread_id), ask.model).await?;
        if ctx.thread.is_none() {
            return Err(ServiceError::UnknownThread(thread_id.to_owned()));
        }
        self.prepare_preview(user_id, ctx, model, &provider, ask).await
    }

    /// The prompt and toolset the first send of a new chat would get, the chat created in
    /// `project_id` when given (one of the user's projects: anyone else's is unknown).
    pub async fn preview_new_chat(
        &self,
        user_id: &str,
        project_id: Option<&str>,
        ask: PreviewAsk<'_>,
    ) -> Result<SendPreview, ServiceError> {
        let (mut ctx, model, provider) = self.load_with_model(user_id, None, ask.model).await?;
        if let Some(project_id) = project_id {
            let project = self.project(user_id, project_id).await?;
            // Every chat already in the project is a sibling of the new one; one is enough to know.
            let siblings = self.threads(user_id, Some(project_id), None, 1).await?;
            ctx.sibling_count = u32::from(!siblings.items.is_empty());
            ctx.project = Some(project);
        }
        self.prepare_preview(user_id, ctx, model, &provider, ask).await
    }

    async fn prepare_preview(
        &self,
        user_id: &str,
        ctx: SendContext,
        model: Model,
        provider: &ModelProvider,
        ask: PreviewAsk<'_>,
    ) -> Result<SendPreview, ServiceError> {
        let web_off = if !model.supports_tools() {
            Some(WebToolsOff::Model)
        } else if !ctx.settings.web_tools_enabled {
            Some(WebToolsOff::Settings)
        } else if !self.web.available() {
            Some(WebToolsOff::NoBackend)
        } else {
            None
        };
        let facts = SendFacts {
            notes: ClientNotes {
                voice_mode: ask.voice_mode,
                ..ClientNotes::default()
            },
            ..SendFacts::default()
        };
        let text = ask.message.unwrap_or_default();
        let asked = Asked {
            text,
            facts: &facts,
            mode: Mode::Preview,
        };
        let prepared = self
            .prepare_with_text(user_id, ctx, model, provider, None, asked)
            .await?;
        let approvals = prepared
            .tools
            .iter()
            .map(|tool| (tool.spec.name.clone(), tool.approval))
            .collect();
        Ok(SendPreview {
            approvals,
            web_tools_off: web_off.filter(|_| !prepared.composed.has_web_tools),
            model: prepared.model,
            composed: prepared.composed,
            context: prepared.report,
        })
    }
}
