//! What running in a container needs: a health probe that asks the server itself, and a first
//! database connection that waits for the database to come up.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use anyhow::Context;
use promptgate_service::Database;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Where a probe on this machine reaches a server listening on `listen`: an unspecified address
/// (`0.0.0.0`, `::`) is reached over loopback.
pub fn probe_address(listen: SocketAddr) -> SocketAddr {
    let ip = match listen.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, listen.port())
}

/// Asks `GET /readyz` of the server at `address`; Ok when it answers 200 within `timeout`. Written
/// against the socket so the slim image needs no curl.
pub async fn healthcheck(address: SocketAddr, timeout: Duration) -> anyhow::Result<()> {
    let probe = async {
        let mut stream = tokio::net::TcpStream::connect(address)
            .await
            .with_context(|| format!("nothing answers at {address}"))?;
        let request = format!(
            "GET /readyz HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\nUser-Agent: promptgate-healthcheck\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await?;
        let mut head = Vec::new();
        let mut buf = [0u8; 512];
        // The status line is all we need.
        while !head.contains(&b'\n') && head.len() < 4096 {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
        }
        let line = String::from_utf8_lossy(&head);
        let line = line.lines().next().unwrap_or_default().to_owned();
        let status = line.split_whitespace().nth(1).unwrap_or_default();
        anyhow::ensure!(status == "200", "/readyz answered {line:?}");
        Ok(())
    };
    tokio::time::timeout(timeout, probe)
        .await
        .with_context(|| format!("no answer from {address} within {} s", timeout.as_secs()))?
}

/// How long the first connection to a network database is retried: a compose stack starts the
/// gateway while the database may still be initialising.
pub const DATABASE_WAIT: Duration = Duration::from_secs(60);

/// Connects to the database; a network database that refuses is retried with a doubling backoff
/// (0.5 s up to 5 s) until `wait` has passed. SQLite is never retried: its failures are about the
/// file and do not go away by waiting.
pub async fn connect_with_retry(url: &str, wait: Duration) -> anyhow::Result<Database> {
    check_sqlite_file(url)?;
    Ok(Database::connect_with_retry(url, wait).await?)
}

/// A SQLite URL that does not ask for `mode=rwc` must name a file that exists: otherwise a relative
/// path run from another directory would quietly start over with a new, empty database.
pub fn check_sqlite_file(url: &str) -> anyhow::Result<()> {
    let Some(rest) = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
    else {
        return Ok(());
    };
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let modes: Vec<&str> = query
        .split('&')
        .filter_map(|kv| kv.strip_prefix("mode="))
        .collect();
    if path.is_empty() || path == ":memory:" || modes.iter().any(|m| *m == "rwc" || *m == "memory") {
        return Ok(());
    }
    let file = std::path::Path::new(path);
    if file.exists() {
        return Ok(());
    }
    let absolute = std::env::current_dir().map_or_else(|_| file.to_path_buf(), |dir| dir.join(file));
    let dir_note = match absolute.parent() {
        Some(parent) if !parent.exists() => format!(" (nor does its directory {})", parent.display()),
        _ => String::new(),
    };
    anyhow::bail!(
        "the SQLite database {} does not exist{dir_note}. Fix the path (a relative one is resolved from \
         the directory promptgate runs in), or add ?mode=rwc to the URL to create a new database there: \
         sqlite://{path}?mode=rwc",
        absolute.display()
    )
}

/// The database as the start-up log names it: the password hidden, a SQLite file as an absolute path
/// (a relative one depends on the directory the server was started from).
pub fn describe_database(url: &str) -> String {
    if let Some(rest) = url.strip_prefix("sqlite://") {
        let path = rest.split('?').next().unwrap_or_default();
        if !path.is_empty()
            && !path.starts_with('/')
            && let Ok(dir) = std::env::current_dir()
        {
            return format!("sqlite file {}", dir.join(path).display());
        }
        return format!("sqlite file {path}");
    }
    crate::cli::redact(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unspecified_listen_addresses_are_probed_over_loopback() {
        let probe =
            |s: &str| probe_address(s.parse().unwrap_or_else(|_| SocketAddr::from(([1, 1, 1, 1], 1))));
        assert_eq!(probe("0.0.0.0:8080").to_string(), "127.0.0.1:8080");
        assert_eq!(probe("[::]:8080").to_string(), "[::1]:8080");
        assert_eq!(probe("127.0.0.2:9").to_string(), "127.0.0.2:9");
    }
}
