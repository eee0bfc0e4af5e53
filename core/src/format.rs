//! Numbers as people read them, shared by the engine's messages and the front ends.

/// `12345` as `12,345`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A span of seconds as people say it: `45 s`, `3 min`, `2 h 5 min`.
pub fn duration_words(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs} s"),
        60..3600 => format!("{} min", secs / 60),
        _ if (secs % 3600) / 60 == 0 => format!("{} h", secs / 3600),
        _ => format!("{} h {} min", secs / 3600, (secs % 3600) / 60),
    }
}

#[cfg(test)]
mod duration_tests {
    use super::duration_words;

    #[test]
    fn spans_read_as_people_say_them() {
        assert_eq!(duration_words(45), "45 s");
        assert_eq!(duration_words(150), "2 min");
        assert_eq!(duration_words(7200), "2 h");
        assert_eq!(duration_words(7500), "2 h 5 min");
    }
}
