//! A session as a terminal recording (asciicast v2): each command as it was given (after a
//! `$ ` prompt) and its output when it arrived, kept as marks into the session's output log
//! (no byte is held twice), so the recording covers what the log still holds and costs a
//! few bytes per write. It is the session's text as the agent reads it: colours and cursor
//! moves are gone, a carriage return is a new line.

use std::collections::VecDeque;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::output::{OutputLog, complete_utf8_prefix};

/// Most marks kept: the oldest go first (their output is then played with the next mark).
const MOST_MARKS: usize = 20_000;

/// Most commands kept (the oldest go first), and the most of each one's text.
const MOST_COMMANDS: usize = 1_000;
const COMMAND_CHARS: usize = 1_024;

/// Writes closer together than this are one event of the recording.
const MERGE_MS: u64 = 10;

/// When each stretch of a session's output arrived.
#[derive(Debug)]
pub struct Timeline {
    began: Instant,
    /// Seconds since the Unix epoch at `began`.
    began_unix: u64,
    /// (offset in the log where a write began, milliseconds since `began`).
    marks: VecDeque<(u64, u64)>,
    /// (offset in the log where a command's output begins, when it was given, the command).
    commands: VecDeque<(u64, u64, String)>,
}

impl Default for Timeline {
    fn default() -> Self {
        Self::new()
    }
}

impl Timeline {
    /// A timeline starting now.
    pub fn new() -> Timeline {
        Timeline {
            began: Instant::now(),
            began_unix: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            marks: VecDeque::new(),
            commands: VecDeque::new(),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.began.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Notes that `command` was given now, its output to begin at `offset`.
    pub fn command(&mut self, offset: u64, command: &str) {
        if self.commands.len() == MOST_COMMANDS {
            self.commands.pop_front();
        }
        let text: String = command.chars().take(COMMAND_CHARS).collect();
        self.commands.push_back((offset, self.now_ms(), text));
    }

    /// Notes that output written at `offset` arrived now; what is before `oldest` (the
    /// log's start) is forgotten.
    pub fn mark(&mut self, offset: u64, oldest: u64) {
        // One mark before the log's start stays: its time is that of the oldest bytes.
        while self.marks.get(1).is_some_and(|&(next, _)| next <= oldest) {
            self.marks.pop_front();
        }
        while self.commands.front().is_some_and(|&(at, _, _)| at < oldest) {
            self.commands.pop_front();
        }
        let ms = self.now_ms();
        if let Some(&(_, last)) = self.marks.back()
            && ms.saturating_sub(last) < MERGE_MS
        {
            return;
        }
        if self.marks.len() == MOST_MARKS {
            self.marks.pop_front();
        }
        self.marks.push_back((offset, ms));
    }

    /// The recording of what `log` still holds, on a `cols`×`rows` terminal.
    pub fn asciicast(&self, log: &OutputLog, cols: u16, rows: u16) -> String {
        let start = log.start();
        let end = log.end();
        // Marks before what the log holds play their bytes at the first kept one's time;
        // commands whose output is gone are left out.
        let marks: Vec<(u64, u64)> = self
            .marks
            .iter()
            .map(|&(offset, ms)| (offset.max(start), ms))
            .collect();
        let mut commands = self
            .commands
            .iter()
            .filter(|(offset, _, _)| *offset >= start)
            .peekable();
        let first_ms = match (marks.first(), commands.peek()) {
            (Some(&(_, a)), Some(&&(_, b, _))) => a.min(b),
            (Some(&(_, a)), None) => a,
            (None, Some(&&(_, b, _))) => b,
            (None, None) => 0,
        };
        let header = serde_json::json!({
            "version": 2,
            "width": cols,
            "height": rows,
            "timestamp": self.began_unix + first_ms / 1000,
            "env": {"TERM": "xterm-256color", "SHELL": "/bin/bash"},
        });
        let mut out = header.to_string();
        out.push('\n');
        let mut event = |ms: u64, text: &str| {
            let seconds = ms.saturating_sub(first_ms) as f64 / 1000.0;
            out.push_str(&serde_json::json!([seconds, "o", text]).to_string());
            out.push('\n');
        };
        let mut carry: Vec<u8> = Vec::new();
        for (i, &(from, ms)) in marks.iter().enumerate() {
            while let Some((_, at, command)) = commands.next_if(|(offset, _, _)| *offset <= from) {
                event(*at, &format!("$ {}\r\n", command.replace('\n', "\r\n")));
            }
            let to = marks.get(i + 1).map_or(end, |&(next, _)| next).max(from);
            carry.extend(log.slice(from, to));
            // A character cut between two writes is played whole with the later one.
            let whole = if to == end {
                carry.len()
            } else {
                complete_utf8_prefix(&carry)
            };
            if whole == 0 {
                continue;
            }
            // The log keeps bare line feeds; a terminal needs the carriage return too.
            let text = String::from_utf8_lossy(&carry[..whole]).replace('\n', "\r\n");
            carry.drain(..whole);
            event(ms, &text);
        }
        for (_, at, command) in commands {
            event(*at, &format!("$ {}\r\n", command.replace('\n', "\r\n")));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recording_plays_the_logs_bytes_in_their_writes_with_characters_whole() {
        let mut log = OutputLog::new(1024);
        let mut timeline = Timeline::new();
        timeline.command(log.end(), "echo héllo");
        timeline.mark(log.end(), log.start());
        log.append(b"h\xC3");
        std::thread::sleep(std::time::Duration::from_millis(20));
        timeline.mark(log.end(), log.start());
        log.append(b"\xA9llo\n");
        let cast = timeline.asciicast(&log, 80, 24);
        let lines: Vec<serde_json::Value> = cast
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0]["version"], 2);
        assert_eq!(lines[0]["width"], 80);
        assert_eq!(lines[1][1], "o");
        assert_eq!(lines[1][2], "$ echo héllo\r\n");
        assert_eq!(lines[2][2], "h");
        assert_eq!(lines[3][2], "éllo\r\n");
        assert!(lines[3][0].as_f64().unwrap() >= 0.02, "{}", lines[3]);
        assert_eq!(lines.len(), 4);
    }

    #[test]
    fn what_the_log_forgot_is_not_played_and_time_starts_at_what_it_holds() {
        let mut log = OutputLog::new(8);
        let mut timeline = Timeline::new();
        timeline.mark(log.end(), log.start());
        log.append(b"0123456789");
        std::thread::sleep(std::time::Duration::from_millis(20));
        timeline.mark(log.end(), log.start());
        log.append(b"ab");
        let cast = timeline.asciicast(&log, 80, 24);
        let events: Vec<serde_json::Value> = cast
            .lines()
            .skip(1)
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(events[0], serde_json::json!([0.0, "o", "456789"]));
        assert_eq!(events[1][2], "ab");
    }
}
