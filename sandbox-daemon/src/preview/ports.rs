//! Which ports the proxy may reach: those a process of the agent's shell sessions listens
//! on, and nothing else. Not coved's own port, not the browser's, not another daemon of the
//! image: the kernel's socket table says who holds each listening socket.
//!
//! A listening socket is found in `/proc/net/tcp` and `tcp6` by its port; its inode is then
//! looked for among the descriptors of the agent's processes (the shells' descendants and
//! anything that still carries a session's tag after being reparented).

use std::collections::{HashMap, HashSet};
use std::fs;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::procs;

/// How long one reading of the tables answers for every port: a page load makes dozens of
/// requests, and a flood of requests to refused ports must not each read `/proc`.
const FRESH_FOR: Duration = Duration::from_millis(500);
/// TCP state `LISTEN` in `/proc/net/tcp`.
const LISTEN: &str = "0A";

/// What the proxy may do with a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortCheck {
    /// A process of the agent's listens; connect here.
    Agent(SocketAddr),
    /// Nothing listens on the port.
    NotListening,
    /// Something listens, but not a process the agent started.
    NotAgents,
}

/// One listening TCP socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Listening {
    addr: SocketAddr,
    inode: u64,
}

/// The agent's processes, as the shell manager knows them.
#[derive(Debug, Clone, Default)]
pub struct AgentProcesses {
    /// Pids of the sessions' shells.
    pub shells: Vec<i32>,
    /// The tag every session process inherits (`COVE_SESSION=<prefix>-<n>`).
    pub tag_prefix: String,
}

/// Checks ports against the socket table, read at most every [`FRESH_FOR`] for all ports at
/// once (callers that arrive during a reading wait for it).
#[derive(Default)]
pub struct PortGuard {
    reading: Mutex<Option<(Instant, HashMap<u16, PortCheck>)>>,
}

impl PortGuard {
    /// Whether the proxy may reach `port`, and where.
    pub fn check(&self, port: u16, agent: &AgentProcesses) -> PortCheck {
        let mut reading = self.reading.lock().unwrap_or_else(|p| p.into_inner());
        let fresh = reading
            .as_ref()
            .is_some_and(|(at, _)| at.elapsed() < FRESH_FOR);
        if !fresh {
            *reading = Some((Instant::now(), read_all(agent)));
        }
        reading
            .as_ref()
            .and_then(|(_, verdicts)| verdicts.get(&port).cloned())
            .unwrap_or(PortCheck::NotListening)
    }
}

/// Whether anything in the sandbox listens on TCP `port` (any address, IPv4 or IPv6).
pub fn is_listening(port: u16) -> bool {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|table| fs::read_to_string(table).ok())
        .any(|text| parse_table(&text).iter().any(|l| l.addr.port() == port))
}

/// The verdict on every port something listens on.
fn read_all(agent: &AgentProcesses) -> HashMap<u16, PortCheck> {
    let listening: Vec<Listening> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|table| fs::read_to_string(table).ok())
        .flat_map(|text| parse_table(&text))
        .collect();
    let wanted: HashSet<u64> = listening.iter().map(|l| l.inode).collect();
    let held = if wanted.is_empty() {
        HashSet::new()
    } else {
        inodes_held_by(&agent_pids(agent), &wanted)
    };
    let mut by_port: HashMap<u16, Vec<SocketAddr>> = HashMap::new();
    for l in &listening {
        let ours = by_port.entry(l.addr.port()).or_default();
        if held.contains(&l.inode) {
            ours.push(dial_address(l.addr));
        }
    }
    by_port
        .into_iter()
        .map(|(port, mut ours)| {
            // IPv4 loopback first: the usual dev server, and reachable for dual-stack ones too.
            ours.sort_by_key(|a| !a.ip().is_loopback() || a.is_ipv6());
            let verdict = match ours.first() {
                Some(addr) => PortCheck::Agent(*addr),
                None => PortCheck::NotAgents,
            };
            (port, verdict)
        })
        .collect()
}

/// The verdict on `port`, read now.
#[cfg(test)]
fn check_now(port: u16, agent: &AgentProcesses) -> PortCheck {
    read_all(agent)
        .remove(&port)
        .unwrap_or(PortCheck::NotListening)
}

/// Where to connect to reach a socket listening on `addr`.
fn dial_address(addr: SocketAddr) -> SocketAddr {
    let ip = match addr.ip() {
        IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, addr.port())
}

/// Every process of the agent's sessions.
fn agent_pids(agent: &AgentProcesses) -> HashSet<i32> {
    let table = procs::process_table();
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for p in &table {
        children.entry(p.ppid).or_default().push(p.pid);
    }
    let mut found = HashSet::new();
    let mut stack = agent.shells.clone();
    while let Some(pid) = stack.pop() {
        if found.insert(pid) {
            stack.extend(children.get(&pid).into_iter().flatten());
        }
    }
    if !agent.tag_prefix.is_empty() {
        let tag = format!("{}={}-", procs::SESSION_TAG_VAR, agent.tag_prefix);
        for p in &table {
            if !found.contains(&p.pid) && !p.is_zombie() && carries(p.pid, tag.as_bytes()) {
                found.insert(p.pid);
            }
        }
    }
    found
}

/// Whether `pid`'s environment has a variable starting with `prefix`.
fn carries(pid: i32, prefix: &[u8]) -> bool {
    fs::read(format!("/proc/{pid}/environ"))
        .map(|env| env.split(|b| *b == 0).any(|var| var.starts_with(prefix)))
        .unwrap_or(false)
}

/// Which of `wanted` (socket inodes) the processes `pids` hold open.
fn inodes_held_by(pids: &HashSet<i32>, wanted: &HashSet<u64>) -> HashSet<u64> {
    let mut held = HashSet::new();
    for pid in pids {
        let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(target) = fs::read_link(fd.path()) else {
                continue;
            };
            let inode = target
                .to_str()
                .and_then(|t| t.strip_prefix("socket:["))
                .and_then(|t| t.strip_suffix(']'))
                .and_then(|t| t.parse::<u64>().ok());
            if let Some(inode) = inode.filter(|i| wanted.contains(i)) {
                held.insert(inode);
            }
        }
    }
    held
}

/// The listening sockets of one `/proc/net/tcp` or `tcp6` table.
fn parse_table(text: &str) -> Vec<Listening> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.get(3) != Some(&LISTEN) {
                return None;
            }
            let addr = parse_address(fields.get(1)?)?;
            let inode = fields.get(9)?.parse().ok()?;
            Some(Listening { addr, inode })
        })
        .collect()
}

/// `0100007F:1F90` (IPv4) or 32 hex digits and a port (IPv6), as the kernel prints them:
/// each 32-bit word in the machine's byte order.
fn parse_address(field: &str) -> Option<SocketAddr> {
    let (ip, port) = field.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let words: Vec<u32> = (0..ip.len() / 8)
        .map(|i| u32::from_str_radix(ip.get(i * 8..i * 8 + 8)?, 16).ok())
        .collect::<Option<_>>()?;
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
    let ip = match bytes.len() {
        4 => IpAddr::from(<[u8; 4]>::try_from(bytes).ok()?),
        16 => IpAddr::from(<[u8; 16]>::try_from(bytes).ok()?),
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_tables_parse_into_listening_sockets() {
        let v4 = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0 100 0 0 10 0\n   1: 0100007F:1F91 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 4343 1 0 20 4 30 10 -1\n";
        let found = parse_table(v4);
        assert_eq!(
            found,
            vec![Listening {
                addr: "127.0.0.1:8080".parse().unwrap(),
                inode: 4242
            }]
        );
        let v6 = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 77 1 0 100 0 0 10 0\n   1: 00000000000000000000000000000000:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 78 1 0 100 0 0 10 0\n";
        let found = parse_table(v6);
        assert_eq!(found[0].addr, "[::1]:8080".parse().unwrap());
        assert_eq!(found[1].addr, "[::]:80".parse().unwrap());
    }

    #[test]
    fn wildcard_listeners_are_dialled_on_loopback() {
        assert_eq!(
            dial_address("0.0.0.0:80".parse().unwrap()),
            "127.0.0.1:80".parse().unwrap()
        );
        assert_eq!(
            dial_address("[::]:80".parse().unwrap()),
            "[::1]:80".parse().unwrap()
        );
        assert_eq!(
            dial_address("192.0.2.2:80".parse().unwrap()),
            "192.0.2.2:80".parse().unwrap()
        );
    }

    #[test]
    fn a_socket_of_this_process_is_not_the_agents() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let nobody = AgentProcesses::default();
        assert_eq!(check_now(port, &nobody), PortCheck::NotAgents);
        let me = AgentProcesses {
            shells: vec![std::process::id() as i32],
            tag_prefix: String::new(),
        };
        assert_eq!(
            check_now(port, &me),
            PortCheck::Agent(format!("127.0.0.1:{port}").parse().unwrap())
        );
        drop(listener);
        assert_eq!(check_now(port, &me), PortCheck::NotListening);
    }
}
