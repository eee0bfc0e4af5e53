//! The daemon's hold on every process it starts: finding all of a shell session's processes
//! (including `setsid` escapees and double-forked daemons), killing them, and reaping the
//! orphans that are reparented to the daemon.
//!
//! coved makes itself a child subreaper, so orphans of its sessions land on it rather than on
//! init, and it must reap them: it may well be PID 1 of a container.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::sync::Mutex;
use std::time::Duration;

use rustix::process::{
    Pid, Signal, WaitOptions, getpid, kill_process, set_child_subreaper, waitpid,
};

/// Environment variable every session's processes inherit; its value names the session.
pub const SESSION_TAG_VAR: &str = "COVE_SESSION";

/// One row of the process table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessInfo {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    pub sid: i32,
    pub state: char,
}

impl ProcessInfo {
    /// Dead and waiting to be reaped.
    pub fn is_zombie(&self) -> bool {
        self.state == 'Z' || self.state == 'X'
    }
}

/// Parses `/proc/<pid>/stat`; the command name may itself hold spaces and parentheses.
pub fn parse_stat(pid: i32, stat: &str) -> Option<ProcessInfo> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    let sid = fields.next()?.parse().ok()?;
    Some(ProcessInfo {
        pid,
        ppid,
        pgrp,
        sid,
        state,
    })
}

/// Every process visible in `/proc` right now.
pub fn process_table() -> Vec<ProcessInfo> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|entry| {
        let entry = entry.ok()?;
        let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
        let stat = fs::read_to_string(entry.path().join("stat")).ok()?;
        parse_stat(pid, &stat)
    })
    .collect()
}

fn has_session_tag(pid: i32, tag: &str) -> bool {
    let Ok(environ) = fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let wanted = format!("{SESSION_TAG_VAR}={tag}");
    environ
        .split(|b| *b == 0)
        .any(|var| var == wanted.as_bytes())
}

/// Living processes that belong to the session whose shell is `shell_pid`: its descendants,
/// anything in its terminal session, and anything still carrying its tag in the environment
/// (which is how `setsid` + double-fork escapees are found after being reparented).
pub fn session_members(shell_pid: i32, tag: &str) -> Vec<i32> {
    let me = getpid().as_raw_pid();
    let table = process_table();
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for p in &table {
        children.entry(p.ppid).or_default().push(p.pid);
    }
    let mut members = HashSet::new();
    let mut stack = vec![shell_pid];
    while let Some(pid) = stack.pop() {
        if members.insert(pid) {
            stack.extend(children.get(&pid).into_iter().flatten());
        }
    }
    for p in &table {
        if p.sid == shell_pid || p.pgrp == shell_pid || has_session_tag(p.pid, tag) {
            members.insert(p.pid);
        }
    }
    let alive: HashSet<i32> = table
        .iter()
        .filter(|p| !p.is_zombie())
        .map(|p| p.pid)
        .collect();
    members
        .into_iter()
        .filter(|pid| *pid != me && *pid > 1 && alive.contains(pid))
        .collect()
}

/// SIGKILLs every member of the session until none is left (new ones may fork while the
/// first are dying). Returns how many distinct processes were killed. Blocks briefly.
pub fn kill_session(shell_pid: i32, tag: &str) -> u64 {
    let mut killed = HashSet::new();
    for _ in 0..100 {
        let members = session_members(shell_pid, tag);
        if members.is_empty() {
            break;
        }
        for pid in members {
            if let Some(p) = Pid::from_raw(pid)
                && kill_process(p, Signal::KILL).is_ok()
            {
                killed.insert(pid);
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    killed.len() as u64
}

/// The children coved spawned and waits for itself; the reaper must leave their exit status
/// to their owners.
#[derive(Debug, Default)]
pub struct ChildRegistry {
    owned: Mutex<HashSet<i32>>,
}

impl ChildRegistry {
    /// Marks `pid` as waited for by its spawner.
    pub fn register(&self, pid: i32) {
        if let Ok(mut owned) = self.owned.lock() {
            owned.insert(pid);
        }
    }

    /// Hands `pid` back to the reaper once its owner has waited for it.
    pub fn unregister(&self, pid: i32) {
        if let Ok(mut owned) = self.owned.lock() {
            owned.remove(&pid);
        }
    }

    fn is_owned(&self, pid: i32) -> bool {
        self.owned.lock().map(|o| o.contains(&pid)).unwrap_or(true)
    }

    /// Waits for every zombie child that nobody else owns. Returns how many were reaped.
    pub fn reap_orphans(&self) -> usize {
        let me = getpid().as_raw_pid();
        let mut reaped = 0;
        for p in process_table() {
            if p.ppid != me || !p.is_zombie() || self.is_owned(p.pid) {
                continue;
            }
            if let Some(pid) = Pid::from_raw(p.pid)
                && matches!(waitpid(Some(pid), WaitOptions::NOHANG), Ok(Some(_)))
            {
                reaped += 1;
            }
        }
        reaped
    }
}

/// Makes coved the reaper of its descendants' orphans.
pub fn become_subreaper() -> std::io::Result<()> {
    set_child_subreaper(Some(getpid())).map_err(std::io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_lines_with_awkward_names() {
        let stat = "1234 (a) b (c)) S 1 1234 1234 34816 1234 4194560 100 0 0 0";
        let p = parse_stat(1234, stat).unwrap();
        assert_eq!(
            p,
            ProcessInfo {
                pid: 1234,
                ppid: 1,
                pgrp: 1234,
                sid: 1234,
                state: 'S'
            }
        );
        assert!(!p.is_zombie());
        assert!(parse_stat(1, "garbage").is_none());
    }

    #[test]
    fn the_process_table_holds_this_process() {
        let me = getpid().as_raw_pid();
        let table = process_table();
        assert!(table.iter().any(|p| p.pid == me && !p.is_zombie()));
    }
}
