//! Host names and addresses: which ones are this machine's own, and a `Host` header read
//! strictly as an authority (a host and an optional port, nothing else), so nothing a client
//! sends there can reach a generated link or a routing decision unchecked.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Cloud metadata services outside the link-local range: Alibaba's, Azure's host agent,
/// AWS's over IPv6.
const METADATA_V4: [Ipv4Addr; 2] = [
    Ipv4Addr::new(100, 100, 100, 200),
    Ipv4Addr::new(168, 63, 129, 16),
];
const METADATA_V6: [Ipv6Addr; 1] = [Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)];

/// Whether `ip` reaches this machine or its link: loopback, link-local (cloud metadata
/// services live there, and a few elsewhere), or unspecified (`0.0.0.0` connects to the
/// local host on Linux).
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_internal_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_internal_v4(v4);
            }
            v6.is_loopback()
                || v6.is_unspecified()
                || is_link_local_v6(v6)
                || METADATA_V6.contains(&v6)
        }
    }
}

fn is_internal_v4(ip: Ipv4Addr) -> bool {
    ip.is_loopback() || ip.is_link_local() || ip.octets()[0] == 0 || METADATA_V4.contains(&ip)
}

fn is_link_local_v6(ip: Ipv6Addr) -> bool {
    (ip.segments()[0] & 0xffc0) == 0xfe80
}

/// Whether `host` is `localhost` or a name under it, which browsers resolve to loopback
/// themselves.
pub fn is_localhost_name(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host);
    host.eq_ignore_ascii_case("localhost")
        || host
            .len()
            .checked_sub(".localhost".len())
            .and_then(|cut| host.get(cut..))
            .is_some_and(|tail| tail.eq_ignore_ascii_case(".localhost"))
}

/// A `Host` header's value: a host name or IP literal and an optional port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authority {
    /// Lowercase; an IPv6 literal keeps its brackets.
    pub host: String,
    pub port: Option<u16>,
}

impl Authority {
    /// Parses `raw`, refusing user info, paths, queries, empty labels and stray characters.
    pub fn parse(raw: &str) -> Option<Authority> {
        let (host, port) = if let Some(rest) = raw.strip_prefix('[') {
            let (inside, after) = rest.split_once(']')?;
            inside.parse::<Ipv6Addr>().ok()?;
            let port = match after {
                "" => None,
                p => Some(parse_port(p.strip_prefix(':')?)?),
            };
            (format!("[{}]", inside.to_ascii_lowercase()), port)
        } else {
            let (host, port) = match raw.rsplit_once(':') {
                Some((h, p)) => (h, Some(parse_port(p)?)),
                None => (raw, None),
            };
            if !is_host_name(host) {
                return None;
            }
            (host.to_ascii_lowercase(), port)
        };
        Some(Authority { host, port })
    }

    /// The host as an IP address, when it is a literal.
    pub fn ip(&self) -> Option<IpAddr> {
        let bare = self
            .host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(&self.host);
        bare.parse().ok()
    }

    /// Whether this names the machine the client runs on: `localhost` and names under it,
    /// or a loopback address.
    pub fn is_loopback(&self) -> bool {
        is_localhost_name(&self.host) || self.ip().is_some_and(|ip| ip.is_loopback())
    }

    /// `host[:port]`, as it goes into a URL.
    pub fn to_url_authority(&self) -> String {
        match self.port {
            Some(port) => format!("{}:{port}", self.host),
            None => self.host.clone(),
        }
    }
}

/// A port as digits only: no sign, no leading zeros, no percent-encoding.
pub fn parse_port(raw: &str) -> Option<u16> {
    let canonical = !raw.is_empty()
        && raw.bytes().all(|b| b.is_ascii_digit())
        && (raw == "0" || !raw.starts_with('0'));
    if !canonical {
        return None;
    }
    raw.parse().ok()
}

/// A DNS name or IPv4 literal: dot-separated labels of letters, digits, `-` and `_`.
fn is_host_name(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host);
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_addresses_are_loopback_link_local_and_unspecified() {
        for ip in [
            "127.0.0.1",
            "127.1.2.3",
            "0.0.0.0",
            "0.1.2.3",
            "169.254.169.254",
            "::1",
            "::",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.1.1",
            "100.100.100.200",
            "168.63.129.16",
            "fd00:ec2::254",
        ] {
            assert!(is_internal(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["192.0.2.2", "10.0.0.1", "8.8.8.8", "2001:db8::1", "fd00::2"] {
            assert!(!is_internal(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn localhost_names_are_recognised() {
        for host in [
            "localhost",
            "LOCALHOST",
            "p8000.localhost",
            "a.b.localhost.",
        ] {
            assert!(is_localhost_name(host), "{host}");
        }
        for host in ["localhost.example", "notlocalhost", "xlocalhost", ""] {
            assert!(!is_localhost_name(host), "{host}");
        }
    }

    #[test]
    fn hosts_parse_as_authorities_only() {
        let a = Authority::parse("Sandbox.Example:7700").unwrap();
        assert_eq!((a.host.as_str(), a.port), ("sandbox.example", Some(7700)));
        let a = Authority::parse("[::1]:80").unwrap();
        assert_eq!((a.host.as_str(), a.port), ("[::1]", Some(80)));
        assert!(a.is_loopback());
        assert_eq!(a.to_url_authority(), "[::1]:80");
        assert_eq!(
            Authority::parse("127.0.0.1").unwrap().ip(),
            Some("127.0.0.1".parse().unwrap())
        );
        for bad in [
            "",
            "evil.example/x?",
            "127.0.0.1:1@evil.example",
            "a b",
            "host:",
            "host:+80",
            "host:080",
            "host:65536",
            "[::1",
            "[nothex]:80",
            "a..b",
            "x:1:2",
            "%31.example",
        ] {
            assert_eq!(Authority::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn ports_are_canonical_digits() {
        assert_eq!(parse_port("8080"), Some(8080));
        assert_eq!(parse_port("0"), Some(0));
        for bad in ["", "+80", "080", "-1", "65536", "８０", "%38%30"] {
            assert_eq!(parse_port(bad), None, "{bad}");
        }
    }
}
