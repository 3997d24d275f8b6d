//! What kind of IP address a destination is.
//!
//! A URL a user or a model hands us may be an attempt to reach the gateway's own network (cloud
//! metadata at 169.254.169.254, an admin port on localhost, a database on 10.x). Everything that is
//! not plain public unicast is classified here, including IPv6 forms that carry an IPv4 address
//! inside them, because a connect to `[::ffff:127.0.0.1]` or `[64:ff9b::a00:1]` reaches the
//! embedded IPv4 host.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is not an ordinary public one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestrictedRange {
    /// A cloud provider's instance metadata service, which hands out credentials. Only an exact
    /// `allowed_addrs` entry opens it; `allow_private` does not.
    Metadata,
    Loopback,
    Unspecified,
    /// RFC 1918 networks and IPv6 unique-local / site-local addresses.
    Private,
    /// 100.64.0.0/10, shared between a carrier's customers; treated like private space.
    SharedCarrierNat,
    LinkLocal,
    Multicast,
    Broadcast,
    Documentation,
    Benchmarking,
    /// Reserved or special-purpose space that no public web server lives in.
    Reserved,
}

impl RestrictedRange {
    fn description(self) -> &'static str {
        match self {
            Self::Metadata => "a cloud metadata address",
            Self::Loopback => "a loopback address",
            Self::Unspecified => "an unspecified address",
            Self::Private => "a private network address",
            Self::SharedCarrierNat => "a carrier-grade NAT address",
            Self::LinkLocal => "a link-local address",
            Self::Multicast => "a multicast address",
            Self::Broadcast => "a broadcast address",
            Self::Documentation => "an address reserved for documentation",
            Self::Benchmarking => "an address reserved for benchmarking",
            Self::Reserved => "a reserved address",
        }
    }
}

impl fmt::Display for RestrictedRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.description())
    }
}

/// `None` for an ordinary public address.
pub fn classify(ip: IpAddr) -> Option<RestrictedRange> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn in_v4_net(ip: Ipv4Addr, net: [u8; 4], prefix: u32) -> bool {
    let mask = u32::MAX.checked_shl(32 - prefix).unwrap_or(0);
    u32::from(ip) & mask == u32::from(Ipv4Addr::from(net)) & mask
}

fn classify_v4(ip: Ipv4Addr) -> Option<RestrictedRange> {
    use RestrictedRange::*;
    let table: &[([u8; 4], u32, RestrictedRange)] = &[
        // Metadata endpoints first: some sit inside ranges an operator may open (CGNAT, public).
        ([169, 254, 169, 254], 32, Metadata),
        ([100, 100, 100, 200], 32, Metadata),
        ([168, 63, 129, 16], 32, Metadata),
        ([0, 0, 0, 0], 32, Unspecified),
        // "This network": never a valid destination, and 0.x is routed to localhost by some stacks.
        ([0, 0, 0, 0], 8, Reserved),
        ([127, 0, 0, 0], 8, Loopback),
        ([10, 0, 0, 0], 8, Private),
        ([172, 16, 0, 0], 12, Private),
        ([192, 168, 0, 0], 16, Private),
        ([100, 64, 0, 0], 10, SharedCarrierNat),
        ([169, 254, 0, 0], 16, LinkLocal),
        ([192, 0, 0, 0], 24, Reserved),
        ([192, 0, 2, 0], 24, Documentation),
        ([198, 51, 100, 0], 24, Documentation),
        ([203, 0, 113, 0], 24, Documentation),
        ([198, 18, 0, 0], 15, Benchmarking),
        ([224, 0, 0, 0], 4, Multicast),
        ([255, 255, 255, 255], 32, Broadcast),
        ([240, 0, 0, 0], 4, Reserved),
    ];
    table
        .iter()
        .find(|(net, prefix, _)| in_v4_net(ip, *net, *prefix))
        .map(|(_, _, range)| *range)
}

fn in_v6_net(ip: Ipv6Addr, net: u128, prefix: u32) -> bool {
    let mask = u128::MAX.checked_shl(128 - prefix).unwrap_or(0);
    u128::from(ip) & mask == net & mask
}

/// The IPv4 address in the low 32 bits.
fn low_v4(ip: Ipv6Addr) -> Ipv4Addr {
    Ipv4Addr::from((u128::from(ip) & 0xffff_ffff) as u32)
}

fn classify_v6(ip: Ipv6Addr) -> Option<RestrictedRange> {
    use RestrictedRange::*;
    let bits = u128::from(ip);
    if ip.is_unspecified() {
        return Some(Unspecified);
    }
    if ip.is_loopback() {
        return Some(Loopback);
    }
    // Forms that carry an IPv4 destination are judged by that destination. A public one stays
    // allowed: DNS64 resolvers on IPv6-only networks hand out 64:ff9b::a.b.c.d for public hosts.
    let embedded = if in_v6_net(ip, 0xffff_0000_0000, 96) {
        // ::ffff:a.b.c.d, IPv4-mapped
        Some(low_v4(ip))
    } else if in_v6_net(ip, 0, 96) {
        // ::a.b.c.d, the deprecated IPv4-compatible form
        Some(low_v4(ip))
    } else if in_v6_net(ip, 0x0064_ff9b << 96, 96) {
        // 64:ff9b::/96, the NAT64 well-known prefix
        Some(low_v4(ip))
    } else if in_v6_net(ip, 0x2002 << 112, 16) {
        // 2002::/16, 6to4: the IPv4 address sits right after the prefix
        Some(Ipv4Addr::from(((bits >> 80) & 0xffff_ffff) as u32))
    } else {
        None
    };
    if let Some(v4) = embedded {
        return classify_v4(v4);
    }
    let table: &[(u128, u32, RestrictedRange)] = &[
        // fd00:ec2::254, the IPv6 metadata endpoint, inside unique-local space.
        (0xfd00_0ec2_0000_0000_0000_0000_0000_0254, 128, Metadata),
        // 64:ff9b:1::/48, NAT64 for local use: translates into private networks.
        (0x0064_ff9b_0001 << 80, 48, Private),
        (0xfc00 << 112, 7, Private),
        (0xfec0 << 112, 10, Private),
        (0xfe80 << 112, 10, LinkLocal),
        (0xff00 << 112, 8, Multicast),
        (0x2001_0db8 << 96, 32, Documentation),
        (0x3fff << 112, 20, Documentation),
        (0x2001_0002_0000 << 80, 48, Benchmarking),
        // Teredo hides a client's IPv4 address; nothing a fetch should talk to.
        (0x2001_0000 << 96, 32, Reserved),
        (0x0100 << 112, 64, Reserved),
    ];
    if let Some((_, _, range)) = table.iter().find(|(net, prefix, _)| in_v6_net(ip, *net, *prefix)) {
        return Some(*range);
    }
    // Everything public is allocated from 2000::/3; the rest is unassigned or special-purpose.
    if !in_v6_net(ip, 0x2000 << 112, 3) {
        return Some(Reserved);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::RestrictedRange::*;
    use super::*;

    #[test]
    fn classifies_addresses_by_range() {
        let cases: &[(&str, Option<RestrictedRange>)] = &[
            // IPv4
            ("93.184.215.14", None),
            ("8.8.8.8", None),
            ("1.1.1.1", None),
            ("0.0.0.0", Some(Unspecified)),
            ("0.1.2.3", Some(Reserved)),
            ("127.0.0.1", Some(Loopback)),
            ("127.255.255.254", Some(Loopback)),
            ("10.0.0.1", Some(Private)),
            ("172.16.0.1", Some(Private)),
            ("172.31.255.255", Some(Private)),
            ("172.32.0.1", None),
            ("172.15.255.255", None),
            ("192.168.1.1", Some(Private)),
            ("100.64.0.1", Some(SharedCarrierNat)),
            ("100.127.255.255", Some(SharedCarrierNat)),
            ("100.128.0.1", None),
            ("169.254.169.254", Some(Metadata)),
            ("169.254.1.1", Some(LinkLocal)),
            ("100.100.100.200", Some(Metadata)),
            ("168.63.129.16", Some(Metadata)),
            ("fd00:ec2::254", Some(Metadata)),
            ("fd00:ec2::253", Some(Private)),
            ("192.0.0.8", Some(Reserved)),
            ("192.0.2.10", Some(Documentation)),
            ("198.51.100.7", Some(Documentation)),
            ("203.0.113.9", Some(Documentation)),
            ("198.18.0.1", Some(Benchmarking)),
            ("198.19.255.255", Some(Benchmarking)),
            ("198.20.0.1", None),
            ("224.0.0.1", Some(Multicast)),
            ("239.255.255.250", Some(Multicast)),
            ("240.0.0.1", Some(Reserved)),
            ("255.255.255.255", Some(Broadcast)),
            // IPv6
            ("2606:4700:4700::1111", None),
            ("2a00:1450:4001:80b::200e", None),
            ("::", Some(Unspecified)),
            ("::1", Some(Loopback)),
            ("fc00::1", Some(Private)),
            ("fd12:3456:789a::1", Some(Private)),
            ("fec0::1", Some(Private)),
            ("fe80::1", Some(LinkLocal)),
            ("febf::1", Some(LinkLocal)),
            ("ff02::1", Some(Multicast)),
            ("2001:db8::1", Some(Documentation)),
            ("3fff::1", Some(Documentation)),
            ("2001:2::1", Some(Benchmarking)),
            ("2001::1", Some(Reserved)),
            ("100::1", Some(Reserved)),
            ("4000::1", Some(Reserved)),
            // IPv4-mapped
            ("::ffff:127.0.0.1", Some(Loopback)),
            ("::ffff:10.0.0.1", Some(Private)),
            ("::ffff:169.254.169.254", Some(Metadata)),
            ("::ffff:8.8.8.8", None),
            // IPv4-compatible
            ("::127.0.0.1", Some(Loopback)),
            ("::192.168.0.1", Some(Private)),
            // NAT64 well-known prefix
            ("64:ff9b::127.0.0.1", Some(Loopback)),
            ("64:ff9b::a00:1", Some(Private)),
            ("64:ff9b::169.254.169.254", Some(Metadata)),
            ("64:ff9b::8.8.8.8", None),
            ("64:ff9b:1::1", Some(Private)),
            // 6to4 embedding 127.0.0.1 and 192.168.0.1
            ("2002:7f00:1::1", Some(Loopback)),
            ("2002:c0a8:1::", Some(Private)),
            // Teredo
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", Some(Reserved)),
        ];
        for (text, expected) in cases {
            let ip: IpAddr = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(classify(ip), *expected, "{text}");
        }
    }

    #[test]
    fn descriptions_read_as_reasons() {
        assert_eq!(Private.to_string(), "a private network address");
        assert_eq!(LinkLocal.to_string(), "a link-local address");
    }
}
