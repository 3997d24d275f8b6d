//! A user's setup (settings, integration status, models, enabled skills and MCP servers), kept in
//! memory between sends.
//!
//! Every send reads the whole setup, but it changes rarely. Triggers move a per-owner counter in
//! `config_versions` on any write to those tables, so a send reads two counters (the user's and the
//! system models') in one small query and reuses the cached setup while they hold. Because the
//! counters live in the database, a change made through another gateway instance, the CLI or by hand
//! is seen by the next send everywhere; nothing depends on this process having made the write.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use promptgate_core::settings::{IntegrationStatus, Model, Skill, UserSettings};

use crate::SYSTEM_OWNER;
use crate::connect::Store;
use crate::error::Result;
use crate::types::{McpSecrets, McpServer};
use crate::util::Cols;

/// How many users' setups one process keeps; past this the cache starts over (a miss costs only the
/// reads it saves).
const CACHED_USERS: usize = 10_000;

/// What a send reads from the user's setup.
#[derive(Debug)]
pub struct UserSetup {
    pub settings: UserSettings,
    pub integrations: IntegrationStatus,
    /// Every model the user can pick (system models shadowed by the user's own of the same id).
    pub models: Vec<Model>,
    /// Enabled skills only.
    pub skills: Vec<Skill>,
    /// Enabled MCP servers with what is needed to connect to them.
    pub mcp_servers: Vec<(McpServer, McpSecrets)>,
}

impl UserSetup {
    pub fn model(&self, id: &str) -> Option<&Model> {
        self.models.iter().find(|m| m.id == id)
    }
}

/// The counters a cached setup was read under: the user's and the system owner's.
type Versions = (i64, i64);

#[derive(Default)]
pub(crate) struct SetupCache {
    entries: Mutex<HashMap<String, (Versions, Arc<UserSetup>)>>,
}

impl SetupCache {
    fn get(&self, user: &str, versions: Versions) -> Option<Arc<UserSetup>> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        match entries.get(user) {
            Some((seen, setup)) if *seen == versions => Some(Arc::clone(setup)),
            _ => None,
        }
    }

    fn put(&self, user: &str, versions: Versions, setup: Arc<UserSetup>) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= CACHED_USERS && !entries.contains_key(user) {
            entries.clear();
        }
        entries.insert(user.to_owned(), (versions, setup));
    }
}

impl Store {
    /// The user's setup as of now: from memory when its counters have not moved, else read afresh.
    pub async fn user_setup(&self, user: &str) -> Result<Arc<UserSetup>> {
        // The counters are read before the setup: a write that lands in between moves them past
        // what is cached here, so the next send reads again instead of keeping a stale setup.
        let versions = self.config_versions(user).await?;
        if let Some(setup) = self.setups.get(user, versions) {
            return Ok(setup);
        }
        let ((settings, integrations), models, skills, mcp_servers) = futures::try_join!(
            self.settings_and_integrations(user),
            self.list_models(user),
            self.enabled_skills(user),
            self.query_mcp_servers(user, true),
        )?;
        let setup = Arc::new(UserSetup {
            settings,
            integrations,
            models,
            skills,
            mcp_servers,
        });
        self.setups.put(user, versions, Arc::clone(&setup));
        Ok(setup)
    }

    async fn config_versions(&self, user: &str) -> Result<Versions> {
        let rows = sqlx::query("SELECT owner, version FROM config_versions WHERE owner IN ($1, $2)")
            .bind(user)
            .bind(SYSTEM_OWNER)
            .fetch_all(&self.pool)
            .await?;
        let mut versions = (0, 0);
        for row in &rows {
            if row.text(0)? == SYSTEM_OWNER {
                versions.1 = row.int(1)?;
            } else {
                versions.0 = row.int(1)?;
            }
        }
        Ok(versions)
    }
}
