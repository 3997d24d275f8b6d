//! The key that seals secrets at rest: where this deployment finds it.
//!
//! One key seals everything the gateway keeps secret: OAuth token sets and MCP header values and
//! bearer tokens, in one format (`promptgate_service::deployment::TokenSealer`). Where it comes from:
//!
//! 1. The environment variable named by `[integrations] token_key_env`, or `PROMPTGATE_TOKEN_KEY`
//!    when there is no `[integrations]` section (base64 of 32 bytes).
//! 2. Otherwise, in `single_user` mode with a SQLite database, a key file `promptgate.key` next to
//!    the database file, generated on first start (mode 0600). Someone running the gateway on a
//!    laptop expects MCP servers with tokens to just work, and a key beside the database still
//!    keeps secrets out of dumps, backups of the database alone and anything that reads rows.
//! 3. Otherwise (`tokens` mode, or Postgres) there is no key: the operator of a shared deployment
//!    should hold the key themselves rather than find one generated inside a container. Servers
//!    without secrets work; storing a header or token is refused with a message that says why.
//!
//! At start-up (in the service), with a key, rows written in clear before sealing existed are sealed (after
//! checking that the key opens rows sealed earlier); without one, a database that already holds
//! sealed rows is a start-up error, since every send to those servers would fail.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use promptgate_service::deployment::{SecretsSettings, TokenSealer};

use crate::config::{AuthMode, Config, Env};

/// The variable read when `[integrations]` does not name one.
pub const DEFAULT_KEY_ENV: &str = "PROMPTGATE_TOKEN_KEY";
/// The generated key file's name, in the SQLite database's directory.
pub const KEY_FILE_NAME: &str = "promptgate.key";

/// Where the key came from, for the start-up log and error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    Env(String),
    File(PathBuf),
}

impl std::fmt::Display for KeySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeySource::Env(var) => write!(f, "the variable {var}"),
            KeySource::File(path) => write!(f, "the key file {}", path.display()),
        }
    }
}

/// The variable that holds the sealing key.
pub fn key_variable(config: &Config) -> &str {
    config
        .integrations
        .as_ref()
        .map_or(DEFAULT_KEY_ENV, |i| i.token_key_env.as_str())
}

/// The key file a `single_user` gateway on SQLite uses when no variable is set.
pub fn key_file(config: &Config) -> Option<PathBuf> {
    if config.auth.mode != AuthMode::SingleUser {
        return None;
    }
    let rest = config
        .database_url
        .strip_prefix("sqlite://")
        .or_else(|| config.database_url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or_default();
    if path.is_empty() || path.starts_with(":memory:") {
        return None;
    }
    let dir = Path::new(path).parent().unwrap_or(Path::new("."));
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    Some(dir.join(KEY_FILE_NAME))
}

/// The sealer for secrets at rest, or `None` when this configuration has no key.
pub fn sealer(config: &Config, env: &dyn Env) -> anyhow::Result<Option<(Arc<TokenSealer>, KeySource)>> {
    let var = key_variable(config);
    if let Some(encoded) = env.var(var) {
        let sealer = TokenSealer::from_base64(&encoded).map_err(|e| anyhow::anyhow!("{var}: {e}"))?;
        return Ok(Some((Arc::new(sealer), KeySource::Env(var.to_owned()))));
    }
    let Some(path) = key_file(config) else {
        return Ok(None);
    };
    let encoded = read_or_create_key_file(&path)?;
    let sealer =
        TokenSealer::from_base64(&encoded).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    Ok(Some((Arc::new(sealer), KeySource::File(path))))
}

fn read_or_create_key_file(path: &Path) -> anyhow::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => return Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot read the key file {}", path.display())),
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let key = TokenSealer::generate_key_base64();
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    match options.open(path) {
        Ok(mut file) => {
            use std::io::Write;
            file.write_all(format!("{key}\n").as_bytes())
                .with_context(|| format!("cannot write the key file {}", path.display()))?;
            tracing::info!(path = %path.display(), "generated the key that seals secrets at rest; back it up with the database");
            Ok(key)
        }
        // Another process created it first: use theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the key file {}", path.display())),
        Err(e) => Err(e).with_context(|| format!("cannot create the key file {}", path.display())),
    }
}

/// The key for secrets at rest as the service takes it; the service seals the rows stored in clear
/// and, without a key, refuses a database that holds sealed rows.
pub fn settings(config: &Config, env: &dyn Env) -> anyhow::Result<SecretsSettings> {
    Ok(SecretsSettings {
        key: sealer(config, env)?.map(|(sealer, source)| (sealer, source.to_string())),
        variable: key_variable(config).to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(mode: AuthMode, url: &str) -> Config {
        let mut config = Config::parse(crate::config::EMBEDDED_DEFAULT).unwrap();
        config.auth.mode = mode;
        config.database_url = url.to_owned();
        config
    }

    #[test]
    fn the_key_file_sits_next_to_a_single_user_sqlite_database() {
        let at = |mode, url| key_file(&config(mode, url));
        assert_eq!(
            at(AuthMode::SingleUser, "sqlite://data/promptgate.db?mode=rwc"),
            Some(PathBuf::from("data/promptgate.key"))
        );
        assert_eq!(
            at(AuthMode::SingleUser, "sqlite:///var/lib/pg/store.db"),
            Some(PathBuf::from("/var/lib/pg/promptgate.key"))
        );
        assert_eq!(
            at(AuthMode::SingleUser, "sqlite://store.db"),
            Some(PathBuf::from("./promptgate.key"))
        );
        assert_eq!(at(AuthMode::SingleUser, "sqlite::memory:"), None);
        assert_eq!(at(AuthMode::SingleUser, "postgres://x@127.0.0.1/db"), None);
        assert_eq!(at(AuthMode::Tokens, "sqlite://data/promptgate.db"), None);
    }
}
