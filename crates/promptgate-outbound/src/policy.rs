//! Which addresses are open, and the errors a refused or unusable destination produces.

use std::net::{IpAddr, SocketAddr};

use serde::Deserialize;

use crate::address::{RestrictedRange, classify};

/// What the operator opened beyond public unicast addresses. The same three keys appear in
/// `[web.fetch]` and `[mcp]`; `Default` opens nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct AddressPolicy {
    /// 127.0.0.0/8 and ::1, including their IPv6-embedded forms.
    pub allow_loopback: bool,
    /// RFC 1918 networks, carrier-grade NAT space and IPv6 unique-local addresses. Link-local and
    /// cloud metadata addresses stay refused either way.
    pub allow_private: bool,
    /// Exact `ip:port` pairs allowed whatever their range, for one known internal service without
    /// opening a whole network.
    pub allowed_addrs: Vec<SocketAddr>,
}

impl AddressPolicy {
    /// Opens nothing but public addresses.
    pub fn public_only() -> Self {
        Self::default()
    }

    pub fn allows(&self, addr: SocketAddr) -> bool {
        if self.allowed_addrs.contains(&addr) {
            return true;
        }
        match classify(addr.ip()) {
            None => true,
            Some(RestrictedRange::Loopback) => self.allow_loopback,
            Some(RestrictedRange::Private | RestrictedRange::SharedCarrierNat) => self.allow_private,
            Some(_) => false,
        }
    }

    /// `Err` names the address and why it is refused.
    pub fn check(&self, addr: SocketAddr) -> Result<(), OutboundError> {
        if self.allows(addr) {
            Ok(())
        } else {
            Err(OutboundError::Refused(refusal(addr.ip())))
        }
    }
}

/// Why no connection was made. Messages name the host or address the user gave and never anything
/// a remote server said.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutboundError {
    /// The address (or one the name resolves to) is closed by the policy.
    #[error("{0}")]
    Refused(String),
    #[error("the host name {0} could not be resolved")]
    Unresolvable(String),
    #[error("the host name {0} has no addresses")]
    NoAddresses(String),
    #[error("the URL has no host")]
    NoHost,
    #[error("https is unavailable on this server ({0})")]
    TlsUnavailable(String),
    #[error("could not set up the HTTP client")]
    Client,
}

impl OutboundError {
    /// The address policy refused the destination (as opposed to it being unusable).
    pub fn is_refusal(&self) -> bool {
        matches!(self, OutboundError::Refused(_))
    }
}

pub(crate) fn refusal(ip: IpAddr) -> String {
    match classify(ip) {
        Some(range) => format!("the address {ip} is {range} and is not allowed"),
        None => format!("the address {ip} is not allowed"),
    }
}

pub(crate) fn name_refusal(name: &str, ip: IpAddr) -> String {
    let range = classify(ip).map_or_else(|| "an address".to_owned(), |r| r.to_string());
    format!("{name} resolves to {ip}, which is {range} and is not allowed")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn nothing_internal_is_open_by_default() {
        let policy = AddressPolicy::public_only();
        for text in [
            "127.0.0.1:80",
            "[::1]:80",
            "[::ffff:127.0.0.1]:80",
            "[::127.0.0.1]:80",
            "[64:ff9b::7f00:1]:80",
            "[2002:7f00:1::1]:80",
            "10.1.2.3:443",
            "169.254.169.254:80",
            "[fd00:ec2::254]:80",
            "0.0.0.0:80",
            "[::]:80",
            "224.0.0.1:80",
            "255.255.255.255:80",
            "[fe80::1]:80",
            "[fd12::1]:80",
        ] {
            assert!(!policy.allows(addr(text)), "{text}");
        }
        assert!(policy.allows(addr("93.184.215.14:443")));
        assert!(policy.allows(addr("[2606:4700:4700::1111]:443")));
    }

    #[test]
    fn each_switch_opens_only_its_ranges() {
        let loopback = AddressPolicy {
            allow_loopback: true,
            ..AddressPolicy::default()
        };
        assert!(loopback.allows(addr("127.0.0.2:9")));
        assert!(loopback.allows(addr("[::ffff:127.0.0.1]:9")));
        assert!(!loopback.allows(addr("10.0.0.1:9")));
        assert!(!loopback.allows(addr("0.0.0.0:9")), "0.0.0.0 is not loopback");

        let private = AddressPolicy {
            allow_private: true,
            ..AddressPolicy::default()
        };
        assert!(private.allows(addr("192.168.1.5:80")));
        assert!(private.allows(addr("[fd12::1]:80")));
        assert!(!private.allows(addr("127.0.0.1:80")));
        assert!(
            !private.allows(addr("169.254.169.254:80")),
            "metadata stays closed"
        );
        assert!(
            !private.allows(addr("[fd00:ec2::254]:80")),
            "metadata stays closed"
        );
        assert!(
            !private.allows(addr("100.100.100.200:80")),
            "metadata stays closed"
        );

        let exact = AddressPolicy {
            allowed_addrs: vec![addr("10.1.2.3:443")],
            ..AddressPolicy::default()
        };
        assert!(exact.allows(addr("10.1.2.3:443")));
        assert!(!exact.allows(addr("10.1.2.3:80")), "only the listed port");
    }

    #[test]
    fn refusals_say_why() {
        let err = AddressPolicy::default().check(addr("127.0.0.1:80")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the address 127.0.0.1 is a loopback address and is not allowed"
        );
        assert!(err.is_refusal());
    }
}
