use promptgate_core::settings::Project;

use crate::connect::Store;
use crate::error::Result;
use crate::observed::Observed;
use crate::projects::thread_from;
use crate::types::{SendContext, Thread, current_conversation};
use crate::util::Cols;

impl Store {
    /// Everything one send needs, with the model `requested` (else the user's default model, else
    /// `server_default`). The user's setup comes from [`Store::user_setup`]; it, the thread and the
    /// history are read concurrently. Without a `thread_id` (a stateless completion) no thread is read.
    pub async fn load_send_context(
        &self,
        user: &str,
        thread_id: Option<&str>,
        requested_model: Option<&str>,
        server_default: &str,
    ) -> Result<SendContext> {
        let (setup, (thread, project, sibling_count), history) = futures::try_join!(
            self.user_setup(user),
            async {
                match thread_id {
                    Some(thread_id) => self.thread_with_project(user, thread_id).await,
                    None => Ok((None, None, 0)),
                }
            },
            async {
                match thread_id {
                    Some(thread_id) => self.history(user, thread_id).await.map(current_conversation),
                    None => Ok(Vec::new()),
                }
            },
        )?;
        let model_id = requested_model
            .map(str::to_owned)
            .or_else(|| setup.settings.default_model.clone())
            .unwrap_or_else(|| server_default.to_owned());
        Ok(SendContext {
            settings: setup.settings.clone(),
            integrations: setup.integrations,
            model: setup.model(&model_id).cloned(),
            model_id,
            thread,
            project,
            sibling_count,
            skills: setup.skills.clone(),
            mcp_servers: setup.mcp_servers.clone(),
            history,
        })
    }

    /// The thread, its project and how many other threads that project has.
    async fn thread_with_project(
        &self,
        user: &str,
        thread_id: &str,
    ) -> Result<(Option<Thread>, Option<Project>, u32)> {
        let row = sqlx::query(
            "SELECT t.id, t.project_id, t.title, t.created_at, t.updated_at, p.id, p.name, \
             p.instructions, (SELECT COUNT(*) FROM threads s WHERE s.user_id = t.user_id \
             AND s.project_id = t.project_id AND s.id <> t.id) \
             FROM threads t LEFT JOIN projects p ON p.id = t.project_id AND p.user_id = t.user_id \
             WHERE t.user_id = $1 AND t.id = $2",
        )
        .bind(user)
        .bind(thread_id)
        .fetch_optional(&self.pool)
        .observed("context.thread_with_project")
        .await?;
        let Some(row) = row else {
            return Ok((None, None, 0));
        };
        let thread = thread_from(&row, 0)?;
        let project = match row.opt_text(5)? {
            Some(id) => Some(Project {
                id,
                name: row.text(6)?,
                instructions: row.opt_text(7)?,
            }),
            None => None,
        };
        let siblings = u32::try_from(row.int(8)?).unwrap_or(u32::MAX);
        Ok((Some(thread), project, siblings))
    }
}
