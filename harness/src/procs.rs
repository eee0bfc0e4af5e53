//! Reading `/proc` about a daemon and what it started.

use std::collections::{HashMap, HashSet};
use std::fs;

/// One process, as `/proc/<pid>/stat` and `cmdline` describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proc {
    pub pid: i32,
    pub ppid: i32,
    pub state: char,
    pub cmdline: String,
}

impl Proc {
    /// Dead, waiting to be reaped.
    pub fn is_zombie(&self) -> bool {
        self.state == 'Z'
    }
}

/// Every process now.
pub fn all() -> Vec<Proc> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let e = e.ok()?;
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let stat = fs::read_to_string(e.path().join("stat")).ok()?;
        let rest = &stat[stat.rfind(')')? + 1..];
        let mut f = rest.split_whitespace();
        let state = f.next()?.chars().next()?;
        let ppid = f.next()?.parse().ok()?;
        let cmdline = fs::read(e.path().join("cmdline"))
            .map(|b| {
                String::from_utf8_lossy(&b)
                    .replace('\0', " ")
                    .trim()
                    .to_string()
            })
            .unwrap_or_default();
        Some(Proc {
            pid,
            ppid,
            state,
            cmdline,
        })
    })
    .collect()
}

/// Every descendant of `root` (not `root` itself).
pub fn descendants(root: i32) -> Vec<Proc> {
    let table = all();
    let mut children: HashMap<i32, Vec<&Proc>> = HashMap::new();
    for p in &table {
        children.entry(p.ppid).or_default().push(p);
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(pid) = stack.pop() {
        for child in children.get(&pid).into_iter().flatten() {
            if seen.insert(child.pid) {
                out.push((*child).clone());
                stack.push(child.pid);
            }
        }
    }
    out
}

/// Processes whose command line contains `needle`.
pub fn matching(needle: &str) -> Vec<Proc> {
    all()
        .into_iter()
        .filter(|p| p.cmdline.contains(needle))
        .collect()
}

/// A `/proc/<pid>/status` figure in KiB (`VmRSS`, `VmHWM`, ...).
pub fn status_kib(pid: i32, field: &str) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}
