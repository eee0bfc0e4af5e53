//! A session's output history: the newest bytes within a fixed budget, addressed by offsets
//! that keep growing, and rendering of a range under a size cap (head and tail kept around
//! an omission marker, never cutting a UTF-8 character in half).

use std::collections::VecDeque;

/// The most recent output of one session, with absolute byte offsets.
#[derive(Debug)]
pub struct OutputLog {
    bytes: VecDeque<u8>,
    /// Offset of `bytes[0]`.
    start: u64,
    capacity: usize,
}

/// A rendered range of output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub text: String,
    pub truncated: bool,
}

impl OutputLog {
    /// An empty log keeping at most `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        OutputLog {
            bytes: VecDeque::new(),
            start: 0,
            capacity: capacity.max(1),
        }
    }

    /// Offset of the oldest byte still held.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// Offset just past the newest byte.
    pub fn end(&self) -> u64 {
        self.start + self.bytes.len() as u64
    }

    /// Appends output, forgetting the oldest bytes beyond the capacity.
    pub fn append(&mut self, data: &[u8]) {
        let keep = if data.len() > self.capacity {
            self.start += (self.bytes.len() + data.len() - self.capacity) as u64;
            self.bytes.clear();
            &data[data.len() - self.capacity..]
        } else {
            let overflow = (self.bytes.len() + data.len()).saturating_sub(self.capacity);
            self.bytes.drain(..overflow);
            self.start += overflow as u64;
            data
        };
        self.bytes.extend(keep);
    }

    /// Whether the newest bytes are `suffix`.
    pub fn ends_with(&self, suffix: &[u8]) -> bool {
        self.bytes.len() >= suffix.len()
            && self
                .bytes
                .range(self.bytes.len() - suffix.len()..)
                .eq(suffix.iter())
    }

    /// The end offset, moved back before a UTF-8 character whose last bytes have not arrived.
    pub fn stable_end(&self) -> u64 {
        let len = self.bytes.len();
        let tail: Vec<u8> = self.bytes.range(len.saturating_sub(4)..).copied().collect();
        self.end() - (tail.len() - complete_utf8_prefix(&tail)) as u64
    }

    /// Bytes of `[from, to)` that are still held.
    pub fn slice(&self, from: u64, to: u64) -> Vec<u8> {
        self.copy_range(from, to)
    }

    /// Bytes of `[from, to)` that are still held.
    fn copy_range(&self, from: u64, to: u64) -> Vec<u8> {
        let from = from.clamp(self.start, self.end());
        let to = to.clamp(from, self.end());
        let (a, b) = ((from - self.start) as usize, (to - self.start) as usize);
        self.bytes.range(a..b).copied().collect()
    }

    /// Renders `[from, to)` in at most about `cap` bytes. `head` holds the first bytes of the
    /// range kept aside (a command's opening output), used when the log has moved past them.
    pub fn render(&self, from: u64, to: u64, head: &[u8], cap: usize) -> Rendered {
        let to = to.min(self.end());
        let from = from.min(to);
        let total = (to - from) as usize;
        let head_covers_gap = from + head.len() as u64 >= self.start;
        if total <= cap && (from >= self.start || head_covers_gap) {
            let mut bytes = head[..head.len().min(total)].to_vec();
            bytes.extend(self.copy_range(from + bytes.len() as u64, to));
            return Rendered {
                text: String::from_utf8_lossy(&bytes).into_owned(),
                truncated: false,
            };
        }

        let head_budget = cap / 2;
        let mut first = if from >= self.start {
            self.copy_range(from, from + head_budget.min(total) as u64)
        } else {
            head[..head.len().min(head_budget).min(total)].to_vec()
        };
        first.truncate(complete_utf8_prefix(&first));
        let tail_from = to
            .saturating_sub((cap - head_budget) as u64)
            .max(self.start)
            .max(from + first.len() as u64);
        let mut last = self.copy_range(tail_from, to);
        let skip = leading_continuation_bytes(&last);
        last.drain(..skip);
        let omitted = total - first.len() - last.len();
        let mut text = String::from_utf8_lossy(&first).into_owned();
        if omitted > 0 {
            text.push_str(&format!("\n[... {omitted} bytes omitted ...]\n"));
        }
        text.push_str(&String::from_utf8_lossy(&last));
        Rendered {
            text,
            truncated: omitted > 0,
        }
    }
}

/// Length of `bytes` without a trailing UTF-8 sequence that is still incomplete.
pub fn complete_utf8_prefix(bytes: &[u8]) -> usize {
    let len = bytes.len();
    let mut lead = len;
    while lead > 0 && len - lead < 4 {
        lead -= 1;
        if bytes[lead] & 0xc0 != 0x80 {
            break;
        }
    }
    if lead == len {
        return len;
    }
    let needed = match bytes[lead] {
        b if b < 0x80 => 1,
        b if b >> 5 == 0b110 => 2,
        b if b >> 4 == 0b1110 => 3,
        b if b >> 3 == 0b11110 => 4,
        _ => return len,
    };
    if len - lead < needed { lead } else { len }
}

/// How many UTF-8 continuation bytes open `bytes` (at most 3): the tail of a character cut off.
fn leading_continuation_bytes(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take(3)
        .take_while(|b| *b & 0xc0 == 0x80)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_bytes_and_counts_offsets() {
        let mut log = OutputLog::new(8);
        log.append(b"0123456");
        log.append(b"789");
        assert_eq!((log.start(), log.end()), (2, 10));
        log.append(b"abcdefghijkl");
        assert_eq!((log.start(), log.end()), (14, 22));
        assert_eq!(log.render(14, 22, &[], 100).text, "efghijkl");
    }

    #[test]
    fn small_ranges_render_whole() {
        let mut log = OutputLog::new(100);
        log.append(b"hello world");
        let r = log.render(6, 11, &[], 100);
        assert_eq!(
            r,
            Rendered {
                text: "world".into(),
                truncated: false
            }
        );
    }

    #[test]
    fn large_ranges_keep_head_and_tail() {
        let mut log = OutputLog::new(1000);
        let data: Vec<u8> = (0..500).map(|i| b'a' + (i % 26) as u8).collect();
        log.append(&data);
        let r = log.render(0, 500, &[], 100);
        assert!(r.truncated);
        assert!(
            r.text
                .starts_with(std::str::from_utf8(&data[..50]).unwrap())
        );
        assert!(r.text.ends_with(std::str::from_utf8(&data[450..]).unwrap()));
        assert!(r.text.contains("[... 400 bytes omitted ...]"), "{}", r.text);
    }

    #[test]
    fn the_head_comes_from_the_side_buffer_once_the_log_moved_on() {
        let mut log = OutputLog::new(10);
        log.append(b"HEAD-");
        log.append(&[b'x'; 100]);
        log.append(b"-TAIL");
        let r = log.render(0, log.end(), b"HEAD-xxx", 10);
        assert_eq!(r.text, "HEAD-\n[... 100 bytes omitted ...]\n-TAIL");
        assert!(r.truncated);
    }

    #[test]
    fn ranges_the_log_forgot_are_reported_as_omitted() {
        let mut log = OutputLog::new(4);
        log.append(b"abcdefgh");
        let r = log.render(0, 8, &[], 100);
        assert!(r.truncated);
        assert_eq!(r.text, "\n[... 4 bytes omitted ...]\nefgh");
    }

    #[test]
    fn cuts_never_split_a_character() {
        let text = "é€😀".repeat(200);
        let mut log = OutputLog::new(10_000);
        log.append(text.as_bytes());
        for cap in 1..40 {
            let r = log.render(0, log.end(), &[], cap);
            assert!(!r.text.contains('\u{fffd}'), "cap {cap}: {}", r.text);
        }
    }

    #[test]
    fn stable_end_waits_for_the_rest_of_a_character() {
        let mut log = OutputLog::new(100);
        let euro = "€".as_bytes();
        log.append(b"ab");
        log.append(&euro[..2]);
        assert_eq!(log.stable_end(), 2);
        log.append(&euro[2..]);
        assert_eq!(log.stable_end(), 5);
    }

    #[test]
    fn complete_prefix_handles_every_width() {
        for ch in ["a", "é", "€", "😀"] {
            let b = ch.as_bytes();
            assert_eq!(complete_utf8_prefix(b), b.len());
            for cut in 1..b.len() {
                assert_eq!(complete_utf8_prefix(&b[..cut]), 0, "{ch} cut at {cut}");
            }
        }
        assert_eq!(complete_utf8_prefix(&[0xff]), 1);
    }
}
