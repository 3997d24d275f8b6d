//! HTML artifacts the `render_html` tool stores, one per call, read back by their owner only; the
//! store is also the tools' `ArtifactStore`.

use async_trait::async_trait;
use promptgate_core::storage::{Artifact, ArtifactStore, NewArtifact, StorageError};
use sqlx::any::AnyRow;

use crate::connect::Store;
use crate::error::{Result, StoreError};
use crate::statement::Sql;
use crate::util::{Cols, check_name, new_id, one_row, owned_row};

const MAX_TITLE: usize = 200;
/// A rendered page, not a site: bounded so one tool call cannot fill the database.
const MAX_HTML_BYTES: usize = 2 * 1024 * 1024;

fn artifact_from(row: &AnyRow) -> Result<Artifact> {
    Ok(Artifact {
        id: row.text(0)?,
        thread_id: row.opt_text(1)?,
        title: row.text(2)?,
        html: row.text(3)?,
        created_at: row.int(4)?,
    })
}

impl Store {
    /// Stores an HTML artifact, optionally attached to a thread (deleted with it). NotFound when the
    /// thread is not the user's.
    pub async fn create_artifact(
        &self,
        user: &str,
        thread_id: Option<&str>,
        title: &str,
        html: &str,
    ) -> Result<Artifact> {
        check_name("artifact title", title, MAX_TITLE)?;
        if html.len() > MAX_HTML_BYTES {
            return Err(StoreError::Invalid(format!(
                "artifact html is larger than {MAX_HTML_BYTES} bytes"
            )));
        }
        let artifact = Artifact {
            id: new_id(),
            thread_id: thread_id.map(str::to_owned),
            title: title.to_owned(),
            html: html.to_owned(),
            created_at: self.now_ms(),
        };
        let done = "INSERT INTO artifacts (id, user_id, thread_id, title, html, created_at) \
                    SELECT $1, id, $3, $4, $5, $6 FROM users WHERE id = $2 \
                    AND ($3 IS NULL OR EXISTS (SELECT 1 FROM threads t WHERE t.user_id = $2 AND t.id = $3))"
            .with_values((&artifact.id, user, thread_id, title, html, artifact.created_at))
            .execute(&self.writer, "artifacts.create_artifact")
            .await?;
        one_row(done.rows_affected())?;
        Ok(artifact)
    }

    pub async fn get_artifact(&self, user: &str, id: &str) -> Result<Option<Artifact>> {
        let cols = "id, thread_id, title, html, created_at";
        let row = owned_row(self, cols, "artifacts", user, id, "artifacts.get_artifact").await?;
        row.as_ref().map(artifact_from).transpose()
    }
}

#[async_trait]
impl ArtifactStore for Store {
    async fn create_artifact(
        &self,
        user_id: &str,
        artifact: NewArtifact<'_>,
    ) -> Result<Artifact, StorageError> {
        let NewArtifact {
            thread_id,
            title,
            html,
        } = artifact;
        Ok(Store::create_artifact(self, user_id, thread_id, title, html).await?)
    }
}
