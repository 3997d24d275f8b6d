use promptgate_core::settings::Project;

use crate::connect::Store;
use crate::error::Result;
use crate::projects::thread_from;
use crate::types::{SendContext, Thread};
use crate::util::Cols;

impl Store {
    /// Everything one send needs. The independent reads run concurrently (on Postgres each on its own
    /// connection), so the latency is about that of the slowest single query.
    pub async fn load_send_context(
        &self,
        user: &str,
        thread_id: &str,
        model_id: &str,
    ) -> Result<SendContext> {
        let ((settings, integrations), model, (thread, project, sibling_count), skills, mcp, history) = futures::try_join!(
            self.settings_and_integrations(user),
            self.get_model(user, model_id),
            self.thread_with_project(user, thread_id),
            self.enabled_skills(user),
            self.query_mcp_servers(user, true),
            self.history(user, thread_id),
        )?;
        Ok(SendContext {
            settings,
            integrations,
            model,
            thread,
            project,
            sibling_count,
            skills,
            mcp_servers: mcp,
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
