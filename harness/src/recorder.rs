//! A listener that keeps the head of every request it is sent and answers 404: a stand-in
//! for a place something must never reach (a key's destination, another sandbox), so a test
//! reads what reached it.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A running recorder on a free port of 127.0.0.1.
pub struct Recorder {
    pub port: u16,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    /// Listens, on a thread of its own, for as long as the test process runs.
    pub fn start() -> std::io::Result<Recorder> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let keep = heads.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                let mut buf = vec![0u8; 8192];
                let n = stream.read(&mut buf).unwrap_or(0);
                if let Ok(mut heads) = keep.lock() {
                    heads.push(String::from_utf8_lossy(&buf[..n]).into_owned());
                }
                let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
            }
        });
        Ok(Recorder { port, heads })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The heads received so far, oldest first.
    pub fn heads(&self) -> Vec<String> {
        self.heads.lock().map(|h| h.clone()).unwrap_or_default()
    }
}
