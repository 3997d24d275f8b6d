//! The `[auth]` section: who a request acts for.

use serde::Deserialize;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    #[serde(default)]
    pub mode: AuthMode,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthMode {
    /// Every request acts as the one local user; allowed only on a loopback address.
    SingleUser,
    /// Every request needs a bearer token.
    #[default]
    Tokens,
}
