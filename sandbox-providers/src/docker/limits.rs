//! What a sandbox container may use, and sizes as people write them.

/// What the engine lets a sandbox container use (none: no limit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Limits {
    pub memory_bytes: Option<i64>,
    /// CPUs in billionths.
    pub nano_cpus: Option<i64>,
    pub processes: Option<i64>,
    /// Bytes of its own filesystem (the engine's `size` storage option).
    pub disk_bytes: Option<i64>,
}

impl Limits {
    /// `2 CPUs, 4 GiB, 4096 processes`.
    pub fn line(&self) -> String {
        let cpus = self
            .nano_cpus
            .map_or("any CPUs".into(), |n| match n as f64 / 1e9 {
                1.0 => "1 CPU".to_string(),
                cpus => format!("{cpus} CPUs"),
            });
        let memory = self.memory_bytes.map_or("any memory".into(), bytes);
        let processes = self
            .processes
            .map_or("any processes".into(), |p| format!("{p} processes"));
        match self.disk_bytes {
            Some(b) => format!("{cpus}, {memory}, {processes}, {} disk", bytes(b)),
            None => format!("{cpus}, {memory}, {processes}"),
        }
    }
}

/// `4.0 GiB`, `512 MiB`.
fn bytes(b: i64) -> String {
    let gib = b as f64 / (1024.0 * 1024.0 * 1024.0);
    if gib >= 1.0 {
        format!("{gib:.1} GiB")
    } else {
        format!("{} MiB", b / (1024 * 1024))
    }
}

/// Reads a size such as `512m`, `2g`, `1073741824`.
pub fn parse_size(raw: &str) -> Option<i64> {
    let raw = raw.trim().to_ascii_lowercase();
    let (digits, unit) = match raw.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(at) => raw.split_at(at),
        None => (raw.as_str(), ""),
    };
    let value: f64 = digits.parse().ok()?;
    let factor = match unit.trim_end_matches('b').trim_end_matches('i') {
        "" => 1.0,
        "k" => 1024.0,
        "m" => 1024.0 * 1024.0,
        "g" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let bytes = value * factor;
    (1.0..9.0e18).contains(&bytes).then_some(bytes as i64)
}
