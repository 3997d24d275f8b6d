use promptgate_core::settings::Project;

use crate::connect::Store;
use crate::error::Result;
use crate::messages::message_from;
use crate::observed::Observed;
use crate::projects::thread_from;
use crate::types::{Message, SendContext, Thread, current_conversation};
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
        // A send made right after a query waited in vain for the database fails at once instead of
        // waiting again (see `reach`).
        if self.reach.known_unreachable() {
            return Err(crate::reach::Reachability::refusal());
        }
        let loaded = futures::try_join!(self.user_setup(user), async {
            match thread_id {
                Some(thread_id) => self.thread_with_history(user, thread_id).await,
                None => Ok((None, None, 0, Vec::new())),
            }
        },);
        self.reach.saw(&loaded);
        let (setup, (thread, project, sibling_count, history)) = loaded?;
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

    /// The thread, its project, how many other threads that project has, and the thread's current
    /// conversation, in one statement: a send reads them all before its first byte, and a round
    /// trip per part would be paid by every send. The thread's columns repeat on each message row;
    /// the sibling count is a subquery of its own, computed once whatever the history's length.
    async fn thread_with_history(
        &self,
        user: &str,
        thread_id: &str,
    ) -> Result<(Option<Thread>, Option<Project>, u32, Vec<Message>)> {
        let rows = sqlx::query(
            "WITH t AS (SELECT user_id, id, project_id, title, created_at, updated_at FROM threads \
             WHERE user_id = $1 AND id = $2) \
             SELECT t.id, t.project_id, t.title, t.created_at, t.updated_at, p.id, p.name, \
             p.instructions, (SELECT COUNT(*) FROM threads s JOIN t o ON s.user_id = o.user_id \
             AND s.project_id = o.project_id AND s.id <> o.id), \
             m.id, m.thread_id, m.role, m.parts, m.metadata, m.status, m.created_at, m.seq \
             FROM t LEFT JOIN projects p ON p.id = t.project_id AND p.user_id = t.user_id \
             LEFT JOIN messages m ON m.user_id = t.user_id AND m.thread_id = t.id ORDER BY m.seq",
        )
        .bind(user)
        .bind(thread_id)
        .fetch_all(&self.pool)
        .observed("context.thread_with_history")
        .await?;
        let Some(first) = rows.first() else {
            return Ok((None, None, 0, Vec::new()));
        };
        let thread = thread_from(first, 0)?;
        let project = match first.opt_text(5)? {
            Some(id) => Some(Project {
                id,
                name: first.text(6)?,
                instructions: first.opt_text(7)?,
            }),
            None => None,
        };
        let siblings = u32::try_from(first.int(8)?).unwrap_or(u32::MAX);
        let mut history = Vec::with_capacity(rows.len());
        for row in &rows {
            // A thread without messages comes back as one row whose message columns are NULL.
            if row.opt_text(9)?.is_some() {
                history.push(message_from(row, 9)?);
            }
        }
        Ok((Some(thread), project, siblings, current_conversation(history)))
    }
}
