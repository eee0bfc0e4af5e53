//! Random tokens and names.

/// `bytes` random bytes from the OS, as lowercase hex. Tokens are made of these, so without
/// a source of randomness (no `getrandom(2)`, no `/dev/urandom`) the daemon stops rather than
/// hand out guessable ones.
pub fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    if let Err(e) = getrandom::fill(&mut buf) {
        tracing::error!(error = %e, "the system has no source of randomness; stopping");
        std::process::abort();
    }
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_hex_has_the_asked_length_and_varies() {
        let a = random_hex(16);
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, random_hex(16));
    }
}
