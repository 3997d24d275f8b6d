//! What every handler can reach.

use std::sync::Arc;

use promptgate_store::Store;
use promptgate_turn::send::TurnService;

use crate::config::Config;

/// The id of the one user in single-user mode.
pub const LOCAL_USER_ID: &str = "local";

#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    pub config: Arc<Config>,
    pub turns: TurnService,
    /// Authorizations started but not yet called back.
    pub oauth: crate::routes::oauth::PendingAuthorizations,
}
