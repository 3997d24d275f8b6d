//! The user's own records: threads and their messages, projects, skills, models, MCP servers,
//! settings and artifacts. Every call takes the user's id, so no request reaches another user's rows.

use std::time::Duration;

use promptgate_core::settings::{Model, Project, Skill, UserSettings};
use promptgate_mcp::{HubSettings, McpError, McpServerConfig, ProbeReport};
use promptgate_store::{
    McpServer, Message, NewMcpServer, NewProject, NewSkill, NewThread, Page, Thread, ThreadUpdate,
    ThreadsAfter,
};

use crate::{Service, ServiceError};

/// What probing an MCP server found.
#[derive(Debug)]
pub enum ProbeOutcome {
    Reached(ProbeReport),
    /// The server could not be used; `kind` is machine-readable, `message` never repeats what the
    /// server sent.
    Failed {
        kind: String,
        message: String,
        /// For `insufficient_scope`: the scopes authorizing again asks for (granted and wanted).
        scopes: Option<String>,
    },
}

impl Service {
    /// A page of the user's threads, most recently updated first, after `after` when given.
    pub async fn threads(
        &self,
        user_id: &str,
        project_id: Option<&str>,
        after: Option<&ThreadsAfter>,
        limit: u32,
    ) -> Result<Page<Thread>, ServiceError> {
        Ok(self
            .store
            .list_threads_page(user_id, project_id, after, limit)
            .await?)
    }

    /// A page of the user's threads whose title, or one of whose messages, has every word of `query`
    /// (as word starts), best first, skipping the first `skip`.
    pub async fn search_threads(
        &self,
        user_id: &str,
        project_id: Option<&str>,
        query: &str,
        skip: u32,
        limit: u32,
    ) -> Result<Page<Thread>, ServiceError> {
        Ok(self
            .store
            .search_threads(user_id, project_id, query, skip, limit)
            .await?)
    }

    /// Creates a thread; a project it names must be one of the user's.
    pub async fn create_thread(&self, user_id: &str, thread: &NewThread) -> Result<Thread, ServiceError> {
        if let Some(project) = &thread.project_id {
            self.require_project(user_id, project).await?;
        }
        self.admit_storage(user_id, true, None).await?;
        Ok(self.store.create_thread(user_id, thread).await?)
    }

    pub async fn thread(&self, user_id: &str, id: &str) -> Result<Thread, ServiceError> {
        self.store
            .get_thread(user_id, id)
            .await?
            .ok_or_else(|| ServiceError::not_found("thread", id))
    }

    /// Renames a thread or moves it; a project it moves to must be one of the user's.
    pub async fn update_thread(
        &self,
        user_id: &str,
        id: &str,
        update: &ThreadUpdate,
    ) -> Result<Thread, ServiceError> {
        if let Some(Some(project)) = &update.project_id {
            self.require_project(user_id, project).await?;
        }
        self.store
            .update_thread(user_id, id, update)
            .await
            .map_err(ServiceError::about("thread", id))
    }

    pub async fn delete_thread(&self, user_id: &str, id: &str) -> Result<(), ServiceError> {
        self.store
            .delete_thread(user_id, id)
            .await
            .map_err(ServiceError::about("thread", id))
    }

    /// A page of the thread's messages before position `before` (the newest when absent), in
    /// conversation order: the conversation as it reads now, or with `replaced` also the messages an
    /// edit or a regenerate replaced.
    pub async fn messages(
        &self,
        user_id: &str,
        thread_id: &str,
        replaced: bool,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Page<Message>, ServiceError> {
        self.store
            .list_messages_page(user_id, thread_id, before, limit, replaced)
            .await
            .map_err(ServiceError::about("thread", thread_id))
    }

    async fn require_project(&self, user_id: &str, id: &str) -> Result<(), ServiceError> {
        match self.store.get_project(user_id, id).await? {
            Some(_) => Ok(()),
            None => Err(ServiceError::not_found("project", id)),
        }
    }

    pub async fn projects(&self, user_id: &str) -> Result<Vec<Project>, ServiceError> {
        Ok(self.store.list_projects(user_id).await?)
    }

    pub async fn create_project(&self, user_id: &str, project: &NewProject) -> Result<Project, ServiceError> {
        Ok(self.store.create_project(user_id, project).await?)
    }

    pub async fn project(&self, user_id: &str, id: &str) -> Result<Project, ServiceError> {
        self.store
            .get_project(user_id, id)
            .await?
            .ok_or_else(|| ServiceError::not_found("project", id))
    }

    pub async fn update_project(
        &self,
        user_id: &str,
        id: &str,
        project: &NewProject,
    ) -> Result<Project, ServiceError> {
        self.store
            .update_project(user_id, id, project)
            .await
            .map_err(ServiceError::about("project", id))
    }

    /// Deletes a project; its threads stay, unassigned.
    pub async fn delete_project(&self, user_id: &str, id: &str) -> Result<(), ServiceError> {
        self.store
            .delete_project(user_id, id)
            .await
            .map_err(ServiceError::about("project", id))
    }

    pub async fn skills(&self, user_id: &str) -> Result<Vec<Skill>, ServiceError> {
        Ok(self.store.list_skills(user_id).await?)
    }

    pub async fn create_skill(&self, user_id: &str, skill: &NewSkill) -> Result<Skill, ServiceError> {
        Ok(self.store.create_skill(user_id, skill).await?)
    }

    pub async fn skill(&self, user_id: &str, id: &str) -> Result<Skill, ServiceError> {
        self.store
            .get_skill(user_id, id)
            .await?
            .ok_or_else(|| ServiceError::not_found("skill", id))
    }

    pub async fn update_skill(
        &self,
        user_id: &str,
        id: &str,
        skill: &NewSkill,
    ) -> Result<Skill, ServiceError> {
        self.store
            .update_skill(user_id, id, skill)
            .await
            .map_err(ServiceError::about("skill", id))
    }

    pub async fn delete_skill(&self, user_id: &str, id: &str) -> Result<(), ServiceError> {
        self.store
            .delete_skill(user_id, id)
            .await
            .map_err(ServiceError::about("skill", id))
    }

    /// The models the user can chat with: the system models first, then their own.
    pub async fn models(&self, user_id: &str) -> Result<Vec<Model>, ServiceError> {
        Ok(self.store.list_models(user_id).await?)
    }

    pub async fn model(&self, user_id: &str, id: &str) -> Result<Model, ServiceError> {
        self.store
            .get_model(user_id, id)
            .await?
            .ok_or_else(|| ServiceError::not_found("model", id))
    }

    pub async fn create_model(&self, user_id: &str, model: &Model) -> Result<Model, ServiceError> {
        Ok(self.store.create_model(user_id, model).await?)
    }

    /// Replaces one of the user's models (system models are read-only).
    pub async fn update_model(&self, user_id: &str, model: &Model) -> Result<Model, ServiceError> {
        self.store
            .update_model(user_id, model)
            .await
            .map_err(ServiceError::about("model", &model.id))
    }

    pub async fn delete_model(&self, user_id: &str, id: &str) -> Result<(), ServiceError> {
        self.store
            .delete_model(user_id, id)
            .await
            .map_err(ServiceError::about("model", id))
    }

    /// The user's settings, defaults where never set.
    pub async fn settings(&self, user_id: &str) -> Result<UserSettings, ServiceError> {
        Ok(self.store.get_settings(user_id).await?)
    }

    /// Stores the user's settings; a default model they name must be one they can use.
    pub async fn put_settings(&self, user_id: &str, settings: &UserSettings) -> Result<(), ServiceError> {
        if let Some(model) = &settings.default_model
            && self.store.get_model(user_id, model).await?.is_none()
        {
            return Err(ServiceError::UnusableDefaultModel(model.clone()));
        }
        Ok(self.store.put_settings(user_id, settings).await?)
    }

    /// An artifact's HTML document.
    pub async fn artifact_html(&self, user_id: &str, id: &str) -> Result<String, ServiceError> {
        self.store
            .get_artifact(user_id, id)
            .await?
            .map(|artifact| artifact.html)
            .ok_or_else(|| ServiceError::not_found("artifact", id))
    }

    /// The user's MCP servers; secrets are never part of them, only whether they are set.
    pub async fn mcp_servers(&self, user_id: &str) -> Result<Vec<McpServer>, ServiceError> {
        Ok(self.store.list_mcp_servers(user_id).await?)
    }

    pub async fn mcp_server(&self, user_id: &str, id: &str) -> Result<McpServer, ServiceError> {
        self.store
            .get_mcp_server(user_id, id)
            .await?
            .ok_or_else(|| ServiceError::not_found("MCP server", id))
    }

    /// Registers an MCP server whose URL the outbound address policy allows, unless the user already
    /// has as many as a user may (`[mcp] max_servers_per_user`).
    pub async fn create_mcp_server(
        &self,
        user_id: &str,
        server: &NewMcpServer,
    ) -> Result<McpServer, ServiceError> {
        self.check_destination(&server.url).await?;
        let limit = self.mcp_servers_per_user();
        self.store
            .create_mcp_server_within(user_id, server, limit)
            .await?
            .ok_or(ServiceError::McpServerLimit(limit))
    }

    /// How many MCP servers one user may register.
    fn mcp_servers_per_user(&self) -> usize {
        self.mcp.as_ref().map_or_else(
            || HubSettings::default().max_servers_per_user,
            |hub| hub.settings().max_servers_per_user,
        )
    }

    /// Replaces an MCP server, secrets included; its URL must be one the address policy allows.
    pub async fn update_mcp_server(
        &self,
        user_id: &str,
        id: &str,
        server: &NewMcpServer,
    ) -> Result<McpServer, ServiceError> {
        self.check_destination(&server.url).await?;
        self.store
            .update_mcp_server(user_id, id, server)
            .await
            .map_err(ServiceError::about("MCP server", id))
    }

    pub async fn delete_mcp_server(&self, user_id: &str, id: &str) -> Result<(), ServiceError> {
        self.mcp_server(user_id, id).await?;
        self.forget_mcp_grant(user_id, id).await?;
        self.store
            .delete_mcp_server(user_id, id)
            .await
            .map_err(ServiceError::about("MCP server", id))?;
        // Close its pooled session and stop any reconnect now rather than when it idles out.
        if let Some(hub) = &self.mcp {
            hub.forget(user_id, id);
        }
        Ok(())
    }

    /// Refuses a server URL the outbound address policy would refuse at connect time, so a user
    /// learns it when registering rather than at the first send. A name that does not resolve now
    /// is accepted: the server may simply be down. Every connect checks again.
    async fn check_destination(&self, url: &str) -> Result<(), ServiceError> {
        let Some(hub) = &self.mcp else {
            return Ok(());
        };
        match hub.check_url(url).await {
            Err(McpError::RefusedAddress(reason)) => Err(ServiceError::RefusedAddress(reason)),
            Err(McpError::InvalidConfig(reason)) => Err(ServiceError::InvalidMessage(reason)),
            _ => Ok(()),
        }
    }

    /// Connects to one of the user's MCP servers afresh (nothing cached is used) with its stored
    /// headers and token, within `timeout`, and lists its tools.
    pub async fn probe_mcp_server(
        &self,
        user_id: &str,
        id: &str,
        timeout: Duration,
    ) -> Result<ProbeOutcome, ServiceError> {
        let server = self.mcp_server(user_id, id).await?;
        let secrets = self
            .store
            .mcp_server_secrets(user_id, id)
            .await
            .map_err(ServiceError::about("MCP server", id))?;
        let Some(hub) = &self.mcp else {
            return Ok(ProbeOutcome::Failed {
                kind: "unavailable".to_owned(),
                message: "this server was started without MCP support".to_owned(),
                scopes: None,
            });
        };
        let granted = self.mcp_access_token(user_id, id, false).await;
        let config = McpServerConfig {
            id: server.id,
            user_id: user_id.to_owned(),
            name: server.name,
            url: server.url,
            headers: secrets.headers,
            bearer_token: granted.or(secrets.bearer_token),
        };
        Ok(match hub.probe(&config, timeout).await {
            Ok(report) => ProbeOutcome::Reached(report),
            Err(McpError::TooManyProbes { retry_after }) => {
                return Err(ServiceError::TooManyProbes(retry_after));
            }
            Err(error) => {
                tracing::info!(server_id = %config.id, %error, "MCP probe failed");
                let scopes = match (&error, self.mcp_grants()) {
                    (McpError::InsufficientScope { scope }, Some(grants)) => {
                        grants.want_wider_scope(user_id, id, scope.as_deref()).await;
                        Some(grants.wanted_scopes(user_id, id).await.unwrap_or_default())
                    }
                    (McpError::InsufficientScope { scope }, None) => scope.clone(),
                    _ => None,
                };
                ProbeOutcome::Failed {
                    kind: error.kind().to_owned(),
                    message: error.to_string(),
                    scopes,
                }
            }
        })
    }
}
