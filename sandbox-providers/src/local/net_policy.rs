//! Where a local sandbox's connections may go: the internet's public addresses, never this
//! machine's loopback, the local networks or the cloud's metadata service, unless the user
//! names them (`[local_sandbox] allow_net`, `host_ports`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// One destination the user allows beyond the internet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetRule {
    /// A host name (`db.internal`, or `*.corp.example` for its subdomains), on any port or
    /// one.
    Host { name: String, port: Option<u16> },
    /// Addresses (`10.0.0.0/8`, `127.0.0.1`), on any port or one.
    Net {
        addr: IpAddr,
        prefix: u8,
        port: Option<u16>,
    },
}

impl NetRule {
    /// Reads `HOST[:PORT]`, `IP[:PORT]`, `[IPv6][:PORT]` or `CIDR`.
    pub fn parse(raw: &str) -> Result<NetRule, String> {
        let raw = raw.trim();
        let bad = |why: &str| {
            format!(
                "{raw:?} is not a destination ({why}); write a host (db.internal, *.corp.example), an address (10.0.0.5), either with :PORT, or a network (10.0.0.0/8)"
            )
        };
        if raw.is_empty() {
            return Err(bad("it is empty"));
        }
        if let Some((addr, prefix)) = raw.split_once('/') {
            let addr: IpAddr = addr.parse().map_err(|_| bad("not an address before /"))?;
            let max = if addr.is_ipv4() { 32 } else { 128 };
            let prefix: u8 = prefix
                .parse()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| bad("the prefix length is out of range"))?;
            return Ok(NetRule::Net {
                addr,
                prefix,
                port: None,
            });
        }
        if let Ok(addr) = raw.parse::<IpAddr>() {
            return Ok(net(addr, None));
        }
        if let Ok(sock) = raw.parse::<SocketAddr>() {
            return Ok(net(sock.ip(), Some(sock.port())));
        }
        let (name, port) = match raw.rsplit_once(':') {
            Some((name, port)) => (
                name,
                Some(
                    port.parse::<u16>()
                        .map_err(|_| bad("the port is not a number"))?,
                ),
            ),
            None => (raw, None),
        };
        let bare = name.strip_prefix("*.").unwrap_or(name);
        let valid = !bare.is_empty()
            && bare
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'));
        if !valid {
            return Err(bad("not a host name"));
        }
        Ok(NetRule::Host {
            name: name.to_ascii_lowercase(),
            port,
        })
    }

    fn port_matches(port: Option<u16>, wanted: u16) -> bool {
        port.is_none_or(|p| p == wanted)
    }

    fn matches_name(&self, host: &str, wanted: u16) -> bool {
        let NetRule::Host { name, port } = self else {
            return false;
        };
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let named = match name.strip_prefix("*.") {
            Some(parent) => host.ends_with(&format!(".{parent}")),
            None => host == *name,
        };
        named && Self::port_matches(*port, wanted)
    }

    fn matches_addr(&self, ip: IpAddr, wanted: u16) -> bool {
        let NetRule::Net { addr, prefix, port } = self else {
            return false;
        };
        Self::port_matches(*port, wanted) && in_net(ip, *addr, *prefix)
    }
}

fn net(addr: IpAddr, port: Option<u16>) -> NetRule {
    NetRule::Net {
        addr,
        prefix: if addr.is_ipv4() { 32 } else { 128 },
        port,
    }
}

fn in_net(ip: IpAddr, net: IpAddr, prefix: u8) -> bool {
    match (unmap(ip), unmap(net)) {
        (IpAddr::V4(ip), IpAddr::V4(net)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(ip) & mask == u32::from(net) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(net)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(ip) & mask == u128::from(net) & mask
        }
        _ => false,
    }
}

/// An IPv4 address written as IPv6 (`::ffff:127.0.0.1`) as the IPv4 address it is.
fn unmap(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

const LOOPBACK: &str = "this machine's loopback";

/// Which kind of address `ip` is when it is not the internet's: why it is refused.
pub fn not_public(ip: IpAddr) -> Option<&'static str> {
    match unmap(ip) {
        IpAddr::V4(v4) => not_public_v4(v4),
        IpAddr::V6(v6) => not_public_v6(v6),
    }
}

fn not_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        Some(LOOPBACK)
    } else if ip.is_unspecified() || a == 0 {
        Some("this machine (0.0.0.0)")
    } else if ip.is_link_local() {
        Some("link-local (the cloud metadata service lives there)")
    } else if ip.is_private() {
        Some("a private network")
    } else if a == 100 && (64..128).contains(&b) {
        Some("a carrier-grade NAT network")
    } else if a == 198 && (b == 18 || b == 19) {
        Some("a benchmarking network")
    } else if ip.is_multicast() || ip.is_broadcast() || a >= 240 {
        Some("multicast or reserved")
    } else {
        None
    }
}

fn not_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let first = ip.segments()[0];
    if ip.is_loopback() {
        Some(LOOPBACK)
    } else if ip.is_unspecified() {
        Some("this machine (::)")
    } else if first & 0xffc0 == 0xfe80 {
        Some("link-local (the cloud metadata service lives there)")
    } else if first & 0xfe00 == 0xfc00 {
        Some("a private network")
    } else if ip.is_multicast() {
        Some("multicast or reserved")
    } else if let [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] = ip.segments() {
        // NAT64: an IPv4 address in disguise.
        not_public_v4(Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo)))
    } else {
        None
    }
}

/// The user's allowances; everything else public is allowed, everything else refused.
#[derive(Debug, Clone, Default)]
pub struct NetPolicy {
    pub allow: Vec<NetRule>,
    /// This machine's own addresses (a public one included): its services that listen on
    /// every address are refused like its loopback's.
    pub own: Vec<IpAddr>,
}

/// This machine's addresses, as the kernel lists them (`/proc/net/fib_trie` for IPv4,
/// `/proc/net/if_inet6` for IPv6).
pub fn own_addresses() -> Vec<IpAddr> {
    let mut found = Vec::new();
    if let Ok(trie) = std::fs::read_to_string("/proc/net/fib_trie") {
        let mut last: Option<IpAddr> = None;
        for line in trie.lines() {
            let line = line.trim();
            if let Some(addr) = line.strip_prefix("|-- ") {
                last = addr.trim().parse().ok();
            } else if line.contains("/32 host LOCAL")
                && let Some(ip) = last
                && !found.contains(&ip)
            {
                found.push(ip);
            }
        }
    }
    if let Ok(list) = std::fs::read_to_string("/proc/net/if_inet6") {
        for line in list.lines() {
            let Some(hex) = line.split_whitespace().next() else {
                continue;
            };
            if let Ok(bits) = u128::from_str_radix(hex, 16) {
                let ip = IpAddr::V6(Ipv6Addr::from(bits));
                if !found.contains(&ip) {
                    found.push(ip);
                }
            }
        }
    }
    found
}

/// Why a destination is refused, said so the user can allow it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{host}:{port} is {kind}, which the sandbox does not reach; {}", self.remedy())]
pub struct Refused {
    pub host: String,
    pub port: u16,
    pub kind: &'static str,
}

impl Refused {
    fn remedy(&self) -> String {
        let (host, port) = (&self.host, self.port);
        if self.kind == LOOPBACK {
            format!(
                "to share this machine's port, set [local_sandbox] host_ports = [{port}] in cove.toml (or COVE_HOST_PORTS={port}): the sandbox then reaches it at 127.0.0.1:{port}"
            )
        } else {
            format!("allow it with [local_sandbox] allow_net = [\"{host}:{port}\"] in cove.toml")
        }
    }
}

impl NetPolicy {
    /// The policy of these allowances.
    pub fn new(allow: Vec<NetRule>) -> NetPolicy {
        NetPolicy {
            allow,
            own: Vec::new(),
        }
    }

    /// The same, refusing this machine's addresses `own` too.
    pub fn with_own_addresses(mut self, own: Vec<IpAddr>) -> NetPolicy {
        self.own = own;
        self
    }

    /// Of the addresses `host` resolved to, those the sandbox may connect to on `port`.
    pub fn decide(
        &self,
        host: &str,
        port: u16,
        addrs: &[IpAddr],
    ) -> Result<Vec<SocketAddr>, Refused> {
        let named = self.allow.iter().any(|r| r.matches_name(host, port));
        let mut refusal = None;
        let mut allowed = Vec::new();
        for &ip in addrs {
            let why = if self.own.contains(&ip) && !unmap(ip).is_loopback() {
                Some("one of this machine's own addresses")
            } else {
                not_public(ip)
            };
            // A name the user allowed reaches what it resolves to, but never this machine's
            // loopback (a name can be made to point there): host_ports shares that.
            let by_name = named && !unmap(ip).is_loopback();
            if by_name || why.is_none() || self.allow.iter().any(|r| r.matches_addr(ip, port)) {
                allowed.push(SocketAddr::new(ip, port));
            } else if refusal.is_none() {
                refusal = why;
            }
        }
        if allowed.is_empty() {
            return Err(Refused {
                host: host.to_string(),
                port,
                kind: refusal.unwrap_or("an address that does not resolve"),
            });
        }
        Ok(allowed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn the_internet_is_reached_and_this_machine_and_its_networks_are_not() {
        let policy = NetPolicy::default();
        assert!(
            policy
                .decide("pypi.org", 443, &ips(&["151.101.0.223"]))
                .is_ok()
        );
        assert!(policy.decide("v6", 443, &ips(&["2a04:4e42::223"])).is_ok());
        for (ip, kind) in [
            ("127.0.0.1", "loopback"),
            ("127.1.2.3", "loopback"),
            ("::1", "loopback"),
            ("::ffff:127.0.0.1", "loopback"),
            ("0.0.0.0", "0.0.0.0"),
            ("169.254.169.254", "metadata"),
            ("fe80::1", "metadata"),
            ("10.1.2.3", "private"),
            ("172.16.0.1", "private"),
            ("192.168.1.1", "private"),
            ("fd00:ec2::254", "private"),
            ("100.100.100.200", "carrier"),
            ("64:ff9b::7f00:1", "loopback"),
            ("224.0.0.1", "multicast"),
        ] {
            let refused = policy.decide("h", 80, &ips(&[ip])).unwrap_err();
            assert!(refused.kind.contains(kind), "{ip}: {refused}");
            let remedy = if kind == "loopback" {
                "host_ports"
            } else {
                "allow_net"
            };
            assert!(
                refused.to_string().contains(remedy),
                "the remedy is given: {refused}"
            );
        }
    }

    #[test]
    fn a_name_that_resolves_to_both_kinds_keeps_only_the_public_addresses() {
        let allowed = NetPolicy::default()
            .decide("mixed", 443, &ips(&["127.0.0.1", "151.101.0.223"]))
            .unwrap();
        assert_eq!(allowed, vec!["151.101.0.223:443".parse().unwrap()]);
    }

    #[test]
    fn allowances_open_exactly_what_they_name() {
        let rules = [
            "127.0.0.1:5432",
            "10.0.0.0/8",
            "db.internal:6379",
            "*.corp.example",
        ]
        .iter()
        .map(|r| NetRule::parse(r).unwrap())
        .collect();
        let policy = NetPolicy::new(rules);
        assert!(
            policy
                .decide("127.0.0.1", 5432, &ips(&["127.0.0.1"]))
                .is_ok()
        );
        assert!(
            policy
                .decide("127.0.0.1", 5433, &ips(&["127.0.0.1"]))
                .is_err()
        );
        assert!(policy.decide("x", 22, &ips(&["10.9.8.7"])).is_ok());
        assert!(
            policy
                .decide("db.internal", 6379, &ips(&["192.168.0.9"]))
                .is_ok()
        );
        assert!(
            policy
                .decide("db.internal", 80, &ips(&["192.168.0.9"]))
                .is_err()
        );
        assert!(
            policy
                .decide("git.corp.example", 443, &ips(&["10.0.0.1", "192.168.5.5"]))
                .is_ok()
        );
        assert!(
            policy
                .decide("corp.example", 443, &ips(&["192.168.5.5"]))
                .is_err()
        );
    }

    #[test]
    fn this_machines_own_addresses_are_refused_and_named_rules_never_reach_loopback() {
        let policy = NetPolicy::new(vec![NetRule::parse("api.example.com").unwrap()])
            .with_own_addresses(ips(&["203.0.113.9", "127.0.0.1"]));
        let refused = policy
            .decide("me", 5432, &ips(&["203.0.113.9"]))
            .unwrap_err();
        assert!(refused.kind.contains("own addresses"), "{refused}");
        assert!(
            policy
                .decide("api.example.com", 443, &ips(&["127.0.0.1"]))
                .is_err()
        );
        assert!(
            policy
                .decide("api.example.com", 443, &ips(&["10.0.0.7"]))
                .is_ok()
        );
        assert!(!own_addresses().is_empty(), "loopback at least");
    }

    #[test]
    fn bad_rules_say_what_is_accepted() {
        for bad in ["", "10.0.0.0/33", "db:port", "a b", "1.2.3.4/x"] {
            let e = NetRule::parse(bad).unwrap_err();
            assert!(e.contains("10.0.0.0/8"), "{e}");
        }
        assert_eq!(
            NetRule::parse("[::1]:8080").unwrap(),
            NetRule::Net {
                addr: "::1".parse().unwrap(),
                prefix: 128,
                port: Some(8080)
            }
        );
    }
}
