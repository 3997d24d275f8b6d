//! Checking a URL's destination and building an HTTP client that can only reach what was checked.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use reqwest::redirect;
use url::{Host, Url};

use crate::policy::{AddressPolicy, OutboundError, name_refusal};
use crate::resolve::{HostResolver, NoLookups, SystemResolver};

/// Installs the process-wide TLS crypto provider before any client is built; reqwest is compiled
/// without a default provider and would otherwise panic on first use. Installing twice is harmless.
pub fn ensure_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A TLS configuration that verifies servers against the system's root certificates, offering HTTP/2
/// and HTTP/1.1. Building one reads every root certificate from disk, so it is built once per
/// [`Outbound`] (or model provider) and cloned.
pub fn platform_tls_config() -> Result<rustls::ClientConfig, rustls::Error> {
    use rustls_platform_verifier::BuilderVerifierExt;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_platform_verifier()?
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// A destination that passed the policy: the URL's host and the addresses a connection may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `Some` when the URL names a host (the client is pinned to `addrs` for it); `None` for an IP
    /// literal, which needs no lookup.
    pub name: Option<String>,
    pub addrs: Vec<SocketAddr>,
}

/// The address policy with the resolver and TLS setup that go with it. Cheap to share behind an
/// `Arc`; every user-aimed connection of the process is checked by one of these.
pub struct Outbound {
    policy: AddressPolicy,
    resolver: Arc<dyn HostResolver>,
    tls: Result<rustls::ClientConfig, String>,
}

impl std::fmt::Debug for Outbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbound").field("policy", &self.policy).finish()
    }
}

impl Outbound {
    pub fn new(policy: AddressPolicy) -> Self {
        Self::with_resolver(policy, Arc::new(SystemResolver))
    }

    /// Uses `resolver` for host names; its answers get the same checks as the system's.
    pub fn with_resolver(policy: AddressPolicy, resolver: Arc<dyn HostResolver>) -> Self {
        ensure_tls_provider();
        let tls = platform_tls_config().map_err(|e| {
            tracing::warn!(error = %e, "no TLS root certificates; https destinations cannot be reached");
            e.to_string()
        });
        Self {
            policy,
            resolver,
            tls,
        }
    }

    pub fn policy(&self) -> &AddressPolicy {
        &self.policy
    }

    /// Resolves the URL's host once and checks every address. An IP literal (in any of the forms the
    /// URL parser accepts) is checked as the address it names.
    pub async fn check_url(&self, url: &Url) -> Result<Target, OutboundError> {
        let port = url.port_or_known_default().unwrap_or(80);
        match url.host() {
            Some(Host::Ipv4(ip)) => self.check_literal(SocketAddr::new(IpAddr::V4(ip), port)),
            Some(Host::Ipv6(ip)) => self.check_literal(SocketAddr::new(IpAddr::V6(ip), port)),
            Some(Host::Domain(name)) if !name.is_empty() => {
                let addrs = self.resolve_checked(name, port).await?;
                Ok(Target {
                    name: Some(name.to_owned()),
                    addrs,
                })
            }
            _ => Err(OutboundError::NoHost),
        }
    }

    fn check_literal(&self, addr: SocketAddr) -> Result<Target, OutboundError> {
        self.policy.check(addr)?;
        Ok(Target {
            name: None,
            addrs: vec![addr],
        })
    }

    /// Refuses the host when any of its addresses is not allowed, since we cannot control which
    /// one the connection would use.
    async fn resolve_checked(&self, name: &str, port: u16) -> Result<Vec<SocketAddr>, OutboundError> {
        let addrs = self
            .resolver
            .resolve(name, port)
            .await
            .map_err(|_| OutboundError::Unresolvable(name.to_owned()))?;
        // The port is the URL's whatever a resolver reports; that is where the client connects.
        let addrs: Vec<SocketAddr> = addrs.into_iter().map(|a| SocketAddr::new(a.ip(), port)).collect();
        if addrs.is_empty() {
            return Err(OutboundError::NoAddresses(name.to_owned()));
        }
        if let Some(bad) = addrs.iter().find(|a| !self.policy.allows(**a)) {
            return Err(OutboundError::Refused(name_refusal(name, bad.ip())));
        }
        Ok(addrs)
    }

    /// A client builder for `url` whose connections can only go to `target`'s addresses: no
    /// lookups of its own, no redirects, no proxy. Callers add timeouts and a user agent.
    pub fn pinned_builder(
        &self,
        url: &Url,
        target: &Target,
    ) -> Result<reqwest::ClientBuilder, OutboundError> {
        let mut builder = reqwest::Client::builder()
            .redirect(redirect::Policy::none())
            .no_proxy()
            .dns_resolver(NoLookups);
        match (&self.tls, url.scheme()) {
            (Ok(tls), _) => builder = builder.tls_backend_preconfigured(tls.clone()),
            (Err(reason), "https") => return Err(OutboundError::TlsUnavailable(reason.clone())),
            (Err(_), _) => {}
        }
        if let Some(name) = &target.name {
            builder = builder.resolve_to_addrs(name, &target.addrs);
        }
        Ok(builder)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outbound() -> Outbound {
        Outbound::new(AddressPolicy::default())
    }

    #[tokio::test]
    async fn odd_literal_forms_are_read_as_the_address_they_name() {
        for url in [
            "http://2130706433/",
            "http://0x7f.1/",
            "http://0177.0.0.1/",
            "http://127.1/",
            "http://0x7f000001/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::127.0.0.1]/",
            "http://[0:0:0:0:0:ffff:7f00:1]/",
            "http://0.0.0.0/",
            "http://0/",
            "http://[::]/",
        ] {
            let parsed = Url::parse(url).unwrap();
            let err = outbound().check_url(&parsed).await.unwrap_err();
            assert!(err.is_refusal(), "{url}: {err}");
        }
    }

    #[tokio::test]
    async fn a_public_literal_passes_with_the_url_port() {
        let url = Url::parse("https://93.184.215.14/x").unwrap();
        let target = outbound().check_url(&url).await.unwrap();
        assert_eq!(target.name, None);
        assert_eq!(target.addrs, vec!["93.184.215.14:443".parse().unwrap()]);
    }
}
