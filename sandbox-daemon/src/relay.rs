//! `coved call`: one HTTP request to a coved on this machine's loopback, read from a JSON
//! envelope and answered as one on stdout. A controller that reaches a sandbox only through
//! its exec (Harbor's environments publish no ports and give exec no stdin) relays each API
//! request as one exec of `coved call`; the daemon itself keeps running between them.
//!
//! Bodies travel as base64, so the answer survives any exec that decodes output as text or
//! mixes stderr into stdout: the answer is the one line starting with [`RESPONSE_MARK`].

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};

/// What starts the answer's line on stdout; anything else printed (a shell's notice, a log
/// line merged from stderr) is not the answer.
pub const RESPONSE_MARK: &str = "cove-relay-response ";

/// Largest response body put in the answer itself; a larger one is written to a file in
/// `--spill-dir` that the caller downloads and removes.
pub const INLINE_BODY_MAX: usize = 4 * 1024 * 1024;

/// Exit code when the envelope is not a request (the caller's mistake).
pub const EXIT_BAD_REQUEST: i32 = 2;
/// Exit code when no coved answers at the port.
pub const EXIT_UNREACHABLE: i32 = 3;

/// `coved call`'s arguments. The token, when the envelope carries no `authorization`
/// header, comes from `COVE_TOKEN` in the environment.
#[derive(Debug, clap::Args)]
pub struct CallArgs {
    /// Port of 127.0.0.1 where the coved to call listens.
    #[arg(long)]
    pub port: u16,
    /// The request envelope: base64 of its JSON (`method`, `path`, `headers`, `body` in base64).
    #[arg(
        long,
        required_unless_present = "request_file",
        conflicts_with = "request_file"
    )]
    pub request: Option<String>,
    /// A file holding the request envelope's JSON (for a body too large for a command line);
    /// removed once read.
    #[arg(long)]
    pub request_file: Option<PathBuf>,
    /// Folder where a response body over 4 MiB is written (the answer names the file).
    #[arg(long, default_value = "/tmp")]
    pub spill_dir: PathBuf,
    /// Seconds the request may take; by default the daemon's own deadlines bound it.
    #[arg(long)]
    pub timeout_secs: Option<u64>,
}

/// A request as the relay received it.
#[derive(Debug, Deserialize, Serialize)]
pub struct RequestEnvelope {
    pub method: String,
    /// Path and query, starting with `/`.
    pub path: String,
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// The body in base64.
    #[serde(default)]
    pub body: String,
}

/// The daemon's answer, or why there is none.
#[derive(Debug, Deserialize, Serialize, Default)]
pub struct ResponseEnvelope {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<(String, String)>,
    /// The body in base64, when it is at most [`INLINE_BODY_MAX`] bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The file holding a larger body.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_file: Option<String>,
    /// Why no answer came.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Why a call has no answer; each says which exit code the caller sees.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The envelope cannot be read or is not a request: fix the caller.
    #[error("the request envelope is not usable: {0}")]
    BadRequest(String),
    /// Nothing answered at the port: start coved, or wait until it listens.
    #[error("no coved answers at 127.0.0.1:{port}: {why}")]
    Unreachable { port: u16, why: String },
    /// The answer's body could not be written to the spill folder.
    #[error("cannot write the response body into {dir}: {why}")]
    Spill { dir: PathBuf, why: String },
}

impl CallError {
    fn exit_code(&self) -> i32 {
        match self {
            CallError::BadRequest(_) => EXIT_BAD_REQUEST,
            CallError::Unreachable { .. } | CallError::Spill { .. } => EXIT_UNREACHABLE,
        }
    }
}

/// Headers that belong to one connection, never relayed in either direction.
fn hop_by_hop(name: &str) -> bool {
    const NAMES: [&str; 9] = [
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "host",
        "content-length",
        "proxy-connection",
    ];
    NAMES.iter().any(|n| name.eq_ignore_ascii_case(n))
}

/// Runs `coved call`: prints the answer's line and returns the process's exit code.
pub fn main(args: &CallArgs) -> i32 {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return answer_error(&format!("cannot start the async runtime: {e}"), 1),
    };
    match runtime.block_on(call(args)) {
        Ok(response) => {
            print_answer(&response);
            0
        }
        Err(e) => answer_error(&e.to_string(), e.exit_code()),
    }
}

fn answer_error(why: &str, code: i32) -> i32 {
    print_answer(&ResponseEnvelope {
        error: Some(why.to_owned()),
        ..ResponseEnvelope::default()
    });
    code
}

fn print_answer(response: &ResponseEnvelope) {
    let line = serde_json::to_string(response).unwrap_or_else(|e| {
        format!(r#"{{"error":"cannot encode the answer: {e}"}}"#).replace('\n', " ")
    });
    let mut stdout = std::io::stdout().lock();
    // Nothing else can be said if stdout is gone: the caller sees no answer line.
    let _ = writeln!(stdout, "\n{RESPONSE_MARK}{line}");
    let _ = stdout.flush();
}

/// Reads the envelope, sends it to the daemon and reads the whole answer.
async fn call(args: &CallArgs) -> Result<ResponseEnvelope, CallError> {
    let envelope = read_envelope(args)?;
    if !envelope.path.starts_with('/') {
        return Err(CallError::BadRequest(format!(
            "the path {:?} does not start with /",
            envelope.path
        )));
    }
    let method = reqwest::Method::from_bytes(envelope.method.as_bytes())
        .map_err(|_| CallError::BadRequest(format!("{:?} is not a method", envelope.method)))?;
    let body = BASE64
        .decode(envelope.body.as_bytes())
        .map_err(|e| CallError::BadRequest(format!("the body is not base64: {e}")))?;
    let client = reqwest::Client::builder()
        .no_proxy()
        .no_gzip()
        .no_brotli()
        .no_deflate()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| CallError::Unreachable {
            port: args.port,
            why: e.to_string(),
        })?;
    let url = format!("http://127.0.0.1:{}{}", args.port, envelope.path);
    let mut request = client.request(method, &url).body(body);
    for (name, value) in envelope.headers.iter().filter(|(n, _)| !hop_by_hop(n)) {
        request = request.header(name, value);
    }
    // The token comes in the environment, never on the command line every process reads.
    let has_auth = envelope
        .headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("authorization"));
    if let Ok(token) = std::env::var("COVE_TOKEN")
        && !has_auth
        && !token.is_empty()
    {
        request = request.bearer_auth(token);
    }
    if let Some(secs) = args.timeout_secs {
        request = request.timeout(Duration::from_secs(secs));
    }
    let unreachable = |e: reqwest::Error| CallError::Unreachable {
        port: args.port,
        why: e.to_string(),
    };
    let response = request.send().await.map_err(unreachable)?;
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .filter(|(n, _)| !hop_by_hop(n.as_str()))
        .map(|(n, v)| {
            (
                n.to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let bytes = response.bytes().await.map_err(unreachable)?;
    let mut answer = ResponseEnvelope {
        status: Some(status),
        headers,
        ..ResponseEnvelope::default()
    };
    if bytes.len() > INLINE_BODY_MAX {
        answer.body_file = Some(spill(&args.spill_dir, &bytes)?);
    } else {
        answer.body = Some(BASE64.encode(&bytes));
    }
    Ok(answer)
}

fn read_envelope(args: &CallArgs) -> Result<RequestEnvelope, CallError> {
    let json = match (&args.request, &args.request_file) {
        (Some(inline), _) => BASE64
            .decode(inline.trim().as_bytes())
            .map_err(|e| CallError::BadRequest(format!("--request is not base64: {e}")))?,
        (None, Some(path)) => {
            let read = std::fs::read(path)
                .map_err(|e| CallError::BadRequest(format!("{}: {e}", path.display())));
            // Read or not, the file was the caller's one-off: never leave it behind.
            let _ = std::fs::remove_file(path);
            read?
        }
        (None, None) => return Err(CallError::BadRequest("no --request given".into())),
    };
    serde_json::from_slice(&json).map_err(|e| CallError::BadRequest(e.to_string()))
}

/// Writes a large body to a new private file in `dir`; returns its path.
fn spill(dir: &Path, bytes: &[u8]) -> Result<String, CallError> {
    let fail = |e: std::io::Error| CallError::Spill {
        dir: dir.to_path_buf(),
        why: e.to_string(),
    };
    let mut file = tempfile::Builder::new()
        .prefix("cove-relay-")
        .suffix(".body")
        .tempfile_in(dir)
        .map_err(fail)?;
    file.write_all(bytes).map_err(fail)?;
    let (_, path) = file.keep().map_err(|e| fail(e.error))?;
    Ok(path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_headers_are_not_relayed_and_others_are() {
        assert!(hop_by_hop("Transfer-Encoding"));
        assert!(hop_by_hop("host"));
        assert!(!hop_by_hop("authorization"));
        assert!(!hop_by_hop("content-type"));
    }

    #[test]
    fn a_request_file_is_removed_even_when_it_is_not_an_envelope() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("req.json");
        std::fs::write(&path, b"not json").unwrap();
        let args = CallArgs {
            port: 1,
            request: None,
            request_file: Some(path.clone()),
            spill_dir: dir.path().into(),
            timeout_secs: None,
        };
        assert!(matches!(
            read_envelope(&args),
            Err(CallError::BadRequest(_))
        ));
        assert!(!path.exists());
    }
}
