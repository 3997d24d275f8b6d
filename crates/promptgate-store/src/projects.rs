//! Projects and the threads grouped in them.

use promptgate_core::settings::Project;
use sqlx::any::AnyRow;

use crate::connect::Store;
use crate::error::{Result, StoreError};
use crate::observed::Observed;
use crate::search::search_terms;
use crate::statement::Sql;
use crate::types::{NewProject, NewThread, Thread, ThreadUpdate};
use crate::util::{
    Cols, check_name, check_opt_len, client_id_or_new, delete_owned, new_id, one_row, owned_row,
};

const MAX_PROJECT_NAME: usize = 200;
const MAX_INSTRUCTIONS: usize = 32 * 1024;
const MAX_TITLE: usize = 500;
pub(crate) const THREAD_COLS: &str = "id, project_id, title, created_at, updated_at";

fn project_from(row: &AnyRow) -> Result<Project> {
    Ok(Project {
        id: row.text(0)?,
        name: row.text(1)?,
        instructions: row.opt_text(2)?,
    })
}

pub(crate) fn thread_from(row: &AnyRow, at: usize) -> Result<Thread> {
    Ok(Thread {
        id: row.text(at)?,
        project_id: row.opt_text(at + 1)?,
        title: row.opt_text(at + 2)?,
        created_at: row.int(at + 3)?,
        updated_at: row.int(at + 4)?,
    })
}

fn check_project(p: &NewProject) -> Result<()> {
    check_name("project name", &p.name, MAX_PROJECT_NAME)?;
    check_opt_len(
        "project instructions",
        p.instructions.as_deref(),
        MAX_INSTRUCTIONS,
    )
}

/// The columns a new thread is written with.
pub(crate) const THREAD_INSERT_COLS: &str =
    "user_id, id, project_id, title, title_terms, created_at, updated_at";

/// A new thread's id and searchable title, checked once.
pub(crate) struct ThreadRow {
    pub(crate) id: String,
    pub(crate) title_terms: String,
}

impl ThreadRow {
    pub(crate) fn of(t: &NewThread) -> Result<ThreadRow> {
        let id = client_id_or_new("thread", t.id.as_deref())?;
        check_opt_len("thread title", t.title.as_deref(), MAX_TITLE)?;
        Ok(ThreadRow {
            id,
            title_terms: search_terms(t.title.as_deref().unwrap_or("")),
        })
    }

    /// The thread as created at `now` from `t`, the thread this row was made of.
    pub(crate) fn stored(&self, t: &NewThread, now: i64) -> Thread {
        Thread {
            id: self.id.clone(),
            project_id: t.project_id.clone(),
            title: t.title.clone(),
            created_at: now,
            updated_at: now,
        }
    }
}

impl Store {
    pub async fn create_project(&self, user: &str, p: &NewProject) -> Result<Project> {
        check_project(p)?;
        let project = Project {
            id: new_id(),
            name: p.name.clone(),
            instructions: p.instructions.clone(),
        };
        let done = "INSERT INTO projects (id, user_id, name, instructions, created_at, updated_at) \
                    SELECT $1, id, $2, $3, $4, $4 FROM users WHERE id = $5"
            .with_values((
                &project.id,
                &project.name,
                project.instructions.as_deref(),
                self.now_ms(),
                user,
            ))
            .execute(&self.writer, "projects.create_project")
            .await?;
        one_row(done.rows_affected())?;
        Ok(project)
    }

    /// Oldest first.
    pub async fn list_projects(&self, user: &str) -> Result<Vec<Project>> {
        let rows = "SELECT id, name, instructions FROM projects WHERE user_id = $1 ORDER BY created_at, id"
            .with_values((user,))
            .fetch_all(&self.pool, "projects.list_projects")
            .await?;
        rows.iter().map(project_from).collect()
    }

    pub async fn get_project(&self, user: &str, id: &str) -> Result<Option<Project>> {
        let cols = "id, name, instructions";
        let row = owned_row(self, cols, "projects", user, id, "projects.get_project").await?;
        row.as_ref().map(project_from).transpose()
    }

    /// Replaces name and instructions.
    pub async fn update_project(&self, user: &str, id: &str, p: &NewProject) -> Result<Project> {
        check_project(p)?;
        let done = "UPDATE projects SET name = $3, instructions = $4, updated_at = $5 \
                    WHERE user_id = $1 AND id = $2"
            .with_values((user, id, &p.name, p.instructions.as_deref(), self.now_ms()))
            .execute(&self.writer, "projects.update_project")
            .await?;
        one_row(done.rows_affected())?;
        Ok(Project {
            id: id.to_owned(),
            name: p.name.clone(),
            instructions: p.instructions.clone(),
        })
    }

    /// The project's threads survive, without a project.
    pub async fn delete_project(&self, user: &str, id: &str) -> Result<()> {
        delete_owned(self, "projects", user, id).await
    }

    /// Conflict when the user already has a thread with this id; NotFound when the project (or the
    /// user) does not exist.
    pub async fn create_thread(&self, user: &str, t: &NewThread) -> Result<Thread> {
        let thread = ThreadRow::of(t)?;
        let now = self.now_ms();
        let done = sqlx::AssertSqlSafe(format!(
            "INSERT INTO threads ({THREAD_INSERT_COLS}) \
             SELECT id, $2, $3, $4, $6, $5, $5 FROM users WHERE id = $1 \
             AND ($3 IS NULL OR EXISTS (SELECT 1 FROM projects p WHERE p.id = $3 AND p.user_id = $1))"
        ))
        .with_values((
            user,
            &thread.id,
            t.project_id.as_deref(),
            t.title.as_deref(),
            now,
            &thread.title_terms,
        ))
        .execute(&self.writer, "projects.create_thread")
        .await
        .map_err(|e| match StoreError::from(e) {
            StoreError::Conflict(_) => StoreError::Conflict(format!("thread {:?} exists", thread.id)),
            other => other,
        })?;
        one_row(done.rows_affected())?;
        Ok(thread.stored(t, now))
    }

    pub async fn get_thread(&self, user: &str, id: &str) -> Result<Option<Thread>> {
        let row = owned_row(self, THREAD_COLS, "threads", user, id, "projects.get_thread").await?;
        row.as_ref().map(|r| thread_from(r, 0)).transpose()
    }

    /// Applies the fields present in `u`; NotFound when the thread, or the project it moves to, is
    /// not the user's.
    pub async fn update_thread(&self, user: &str, id: &str, u: &ThreadUpdate) -> Result<Thread> {
        if let Some(title) = &u.title {
            check_opt_len("thread title", title.as_deref(), MAX_TITLE)?;
        }
        // Only the named columns are written, so a move does not touch the title's search index.
        // $4 is the target project (checked to be the user's); $5 and $6 the new title and its search
        // terms when a title is given.
        let mut sets = vec!["updated_at = $3"];
        if u.project_id.is_some() {
            sets.push("project_id = $4");
        }
        if u.title.is_some() {
            sets.push("title = $5, title_terms = $6");
        }
        let sql = format!(
            "UPDATE threads SET {} WHERE user_id = $1 AND id = $2 \
             AND ($4 IS NULL OR EXISTS (SELECT 1 FROM projects p WHERE p.id = $4 AND p.user_id = $1)) \
             RETURNING {THREAD_COLS}",
            sets.join(", ")
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(user)
            .bind(id)
            .bind(self.now_ms())
            .bind(u.project_id.clone().flatten());
        if let Some(title) = &u.title {
            query = query
                .bind(title.clone())
                .bind(search_terms(title.as_deref().unwrap_or("")));
        }
        let row = query
            .fetch_optional(&self.writer)
            .observed("projects.update_thread")
            .await?;
        match row {
            Some(row) => thread_from(&row, 0),
            None => Err(StoreError::NotFound),
        }
    }

    /// Deletes the thread with its messages and artifacts.
    pub async fn delete_thread(&self, user: &str, id: &str) -> Result<()> {
        delete_owned(self, "threads", user, id).await
    }

    /// The other threads of a project as `(id, title)`, most recently updated first.
    pub async fn sibling_threads(
        &self,
        user: &str,
        project_id: &str,
        exclude: &str,
    ) -> Result<Vec<(String, Option<String>)>> {
        let rows = "SELECT id, title FROM threads WHERE user_id = $1 AND project_id = $2 AND id <> $3 \
                    ORDER BY updated_at DESC, id DESC"
            .with_values((user, project_id, exclude))
            .fetch_all(&self.pool, "projects.sibling_threads")
            .await?;
        rows.iter().map(|r| Ok((r.text(0)?, r.opt_text(1)?))).collect()
    }
}
