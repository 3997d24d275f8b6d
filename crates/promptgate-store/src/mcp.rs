//! MCP server definitions. Header values and the bearer token are write-only: the API type only says
//! which are set; [`Store::mcp_server_secrets`] is for the code that connects. They are stored sealed
//! (see `secrets`); header names stay readable so listing a server needs no key. The OAuth client
//! a user may give with a server keeps its id in clear and its secret sealed (refused without a key).

use sqlx::any::AnyRow;

use crate::connect::{Backend, Store};
use crate::error::{Result, StoreError};
use crate::observed::Observed;
use crate::statement::Sql;
use crate::types::{McpOAuthClient, McpSecrets, McpServer, NewMcpServer};
use crate::util::{Cols, check_len, check_name, delete_owned, flag, new_id, owned_row, owned_rows};

pub(crate) const MCP_COLS: &str = "id, name, url, enabled, headers, bearer_token, created_at, secrets_sealed, \
     oauth_client_id, oauth_client_secret";
const MAX_URL: usize = 2_048;
const MAX_HEADERS: usize = 32;
const MAX_HEADER_VALUE: usize = 8 * 1024;
/// OAuth client ids and secrets are short; a Client ID Metadata Document URL is the longest id.
const MAX_OAUTH_CLIENT_ID: usize = 2_048;
const MAX_OAUTH_CLIENT_SECRET: usize = 1_024;

/// The server as shown to clients, from one row; its secrets too (opened) when `open` is set.
/// Showing a server needs no key: header names are stored in clear.
fn mcp_from(store: &Store, row: &AnyRow, open: bool) -> Result<(McpServer, McpSecrets)> {
    let (headers, bearer_token) = if open {
        store.open_mcp_secrets(&row.text(4)?, row.opt_text(5)?, row.flag(7)?)?
    } else {
        let headers: std::collections::BTreeMap<String, String> =
            crate::util::from_json("MCP headers", &row.text(4)?)?;
        (headers, row.opt_text(5)?)
    };
    let server = McpServer {
        id: row.text(0)?,
        name: row.text(1)?,
        url: row.text(2)?,
        enabled: row.flag(3)?,
        header_names: headers.keys().cloned().collect(),
        has_bearer_token: bearer_token.is_some(),
        created_at: row.int(6)?,
        oauth_client_id: row.opt_text(8)?,
        oauth_client_secret_set: row.opt_text(9)?.is_some(),
    };
    if !open {
        return Ok((server, McpSecrets::default()));
    }
    Ok((
        server,
        McpSecrets {
            headers,
            bearer_token,
        },
    ))
}

fn check_server(s: &NewMcpServer) -> Result<()> {
    check_name("MCP server name", &s.name, 200)?;
    check_len("MCP server url", &s.url, MAX_URL)?;
    if !(s.url.starts_with("http://") || s.url.starts_with("https://")) {
        return Err(StoreError::Invalid(
            "MCP server url must start with http:// or https://".to_owned(),
        ));
    }
    if s.headers.len() > MAX_HEADERS {
        return Err(StoreError::Invalid(format!("at most {MAX_HEADERS} MCP headers")));
    }
    for (name, value) in &s.headers {
        let name_ok = !name.is_empty()
            && name.len() <= 128
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !name_ok {
            return Err(StoreError::Invalid(format!(
                "{name:?} is not a valid header name"
            )));
        }
        if value.len() > MAX_HEADER_VALUE || value.bytes().any(|b| b == b'\r' || b == b'\n') {
            return Err(StoreError::Invalid(format!(
                "the value of header {name} is not valid"
            )));
        }
    }
    check_len(
        "MCP bearer token",
        s.bearer_token.as_deref().unwrap_or(""),
        MAX_HEADER_VALUE,
    )?;
    check_oauth_client(s)
}

/// The OAuth client given with a server: printable ASCII within bounds, a secret only with its id.
/// The one rule for it: the messages name the API's fields, as the API answers with them.
fn check_oauth_client(s: &NewMcpServer) -> Result<()> {
    let printable = |v: &str| !v.is_empty() && v.bytes().all(|b| b.is_ascii_graphic() || b == b' ');
    if let Some(id) = &s.oauth_client_id
        && (id.len() > MAX_OAUTH_CLIENT_ID || !printable(id))
    {
        return Err(StoreError::Invalid(format!(
            "oauth_client_id must be 1 to {MAX_OAUTH_CLIENT_ID} printable ASCII characters"
        )));
    }
    if let Some(secret) = &s.oauth_client_secret {
        if s.oauth_client_id.is_none() {
            return Err(StoreError::Invalid(
                "oauth_client_secret needs oauth_client_id".to_owned(),
            ));
        }
        if secret.len() > MAX_OAUTH_CLIENT_SECRET || !printable(secret) {
            return Err(StoreError::Invalid(format!(
                "oauth_client_secret must be 1 to {MAX_OAUTH_CLIENT_SECRET} printable ASCII characters"
            )));
        }
    }
    Ok(())
}

fn shown(id: String, s: &NewMcpServer, created_at: i64) -> McpServer {
    McpServer {
        id,
        name: s.name.clone(),
        url: s.url.clone(),
        enabled: s.enabled,
        header_names: s.headers.keys().cloned().collect(),
        has_bearer_token: s.bearer_token.is_some(),
        created_at,
        oauth_client_id: s.oauth_client_id.clone(),
        oauth_client_secret_set: s.oauth_client_secret.is_some(),
    }
}

impl Store {
    /// Registers a server, with no limit on how many the user has.
    pub async fn create_mcp_server(&self, user: &str, s: &NewMcpServer) -> Result<McpServer> {
        self.create_mcp_server_within(user, s, usize::MAX)
            .await?
            .ok_or(StoreError::NotFound)
    }

    /// Registers a server unless the user already has `limit` of them (`Ok(None)` then). Two
    /// registrations racing for the last place cannot both take it: on Postgres the user's row is
    /// locked first; on SQLite the insert and its count are one statement under the write lock.
    pub async fn create_mcp_server_within(
        &self,
        user: &str,
        s: &NewMcpServer,
        limit: usize,
    ) -> Result<Option<McpServer>> {
        check_server(s)?;
        let stored = self.seal_mcp_secrets(&s.headers, s.bearer_token.as_deref())?;
        let client_secret = self.seal_client_secret(s)?;
        let id = new_id();
        let now = self.now_ms();
        let mut tx = self.begin_writing_first().await?;
        if self.backend() == Backend::Postgres {
            "SELECT id FROM users WHERE id = $1 FOR UPDATE"
                .with_values((user,))
                .fetch_optional(&mut *tx, "mcp.lock_user")
                .await?;
        }
        let done = "INSERT INTO mcp_servers (id, user_id, name, url, enabled, headers, bearer_token, \
                    created_at, updated_at, secrets_sealed, oauth_client_id, oauth_client_secret) \
                    SELECT $1, id, $3, $4, $5, $6, $7, $8, $8, $9, $11, $12 FROM users WHERE id = $2 \
                    AND (SELECT COUNT(*) FROM mcp_servers WHERE user_id = $2) < $10"
            .with_values((
                &id,
                user,
                &s.name,
                &s.url,
                flag(s.enabled),
                &stored.headers_json,
                stored.bearer_token.as_deref(),
                now,
                flag(stored.sealed),
                i64::try_from(limit).unwrap_or(i64::MAX),
                s.oauth_client_id.as_deref(),
                client_secret.as_deref(),
            ))
            .execute(&mut *tx, "mcp.create_mcp_server")
            .await?;
        if done.rows_affected() == 0 {
            let known = "SELECT id FROM users WHERE id = $1"
                .with_values((user,))
                .fetch_optional(&mut *tx, "mcp.user_exists")
                .await?;
            return match known {
                Some(_) => Ok(None),
                None => Err(StoreError::NotFound),
            };
        }
        tx.commit().observed("transaction.commit").await?;
        self.setup_changed(user);
        Ok(Some(shown(id, s, now)))
    }

    /// In creation order; `enabled_only` for what a send connects to, and only then with the
    /// secrets opened (a listing shows none).
    pub(crate) async fn query_mcp_servers(
        &self,
        user: &str,
        enabled_only: bool,
    ) -> Result<Vec<(McpServer, McpSecrets)>> {
        let rows = owned_rows(
            self,
            MCP_COLS,
            "mcp_servers",
            user,
            enabled_only,
            "mcp.query_mcp_servers",
        )
        .await?;
        rows.iter().map(|row| mcp_from(self, row, enabled_only)).collect()
    }

    /// In creation order, without secrets.
    pub async fn list_mcp_servers(&self, user: &str) -> Result<Vec<McpServer>> {
        let all = self.query_mcp_servers(user, false).await?;
        Ok(all.into_iter().map(|(server, _)| server).collect())
    }

    async fn mcp_row(&self, user: &str, id: &str, open: bool) -> Result<Option<(McpServer, McpSecrets)>> {
        let row = owned_row(self, MCP_COLS, "mcp_servers", user, id, "mcp.mcp_row").await?;
        row.as_ref().map(|row| mcp_from(self, row, open)).transpose()
    }

    pub async fn get_mcp_server(&self, user: &str, id: &str) -> Result<Option<McpServer>> {
        Ok(self.mcp_row(user, id, false).await?.map(|(server, _)| server))
    }

    /// Replaces everything, secrets included (headers or token not sent again are removed).
    pub async fn update_mcp_server(&self, user: &str, id: &str, s: &NewMcpServer) -> Result<McpServer> {
        check_server(s)?;
        let stored = self.seal_mcp_secrets(&s.headers, s.bearer_token.as_deref())?;
        let client_secret = self.seal_client_secret(s)?;
        let row = "UPDATE mcp_servers SET name = $3, url = $4, enabled = $5, headers = $6, \
                   bearer_token = $7, updated_at = $8, secrets_sealed = $9, oauth_client_id = $10, \
                   oauth_client_secret = $11 WHERE user_id = $1 AND id = $2 RETURNING created_at"
            .with_values((
                user,
                id,
                &s.name,
                &s.url,
                flag(s.enabled),
                &stored.headers_json,
                stored.bearer_token.as_deref(),
                self.now_ms(),
                flag(stored.sealed),
                s.oauth_client_id.as_deref(),
                client_secret.as_deref(),
            ))
            .fetch_optional(&self.writer, "mcp.update_mcp_server")
            .await?;
        self.setup_changed(user);
        match row {
            Some(row) => Ok(shown(id.to_owned(), s, row.int(0)?)),
            None => Err(StoreError::NotFound),
        }
    }

    pub async fn delete_mcp_server(&self, user: &str, id: &str) -> Result<()> {
        let deleted = delete_owned(self, "mcp_servers", user, id).await;
        self.setup_changed(user);
        deleted
    }

    /// Header values and bearer token for connecting; NotFound when the server is not the user's.
    pub async fn mcp_server_secrets(&self, user: &str, id: &str) -> Result<McpSecrets> {
        match self.mcp_row(user, id, true).await? {
            Some((_, secrets)) => Ok(secrets),
            None => Err(StoreError::NotFound),
        }
    }

    /// The OAuth client the user gave with the server, its secret opened; `None` when they gave
    /// none. NotFound when the server is not the user's.
    pub async fn mcp_server_oauth_client(&self, user: &str, id: &str) -> Result<Option<McpOAuthClient>> {
        let cols = "oauth_client_id, oauth_client_secret";
        let row = owned_row(self, cols, "mcp_servers", user, id, "mcp.mcp_server_oauth_client")
            .await?
            .ok_or(StoreError::NotFound)?;
        let Some(client_id) = row.opt_text(0)? else {
            return Ok(None);
        };
        let client_secret = row
            .opt_text(1)?
            .map(|sealed| self.open_secret(&sealed))
            .transpose()?;
        Ok(Some(McpOAuthClient {
            client_id,
            client_secret,
        }))
    }

    /// The client secret of `s`, sealed (refused without a key, as every sealed-only secret).
    fn seal_client_secret(&self, s: &NewMcpServer) -> Result<Option<String>> {
        s.oauth_client_secret
            .as_deref()
            .map(|secret| self.seal_secret(secret))
            .transpose()
    }
}
