//! Pages are read (HTML into Markdown, PDFs into text) in a child process of coved's own
//! binary (`coved read-page`), never in the daemon: a hostile page can nest elements until a
//! recursive walk overflows its stack, or inflate a few kilobytes into gigabytes, and either
//! would take every shell, the browser and a takeover down with the daemon. The child has an
//! address-space and a CPU limit, the daemon a deadline on it and at most [`TURNS`] of them
//! at once, so the worst a page can do is fail its own fetch.

use std::io::{Read as _, Write as _};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use cove_protocol::web::FetchFormat;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::download::{self, Kind};
use super::{WebError, bounds, extract, pdf};
use crate::procs::ChildRegistry;

/// Readers running at once; more wait their turn.
pub const TURNS: usize = 2;
/// Address space one reader may use.
pub const MEMORY_LIMIT: u64 = 1 << 30;
/// CPU seconds one reader may use.
const CPU_LIMIT_SECS: u64 = 30;
/// How long the daemon waits for a reader before killing it.
const DEADLINE: Duration = Duration::from_secs(45);
/// Stack of the reader's working thread: deep enough for any page within the bounds.
const STACK_BYTES: usize = 64 << 20;
/// Bytes of a failed reader's stderr kept to say why it failed.
const STDERR_KEPT: usize = 4096;
/// Characters of text a reader gives for one page (past it the rest is cut, and said).
pub const MAX_TEXT_CHARS: usize = 8 << 20;
/// Bytes of a reader's answer read at most (its text, as JSON).
const MAX_ANSWER_BYTES: u64 = 64 << 20;

/// What a page is and how to read it, as the child is told on its command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum PageKind {
    Html,
    Pdf,
}

/// The child's command line: `coved read-page …`, the page on stdin.
#[derive(Debug, Clone, clap::Args)]
pub struct ReadArgs {
    #[arg(long, value_enum)]
    pub kind: PageKind,
    #[arg(long, default_value = "markdown", value_parser = parse_format)]
    pub format: FetchFormat,
    /// Where the page came from (relative links are made absolute against it).
    #[arg(long)]
    pub url: String,
    /// The page's `Content-Type`, for its charset.
    #[arg(long, default_value = "")]
    pub content_type: String,
    /// Answer `needs_scripts` instead of reading a page that only scripts would fill.
    #[arg(long)]
    pub check_scripts: bool,
}

fn parse_format(raw: &str) -> Result<FetchFormat, String> {
    serde_json::from_value(serde_json::Value::String(raw.to_string()))
        .map_err(|_| format!("{raw:?} is not markdown, text or html"))
}

/// What the child answers on stdout.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Answer {
    NeedsScripts,
    Read { title: String, content: String },
    Unreadable(String),
}

/// What reading a page gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Read {
    /// Only scripts would fill it: render it, then read what the browser shows.
    NeedsScripts,
    Read {
        title: String,
        content: String,
    },
}

/// Starts readers and keeps them within their limits.
pub struct Reader {
    exe: Option<PathBuf>,
    turns: tokio::sync::Semaphore,
    registry: Arc<ChildRegistry>,
}

impl Reader {
    /// Readers of this very binary, whose children `registry` leaves to their waiter.
    pub fn new(registry: Arc<ChildRegistry>) -> Reader {
        Reader {
            exe: std::env::current_exe().ok(),
            turns: tokio::sync::Semaphore::new(TURNS),
            registry,
        }
    }

    /// Reads `page`, the body as it came, as `args` say.
    pub async fn read(&self, args: &ReadArgs, page: bytes::Bytes) -> Result<Read, WebError> {
        let exe = self.exe.as_ref().ok_or_else(|| {
            WebError::Internal("coved cannot find its own executable to read pages with".into())
        })?;
        let _turn = self
            .turns
            .acquire()
            .await
            .map_err(|_| WebError::Internal("the page readers are shut down".into()))?;
        let mut command = tokio::process::Command::new(exe);
        command
            .arg("read-page")
            .arg("--kind")
            .arg(match args.kind {
                PageKind::Html => "html",
                PageKind::Pdf => "pdf",
            })
            .arg("--format")
            .arg(match args.format {
                FetchFormat::Markdown => "markdown",
                FetchFormat::Text => "text",
                FetchFormat::Html => "html",
            })
            // `=`: a value the page's server chose may start with a dash.
            .arg(format!("--url={}", args.url))
            .arg(format!("--content-type={}", args.content_type))
            .env_remove("COVE_TOKEN")
            .env_remove("COVE_TOKEN_FILE")
            .env_remove(cove_telemetry::SECRET_VARS[0])
            .env_remove(cove_telemetry::SECRET_VARS[1])
            .env("COVED_LOG", "off")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if args.check_scripts {
            command.arg("--check-scripts");
        }
        let mut child = command
            .spawn()
            .map_err(|e| WebError::Internal(format!("cannot start a page reader: {e}")))?;
        let pid = child.id().and_then(|p| i32::try_from(p).ok());
        // Handed back to the reaper however this ends (a fetch given up included).
        let _owned = pid.map(|pid| Owned::new(&self.registry, pid));
        let outcome = tokio::time::timeout(DEADLINE, talk(&mut child, page)).await;
        match outcome {
            Ok(Ok((status, stdout, stderr))) => judge(&args.url, status, &stdout, &stderr),
            Ok(Err(e)) => Err(WebError::Internal(format!(
                "cannot talk to the page reader: {e}"
            ))),
            Err(_) => {
                let _ = child.kill().await;
                Err(unreadable(
                    &args.url,
                    &format!("reading it took over {} s", DEADLINE.as_secs()),
                ))
            }
        }
    }
}

/// A child the reaper leaves to its waiter while this lives.
struct Owned<'a> {
    registry: &'a ChildRegistry,
    pid: i32,
}

impl<'a> Owned<'a> {
    fn new(registry: &'a ChildRegistry, pid: i32) -> Owned<'a> {
        registry.register(pid);
        Owned { registry, pid }
    }
}

impl Drop for Owned<'_> {
    fn drop(&mut self) {
        self.registry.unregister(self.pid);
    }
}

/// Feeds the page in while reading both outputs, then waits for the exit.
async fn talk(
    child: &mut tokio::process::Child,
    page: bytes::Bytes,
) -> std::io::Result<(std::process::ExitStatus, Vec<u8>, Vec<u8>)> {
    let mut stdin = child.stdin.take();
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let feed = async move {
        if let Some(stdin) = stdin.as_mut() {
            // A reader that died early closes its end; its exit status says why.
            let _ = stdin.write_all(&page).await;
        }
        drop(stdin);
    };
    let out = async move {
        let mut buf = Vec::new();
        if let Some(stdout) = stdout.take() {
            stdout.take(MAX_ANSWER_BYTES).read_to_end(&mut buf).await?;
        }
        Ok::<_, std::io::Error>(buf)
    };
    let err = async move {
        let mut buf = Vec::new();
        if let Some(stderr) = stderr.as_mut() {
            let mut chunk = [0u8; 4096];
            loop {
                let n = stderr.read(&mut chunk).await?;
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
                if buf.len() > 2 * STDERR_KEPT {
                    buf.drain(..buf.len() - STDERR_KEPT);
                }
            }
        }
        Ok::<_, std::io::Error>(buf)
    };
    let ((), out, err) = tokio::join!(feed, out, err);
    let status = child.wait().await?;
    Ok((status, out?, err?))
}

/// The reader's answer, or why it gave none.
fn judge(
    url: &str,
    status: std::process::ExitStatus,
    stdout: &[u8],
    stderr: &[u8],
) -> Result<Read, WebError> {
    if status.success() {
        return match serde_json::from_slice::<Answer>(stdout) {
            Ok(Answer::NeedsScripts) => Ok(Read::NeedsScripts),
            Ok(Answer::Read { title, content }) => Ok(Read::Read { title, content }),
            Ok(Answer::Unreadable(message)) => Err(WebError::Unreadable(message)),
            Err(e) => Err(WebError::Internal(format!(
                "the page reader's answer is not understood: {e}"
            ))),
        };
    }
    let said = String::from_utf8_lossy(stderr);
    let why = if said.contains("memory allocation") || said.contains("out of memory") {
        format!(
            "reading it needs more than the {} MB a page may take",
            MEMORY_LIMIT >> 20
        )
    } else if said.contains("overflowed its stack") {
        "its elements nest too deep to read".to_string()
    } else {
        use std::os::unix::process::ExitStatusExt;
        match status.signal() {
            Some(24) => format!("reading it took over {CPU_LIMIT_SECS} s of CPU"),
            Some(9) => "the reader was killed (out of memory?)".to_string(),
            Some(signal) => format!("the reader crashed (signal {signal})"),
            None => format!(
                "the reader failed: {}",
                said.lines().last().unwrap_or("no reason given")
            ),
        }
    };
    Err(unreadable(url, &why))
}

fn unreadable(url: &str, why: &str) -> WebError {
    WebError::Unreadable(format!(
        "{url} cannot be read as a page: {why}; download it with the shell (curl -o) to look at it another way"
    ))
}

/// `coved read-page`: reads the page on stdin within this process's limits and answers on
/// stdout. Runs before any runtime or thread of the daemon exists.
pub fn child_main(args: &ReadArgs) -> std::io::Result<()> {
    limit_self();
    let mut page = Vec::new();
    std::io::stdin().lock().read_to_end(&mut page)?;
    let args = args.clone();
    let worker = std::thread::Builder::new()
        .name("read-page".into())
        .stack_size(STACK_BYTES)
        .spawn(move || read_here(&args, page))?;
    let answer = worker.join().unwrap_or_else(|_| {
        Answer::Unreadable("the page is malformed (the reader failed on it)".into())
    });
    let mut stdout = std::io::stdout().lock();
    serde_json::to_writer(&mut stdout, &answer)?;
    stdout.flush()
}

/// The child's own limits: its address space, CPU time, and no core file.
fn limit_self() {
    use rustix::process::{Resource, Rlimit, setrlimit};
    let limit = |resource, value| {
        let _ = setrlimit(
            resource,
            Rlimit {
                current: Some(value),
                maximum: Some(value),
            },
        );
    };
    limit(Resource::As, MEMORY_LIMIT);
    limit(Resource::Cpu, CPU_LIMIT_SECS);
    limit(Resource::Core, 0);
}

fn read_here(args: &ReadArgs, page: Vec<u8>) -> Answer {
    let mut answer = read_whole(args, page);
    if let Answer::Read { content, .. } = &mut answer
        && let Some((cut, _)) = content.char_indices().nth(MAX_TEXT_CHARS)
    {
        content.truncate(cut);
        content.push_str(&format!(
            "\n\n[the text goes on: coved gives the first {MAX_TEXT_CHARS} characters of a page]"
        ));
    }
    answer
}

fn read_whole(args: &ReadArgs, page: Vec<u8>) -> Answer {
    match args.kind {
        PageKind::Pdf => match pdf::text(&page, &args.url) {
            Ok(text) => Answer::Read {
                title: text.lines().next().unwrap_or("").trim().to_string(),
                content: text,
            },
            Err(message) => Answer::Unreadable(message),
        },
        PageKind::Html => {
            let html = download::decode_bytes(&page, &args.content_type, Kind::Html);
            drop(page);
            let bounded = bounds::bound_html(&html);
            if args.check_scripts && extract::needs_scripts(&bounded.html) {
                return Answer::NeedsScripts;
            }
            let mut read = extract::extract(&bounded.html, &args.url, args.format);
            if bounded.cut {
                read.content.push_str(&format!(
                    "\n\n[the page goes on: coved reads the first {} elements of a page]",
                    bounds::MAX_ELEMENTS
                ));
            }
            Answer::Read {
                title: read.title,
                content: read.content,
            }
        }
    }
}
