//! A user's setup (settings, integration status, models, enabled skills and MCP servers, and which
//! of the user and their keys have a budget), kept in memory between sends.
//!
//! Every send needs the whole setup, but it changes rarely. Triggers move a per-owner counter in
//! `config_versions` on any write to those tables; a cached setup is reused while its counters hold.
//! Asking the database for the counters on every send would still cost a round trip, so a cached
//! setup is trusted without asking for a while, as long as nothing signalled a change:
//!
//! - a write made through this process signals it at once (read-your-writes for the API);
//! - on Postgres, the triggers also `NOTIFY`, and a listener connection ([`crate::listener`]) turns
//!   every write made anywhere (another instance, the CLI, by hand) into a signal within moments.
//!   While that listener is not connected, nothing is trusted: every send asks for the counters;
//! - on SQLite no other process can signal, so a write made by another process on the same file
//!   (the CLI) is seen once the trust runs out ([`SQLITE_RECHECK`]).
//!
//! Trust also runs out on its own ([`LISTENED_RECHECK`]), which bounds how long a listener connection
//! that died without notice could hide a change.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use promptgate_core::settings::{IntegrationStatus, Model, Skill, UserSettings};

use crate::SYSTEM_OWNER;
use crate::budgets::BudgetedSubjects;
use crate::connect::Store;
use crate::error::Result;
use crate::statement::Sql;
use crate::types::{McpSecrets, McpServer};
use crate::util::Cols;

/// How many users' setups one process keeps; past this the cache starts over (a miss costs only the
/// reads it saves).
const CACHED_USERS: usize = 10_000;

/// How long a setup is trusted on SQLite, where only this process's own writes are signalled.
pub const SQLITE_RECHECK: Duration = Duration::from_secs(2);

/// How long a setup is trusted on Postgres while the change listener is connected.
pub const LISTENED_RECHECK: Duration = Duration::from_secs(10);

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
    /// Which of the user and their keys have a budget.
    pub budgeted: BudgetedSubjects,
}

impl UserSetup {
    pub fn model(&self, id: &str) -> Option<&Model> {
        self.models.iter().find(|m| m.id == id)
    }
}

/// The counters a cached setup was read under: the user's and the system owner's.
type Versions = (i64, i64);

/// Where changes made outside this process come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChangeSignals {
    /// Nowhere: trust runs out after a fixed time (SQLite).
    None,
    /// A Postgres listener; trust only while it is connected.
    Listener,
}

struct Cached {
    versions: Versions,
    setup: Arc<UserSetup>,
    /// Until when the setup may be used without asking for the counters.
    trusted_until: Option<Instant>,
}

struct CacheState {
    entries: HashMap<String, Cached>,
    /// Moves on every signal, so a read that a change overtook is not trusted afterwards.
    signals_seen: u64,
    listener_connected: bool,
    recheck: Duration,
}

/// What a send saw before asking the database; decides whether what it read may be trusted.
pub(crate) struct ReadTicket {
    signals_seen: u64,
}

pub(crate) struct SetupCache {
    state: Mutex<CacheState>,
    signals: ChangeSignals,
}

impl SetupCache {
    pub(crate) fn new(signals: ChangeSignals) -> SetupCache {
        let recheck = match signals {
            ChangeSignals::None => SQLITE_RECHECK,
            ChangeSignals::Listener => LISTENED_RECHECK,
        };
        SetupCache {
            state: Mutex::new(CacheState {
                entries: HashMap::new(),
                signals_seen: 0,
                listener_connected: false,
                recheck,
            }),
            signals,
        }
    }

    fn lock(&self) -> MutexGuard<'_, CacheState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The trusted setup, or the ticket to read it under.
    fn trusted(&self, user: &str, now: Instant) -> std::result::Result<Arc<UserSetup>, ReadTicket> {
        let state = self.lock();
        match state.entries.get(user) {
            Some(Cached {
                setup,
                trusted_until: Some(until),
                ..
            }) if now < *until => Ok(Arc::clone(setup)),
            _ => Err(ReadTicket {
                signals_seen: state.signals_seen,
            }),
        }
    }

    /// How long what a read under `ticket` may be trusted; `None` when it may not be.
    fn trust_for(&self, state: &CacheState, ticket: &ReadTicket) -> Option<Duration> {
        let signalled = match self.signals {
            ChangeSignals::None => true,
            ChangeSignals::Listener => state.listener_connected,
        };
        (signalled && ticket.signals_seen == state.signals_seen).then_some(state.recheck)
    }

    /// The cached setup when it was read under these counters (trusted again from now).
    fn still_current(
        &self,
        user: &str,
        versions: Versions,
        ticket: &ReadTicket,
        now: Instant,
    ) -> Option<Arc<UserSetup>> {
        let mut state = self.lock();
        let trust = self.trust_for(&state, ticket);
        let cached = state.entries.get_mut(user)?;
        if cached.versions != versions {
            return None;
        }
        cached.trusted_until = trust.map(|t| now + t);
        Some(Arc::clone(&cached.setup))
    }

    fn put(&self, user: &str, versions: Versions, setup: Arc<UserSetup>, ticket: &ReadTicket, now: Instant) {
        let mut state = self.lock();
        let trusted_until = self.trust_for(&state, ticket).map(|t| now + t);
        if state.entries.len() >= CACHED_USERS && !state.entries.contains_key(user) {
            state.entries.clear();
        }
        state.entries.insert(
            user.to_owned(),
            Cached {
                versions,
                setup,
                trusted_until,
            },
        );
    }

    /// Something `owner` (a user, or the system models' owner) sees in a send has changed.
    pub(crate) fn changed(&self, owner: &str) {
        let mut state = self.lock();
        state.signals_seen += 1;
        if owner == SYSTEM_OWNER {
            distrust_all(&mut state);
        } else if let Some(cached) = state.entries.get_mut(owner) {
            cached.trusted_until = None;
        }
    }

    /// The listener is connected: changes committed from now on will be signalled.
    pub(crate) fn listener_connected(&self) {
        let mut state = self.lock();
        state.listener_connected = true;
        state.signals_seen += 1;
    }

    /// The listener lost its connection: changes may go unsignalled until it is back.
    pub(crate) fn listener_lost(&self) {
        let mut state = self.lock();
        state.listener_connected = false;
        state.signals_seen += 1;
        distrust_all(&mut state);
    }

    fn signalled(&self) -> bool {
        match self.signals {
            ChangeSignals::None => false,
            ChangeSignals::Listener => self.lock().listener_connected,
        }
    }

    pub(crate) fn set_recheck(&self, recheck: Duration) {
        let mut state = self.lock();
        state.recheck = recheck;
        distrust_all(&mut state);
    }
}

fn distrust_all(state: &mut CacheState) {
    for cached in state.entries.values_mut() {
        cached.trusted_until = None;
    }
}

impl Store {
    /// The user's setup as of now: from memory while it is trusted or its counters have not moved,
    /// else read afresh.
    pub async fn user_setup(&self, user: &str) -> Result<Arc<UserSetup>> {
        let ticket = match self.setups.trusted(user, Instant::now()) {
            Ok(setup) => return Ok(setup),
            Err(ticket) => ticket,
        };
        // The counters are read before the setup: a write that lands in between moves them past
        // what is cached here, so a later send reads again instead of keeping a stale setup.
        let versions = self.config_versions(user).await;
        // Often a request's first query: one that waited in vain spares the next ones the wait.
        self.reach.saw(&versions);
        let versions = versions?;
        if let Some(setup) = self.setups.still_current(user, versions, &ticket, Instant::now()) {
            return Ok(setup);
        }
        let ((settings, integrations), models, skills, mcp_servers, budgeted) = futures::try_join!(
            self.settings_and_integrations(user),
            self.list_models(user),
            self.enabled_skills(user),
            self.query_mcp_servers(user, true),
            self.budgeted_subjects(user),
        )?;
        let setup = Arc::new(UserSetup {
            settings,
            integrations,
            models,
            skills,
            mcp_servers,
            budgeted,
        });
        self.setups
            .put(user, versions, Arc::clone(&setup), &ticket, Instant::now());
        Ok(setup)
    }

    /// How long a cached setup is used before its counters are asked for again (tests shorten it to
    /// see another process's SQLite writes sooner).
    pub fn set_setup_recheck(&self, recheck: Duration) {
        self.setups.set_recheck(recheck);
    }

    /// Whether changes made by other processes are signalled right now (Postgres, with its change
    /// listener connected). When not, a cached setup is trusted only briefly (SQLite) or not at all.
    pub fn setup_changes_signalled(&self) -> bool {
        self.setups.signalled()
    }

    /// Called after every write to a table the setup is read from, so this process's next send
    /// sees the write without waiting for any other signal.
    pub(crate) fn setup_changed(&self, owner: &str) {
        self.setups.changed(owner);
    }

    async fn config_versions(&self, user: &str) -> Result<Versions> {
        let rows = "SELECT owner, version FROM config_versions WHERE owner IN ($1, $2)"
            .with_values((user, SYSTEM_OWNER))
            .fetch_all(&self.pool, "setup.config_versions")
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

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> Arc<UserSetup> {
        Arc::new(UserSetup {
            settings: UserSettings::default(),
            integrations: IntegrationStatus::default(),
            models: Vec::new(),
            skills: Vec::new(),
            mcp_servers: Vec::new(),
            budgeted: BudgetedSubjects::default(),
        })
    }

    fn read(cache: &SetupCache, user: &str, now: Instant) -> Option<ReadTicket> {
        cache.trusted(user, now).err()
    }

    #[test]
    fn a_read_is_trusted_until_the_recheck_time() {
        let cache = SetupCache::new(ChangeSignals::None);
        let now = Instant::now();
        let ticket = read(&cache, "u", now).unwrap();
        cache.put("u", (1, 1), setup(), &ticket, now);
        assert!(cache.trusted("u", now + SQLITE_RECHECK / 2).is_ok());
        assert!(cache.trusted("u", now + SQLITE_RECHECK).is_err());
    }

    #[test]
    fn a_change_during_a_read_leaves_it_untrusted() {
        let cache = SetupCache::new(ChangeSignals::None);
        let now = Instant::now();
        let ticket = read(&cache, "u", now).unwrap();
        cache.changed("u");
        cache.put("u", (1, 1), setup(), &ticket, now);
        assert!(cache.trusted("u", now).is_err());
        // The next read confirms the counters and is trusted again.
        let ticket = read(&cache, "u", now).unwrap();
        assert!(cache.still_current("u", (1, 1), &ticket, now).is_some());
        assert!(cache.trusted("u", now).is_ok());
        assert!(
            cache.still_current("u", (2, 1), &ticket, now).is_none(),
            "moved counters mean a fresh read"
        );
    }

    #[test]
    fn a_change_ends_the_trust_of_that_user_only_unless_it_is_the_system_models() {
        let cache = SetupCache::new(ChangeSignals::None);
        let now = Instant::now();
        for user in ["a", "b"] {
            let ticket = read(&cache, user, now).unwrap();
            cache.put(user, (1, 1), setup(), &ticket, now);
        }
        cache.changed("a");
        assert!(cache.trusted("a", now).is_err());
        assert!(cache.trusted("b", now).is_ok());
        cache.changed(SYSTEM_OWNER);
        assert!(cache.trusted("b", now).is_err());
    }

    #[test]
    fn with_a_listener_nothing_is_trusted_while_it_is_disconnected() {
        let cache = SetupCache::new(ChangeSignals::Listener);
        let now = Instant::now();
        let ticket = read(&cache, "u", now).unwrap();
        cache.put("u", (1, 1), setup(), &ticket, now);
        assert!(cache.trusted("u", now).is_err(), "not connected yet");

        let before = read(&cache, "u", now).unwrap();
        cache.listener_connected();
        assert!(cache.still_current("u", (1, 1), &before, now).is_some());
        assert!(
            cache.trusted("u", now).is_err(),
            "a read that began before the listener connected may have missed a change"
        );
        let ticket = read(&cache, "u", now).unwrap();
        assert!(cache.still_current("u", (1, 1), &ticket, now).is_some());
        assert!(cache.trusted("u", now + LISTENED_RECHECK / 2).is_ok());

        cache.listener_lost();
        assert!(cache.trusted("u", now).is_err());
        let ticket = read(&cache, "u", now).unwrap();
        cache.still_current("u", (1, 1), &ticket, now);
        assert!(
            cache.trusted("u", now).is_err(),
            "reads while disconnected are not trusted"
        );
    }
}
