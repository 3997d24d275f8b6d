//! Test support for address-policy tests (cargo feature `testing`). A tripwire: listeners on one
//! loopback port that count every connection, and that port written every way a URL can spell
//! loopback; a refusal that still connected shows up as a hit. A zone: a resolver with fixed
//! answers, so a test can name hosts no real DNS knows (or that resolve somewhere internal).
//!
//! Setup failures panic: this module only runs inside tests, where a panic is the failure report.
#![allow(clippy::expect_used)]

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use tokio::net::TcpListener;

use crate::HostResolver;

/// Answers fixed addresses for the names it knows, like a zone file; any other name is unknown.
pub struct Zone(HashMap<String, Vec<IpAddr>>);

impl Zone {
    /// Each name with the addresses it resolves to, written as literals.
    pub fn new(names: &[(&str, &[&str])]) -> Self {
        let table = names
            .iter()
            .map(|(name, ips)| {
                let ips = ips
                    .iter()
                    .map(|ip| ip.parse().expect("a zone's addresses are IP literals"))
                    .collect();
                ((*name).to_owned(), ips)
            })
            .collect();
        Self(table)
    }
}

#[async_trait]
impl HostResolver for Zone {
    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        match self.0.get(host) {
            Some(ips) => Ok(ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect()),
            None => Err(io::Error::new(io::ErrorKind::NotFound, "unknown name")),
        }
    }
}

/// Listeners on one port of 127.0.0.1, 127.0.0.2 and ::1 (the last two where the machine has them).
pub struct Tripwire {
    pub port: u16,
    hits: Arc<AtomicUsize>,
    v6: bool,
}

impl Tripwire {
    pub async fn start() -> Tripwire {
        let hits = Arc::new(AtomicUsize::new(0));
        let first = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let port = first.local_addr().expect("the listener's address").port();
        count(first, hits.clone());
        if let Ok(second) = TcpListener::bind(("127.0.0.2", port)).await {
            count(second, hits.clone());
        }
        let v6 = match TcpListener::bind(("::1", port)).await {
            Ok(listener) => {
                count(listener, hits.clone());
                true
            }
            Err(_) => false,
        };
        Tripwire { port, hits, v6 }
    }

    /// Connections accepted so far.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    /// `http://<host>:<port><path>` for every spelling of this loopback destination: decimal, hex and
    /// octal IPv4 forms, the unspecified addresses, and IPv6 forms that embed or map 127.0.0.1.
    pub fn urls(&self, path: &str) -> Vec<String> {
        let mut hosts = vec![
            "127.0.0.1",
            "127.0.0.2",
            "2130706433",
            "0x7f.1",
            "0x7f000001",
            "0177.0.0.1",
            "127.1",
            "localhost",
            "0.0.0.0",
            "0",
            "[::ffff:127.0.0.1]",
            "[::ffff:7f00:1]",
            "[::127.0.0.1]",
            "[64:ff9b::127.0.0.1]",
            "[2002:7f00:1::]",
            "[::]",
        ];
        if self.v6 {
            hosts.push("[::1]");
            hosts.push("[0:0:0:0:0:0:0:1]");
        }
        hosts
            .into_iter()
            .map(|host| format!("http://{host}:{}{path}", self.port))
            .collect()
    }
}

fn count(listener: TcpListener, hits: Arc<AtomicUsize>) {
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            hits.fetch_add(1, Ordering::SeqCst);
            drop(socket);
        }
    });
}
