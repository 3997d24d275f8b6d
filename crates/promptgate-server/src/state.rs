//! What every handler can reach.

use std::ops::Deref;
use std::sync::Arc;

use promptgate_service::Service;

use crate::config::Config;

/// The id of the one user in single-user mode.
pub const LOCAL_USER_ID: &str = "local";

/// The server's shared parts. axum clones the state for the router and for every extractor that
/// asks for it, several times per request, so a clone is one reference count, not one per field.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

pub struct Shared {
    pub config: Arc<Config>,
    /// The use cases: sends and completions, and the user's records.
    pub service: Service,
}

impl AppState {
    pub fn new(shared: Shared) -> Self {
        Self(Arc::new(shared))
    }
}

impl Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}
