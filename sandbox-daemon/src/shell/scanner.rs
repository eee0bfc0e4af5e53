//! Turns raw PTY bytes into clean text: strips ANSI escape sequences and stray control
//! characters, folds CRLF and lone CR into LF, and picks out the session's end-of-command
//! markers. State carries across reads, so an escape sequence, a CRLF pair or a UTF-8
//! character split between two reads comes out the same as if it had arrived whole.

/// OSC number coved's shell hook uses for its end-of-command marker.
pub const MARKER_OSC: &str = "7777";

/// Longest escape sequence body kept before the sequence is abandoned. Bounds both memory
/// and how much output a malformed sequence can swallow.
const MAX_SEQUENCE: usize = 512;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Ground,
    /// A CR was seen; a following LF belongs to it.
    CarriageReturn,
    Escape,
    EscapeIntermediate,
    Csi,
    Osc,
    OscEscape,
    /// DCS, SOS, PM or APC: a string ended by ST or BEL.
    ControlString,
    ControlStringEscape,
}

/// Stateful PTY output scanner for one session.
#[derive(Debug)]
pub struct Scanner {
    state: State,
    marker_prefix: Vec<u8>,
    osc: Vec<u8>,
    sequence_len: usize,
}

impl Scanner {
    /// A scanner that recognises markers `ESC ] 7777 ; <secret> ; <seq> BEL`.
    pub fn new(secret: &str) -> Self {
        Scanner {
            state: State::Ground,
            marker_prefix: format!("{MARKER_OSC};{secret};").into_bytes(),
            osc: Vec::new(),
            sequence_len: 0,
        }
    }

    /// Appends the clean text of `input` to `out` and the markers it completes to `markers`,
    /// each as (length of `out` when the marker was seen, command sequence number).
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>, markers: &mut Vec<(usize, u64)>) {
        for &byte in input {
            self.step(byte, out, markers);
        }
    }

    fn step(&mut self, byte: u8, out: &mut Vec<u8>, markers: &mut Vec<(usize, u64)>) {
        match self.state {
            State::Ground => self.ground(byte, out),
            State::CarriageReturn => {
                // CRLF and a lone CR (progress bars redrawing a line) both end a line.
                out.push(b'\n');
                self.state = State::Ground;
                if byte != b'\n' {
                    self.ground(byte, out);
                }
            }
            State::Escape => self.escape(byte),
            State::EscapeIntermediate => {
                if (0x30..=0x7e).contains(&byte) {
                    self.state = State::Ground;
                } else if !(0x20..=0x2f).contains(&byte) {
                    self.abandon(byte, out);
                }
            }
            State::Csi => {
                if (0x40..=0x7e).contains(&byte) {
                    self.state = State::Ground;
                } else if byte == 0x1b {
                    self.begin_escape();
                } else if (0x20..=0x3f).contains(&byte) {
                    self.grow_sequence();
                } else {
                    self.abandon(byte, out);
                }
            }
            State::Osc => match byte {
                0x07 => self.finish_osc(out, markers),
                0x1b => self.state = State::OscEscape,
                _ => {
                    if self.osc.len() < MAX_SEQUENCE {
                        self.osc.push(byte);
                    }
                    self.grow_sequence();
                }
            },
            State::OscEscape => {
                if byte == b'\\' {
                    self.finish_osc(out, markers);
                } else {
                    self.osc.clear();
                    self.begin_escape();
                    self.escape(byte);
                }
            }
            State::ControlString => match byte {
                0x07 => self.state = State::Ground,
                0x1b => self.state = State::ControlStringEscape,
                _ => self.grow_sequence(),
            },
            State::ControlStringEscape => {
                if byte == b'\\' {
                    self.state = State::Ground;
                } else {
                    self.state = State::ControlString;
                    self.grow_sequence();
                }
            }
        }
    }

    fn ground(&mut self, byte: u8, out: &mut Vec<u8>) {
        match byte {
            0x1b => self.begin_escape(),
            b'\r' => self.state = State::CarriageReturn,
            b'\n' | b'\t' => out.push(byte),
            // Other C0 controls and DEL (bells, backspaces, shift-ins) carry no text. Bytes
            // 0x80 and up are UTF-8, never 8-bit C1 controls.
            0x00..=0x1f | 0x7f => {}
            _ => out.push(byte),
        }
    }

    fn begin_escape(&mut self) {
        self.state = State::Escape;
        self.sequence_len = 0;
    }

    fn escape(&mut self, byte: u8) {
        self.state = match byte {
            b'[' => State::Csi,
            b']' => {
                self.osc.clear();
                State::Osc
            }
            b'P' | b'X' | b'^' | b'_' => State::ControlString,
            0x20..=0x2f => State::EscapeIntermediate,
            0x1b => State::Escape,
            _ => State::Ground,
        };
    }

    /// Counts a byte of a sequence body; an overlong sequence is treated as plain text
    /// from here on, so garbage cannot hide the rest of the output.
    fn grow_sequence(&mut self) {
        self.sequence_len += 1;
        if self.sequence_len > MAX_SEQUENCE {
            self.state = State::Ground;
            self.osc.clear();
        }
    }

    fn abandon(&mut self, byte: u8, out: &mut Vec<u8>) {
        self.state = State::Ground;
        self.ground(byte, out);
    }

    fn finish_osc(&mut self, out: &[u8], markers: &mut Vec<(usize, u64)>) {
        self.state = State::Ground;
        if let Some(seq) = self.osc.strip_prefix(self.marker_prefix.as_slice())
            && let Some(seq) = std::str::from_utf8(seq).ok().and_then(|s| s.parse().ok())
        {
            markers.push((out.len(), seq));
        }
        self.osc.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_in_pieces(input: &[u8], piece: usize) -> (String, Vec<(usize, u64)>) {
        let mut scanner = Scanner::new("s3cret");
        let mut out = Vec::new();
        let mut markers = Vec::new();
        for chunk in input.chunks(piece.max(1)) {
            scanner.feed(chunk, &mut out, &mut markers);
        }
        (String::from_utf8(out).unwrap(), markers)
    }

    fn scan(input: &[u8]) -> (String, Vec<(usize, u64)>) {
        let whole = scan_in_pieces(input, input.len());
        for piece in 1..8 {
            assert_eq!(scan_in_pieces(input, piece), whole, "piece size {piece}");
        }
        whole
    }

    #[test]
    fn strips_colours_cursor_moves_and_titles() {
        let (text, _) = scan(b"\x1b[1;31mred\x1b[0m \x1b[2K\x1b[?25lok\x1b]0;title\x07!\x1b(B");
        assert_eq!(text, "red ok!");
    }

    #[test]
    fn folds_crlf_and_lone_cr_into_lf() {
        let (text, _) = scan(b"a\r\nb\r10%\r20%\nc\r\n");
        assert_eq!(text, "a\nb\n10%\n20%\nc\n");
    }

    #[test]
    fn drops_control_characters_but_keeps_tabs_and_utf8() {
        let (text, _) = scan("a\x07b\x08c\td é€😀".as_bytes());
        assert_eq!(text, "abc\td é€😀");
    }

    #[test]
    fn finds_markers_with_the_right_secret_only() {
        let input =
            b"out\n\x1b]7777;s3cret;42\x07after\x1b]7777;wrong;43\x07\x1b]7777;s3cret;44\x1b\\";
        let (text, markers) = scan(input);
        assert_eq!(text, "out\nafter");
        assert_eq!(markers, vec![(4, 42), (9, 44)]);
    }

    #[test]
    fn an_unterminated_sequence_cannot_swallow_everything() {
        let mut input = b"\x1b]".to_vec();
        input.extend(std::iter::repeat_n(b'x', MAX_SEQUENCE + 10));
        input.extend(b"\nvisible");
        let (text, _) = scan(&input);
        assert!(text.ends_with("\nvisible"), "{text:?}");
    }
}
