//! Name resolution, behind a trait so a test can map a name of its own choosing to a loopback
//! server. Whatever a resolver returns is still checked against the policy.

use std::io;
use std::net::SocketAddr;

use async_trait::async_trait;

/// Addresses beyond this many are ignored; a name with more is either a CDN (any one will do)
/// or an attempt to make us check a long list.
const MAX_ADDRESSES: usize = 16;

#[async_trait]
pub trait HostResolver: Send + Sync {
    /// All addresses `host` resolves to, with `port` filled in.
    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>>;
}

/// The operating system's resolver.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

#[async_trait]
impl HostResolver for SystemResolver {
    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        Ok(tokio::net::lookup_host((host, port))
            .await?
            .take(MAX_ADDRESSES)
            .collect())
    }
}

/// Installed as the DNS resolver of every pinned client: names are resolved and checked before
/// the client exists, so a lookup reaching it means a name escaped the pinning. Refusing it
/// keeps such a bug from turning into a connection to an unchecked address.
pub(crate) struct NoLookups;

impl reqwest::dns::Resolve for NoLookups {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let message = format!("{} was not resolved and checked before connecting", name.as_str());
        Box::pin(async move { Err(io::Error::other(message).into()) })
    }
}
