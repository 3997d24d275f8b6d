//! The OAuth grant of each user's MCP server: its authorization server, the client identity there
//! and the tokens, as one text the caller shapes, sealed with the store's secret box like the MCP
//! servers' other secrets (without a box it is refused). A grant goes with its server or its user.
//! Beside it, unsealed, the tools the server last listed under it, which a send offers while the
//! grant is dead so that calling one asks the user to authorize the server again.

use crate::connect::Store;
use crate::error::Result;
use crate::statement::Sql;
use crate::util::{Cols, check_len, keyed_row};

/// A sealed grant is a few kilobytes; the bound keeps a confused caller from storing megabytes.
const MAX_SEALED_GRANT: usize = 64 * 1024;
/// A tool list is what the hub keeps of one server (its tool count is capped); past this it is not
/// kept, and a dead grant leaves the server with a note instead of its tools.
const MAX_KNOWN_TOOLS: usize = 512 * 1024;

impl Store {
    /// Keeps the grant of `user_id` for `server_id`, sealed, replacing the one before.
    pub async fn put_mcp_grant(&self, user_id: &str, server_id: &str, grant: &str) -> Result<()> {
        let sealed = self.seal_secret(grant)?;
        check_len("sealed grant", &sealed, MAX_SEALED_GRANT)?;
        "INSERT INTO mcp_oauth_grants (user_id, server_id, sealed, updated_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (user_id, server_id) DO UPDATE SET sealed = excluded.sealed, \
         updated_at = excluded.updated_at"
            .with_values((user_id, server_id, &sealed, self.now_ms()))
            .execute(&self.writer, "mcp_grants.put_mcp_grant")
            .await?;
        Ok(())
    }

    /// The grant, opened.
    pub async fn get_mcp_grant(&self, user_id: &str, server_id: &str) -> Result<Option<String>> {
        let sealed = self
            .grant_column("sealed", user_id, server_id, "mcp_grants.get_mcp_grant")
            .await?;
        sealed.map(|sealed| self.open_secret(&sealed)).transpose()
    }

    /// The servers of `user_id` that have a grant, without opening any.
    pub async fn mcp_grant_server_ids(&self, user_id: &str) -> Result<Vec<String>> {
        let rows = "SELECT server_id FROM mcp_oauth_grants WHERE user_id = $1 ORDER BY server_id"
            .with_values((user_id,))
            .fetch_all(&self.pool, "mcp_grants.mcp_grant_server_ids")
            .await?;
        rows.iter().map(|row| row.text(0)).collect()
    }

    /// Forgets the grant; forgetting one that is not there is not an error.
    pub async fn delete_mcp_grant(&self, user_id: &str, server_id: &str) -> Result<()> {
        "DELETE FROM mcp_oauth_grants WHERE user_id = $1 AND server_id = $2"
            .with_values((user_id, server_id))
            .execute(&self.writer, "mcp_grants.delete_mcp_grant")
            .await?;
        Ok(())
    }

    /// Keeps the tools the server listed under the user's grant (a JSON array the caller shapes);
    /// nothing is kept without a grant. The grant's sealed part is left as it is, so this never
    /// races a renewal's rotated refresh token.
    pub async fn put_mcp_known_tools(&self, user_id: &str, server_id: &str, tools: &str) -> Result<()> {
        check_len("known tool list", tools, MAX_KNOWN_TOOLS)?;
        "UPDATE mcp_oauth_grants SET known_tools = $3 WHERE user_id = $1 AND server_id = $2"
            .with_values((user_id, server_id, tools))
            .execute(&self.writer, "mcp_grants.put_mcp_known_tools")
            .await?;
        Ok(())
    }

    /// The tools the server last listed under the user's grant, if any were kept.
    pub async fn mcp_known_tools(&self, user_id: &str, server_id: &str) -> Result<Option<String>> {
        self.grant_column("known_tools", user_id, server_id, "mcp_grants.mcp_known_tools")
            .await
    }

    /// One text column of the user's grant row for the server; `None` without a grant (or when the
    /// column is empty).
    async fn grant_column(
        &self,
        column: &'static str,
        user_id: &str,
        server_id: &str,
        op: &'static str,
    ) -> Result<Option<String>> {
        let row = keyed_row(
            self,
            column,
            "mcp_oauth_grants",
            "server_id",
            user_id,
            server_id,
            op,
        )
        .await?;
        Ok(row.map(|row| row.opt_text(0)).transpose()?.flatten())
    }
}
