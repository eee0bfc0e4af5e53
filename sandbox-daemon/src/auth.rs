//! The bearer token: where it comes from, and the middleware that demands it.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::HeaderValue;
use axum::http::header::{AUTHORIZATION, RETRY_AFTER};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use cove_protocol::ErrorCode;
use subtle::ConstantTimeEq;

use crate::AppState;
use crate::error::ApiError;
use crate::random::random_hex;

/// A secret that authorises API calls. Its `Debug` never shows the value.
#[derive(Clone)]
pub struct AuthToken(String);

impl std::fmt::Debug for AuthToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuthToken(<redacted>)")
    }
}

/// The shortest token accepted: 32 characters, 128 bits or more for a random hex or
/// base64 secret.
pub const MIN_TOKEN_CHARS: usize = 32;

impl AuthToken {
    /// Wraps a token, refusing one shorter than [`MIN_TOKEN_CHARS`] or with whitespace inside.
    pub fn new(token: impl Into<String>) -> Result<AuthToken, TokenError> {
        let token = token.into();
        let token = token.trim();
        if token.is_empty() {
            return Err(TokenError::Empty);
        }
        if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(TokenError::Malformed);
        }
        let len = token.chars().count();
        if len < MIN_TOKEN_CHARS {
            return Err(TokenError::TooShort { len });
        }
        Ok(AuthToken(token.to_string()))
    }

    /// A fresh random token (256 bits).
    pub fn generate() -> AuthToken {
        AuthToken(random_hex(32))
    }

    /// The secret itself, for clients and for writing to a file.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Compares in constant time.
    pub fn matches(&self, presented: &str) -> bool {
        self.0.as_bytes().ct_eq(presented.as_bytes()).into()
    }
}

/// Why no token could be had.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("the token is empty")]
    Empty,
    #[error("the token contains whitespace or control characters")]
    Malformed,
    /// Use a longer, random token, or none at all (one is generated).
    #[error(
        "the token has {len} characters; use at least {MIN_TOKEN_CHARS} random ones (e.g. `head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'`), or give none and coved generates one"
    )]
    TooShort { len: usize },
    #[error("cannot read the token file {path}: {source}")]
    Read { path: PathBuf, source: io::Error },
    #[error("cannot store the token in {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
}

/// Where the daemon's token came from; the CLI says so at startup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    /// `--token` or `COVE_TOKEN`.
    Given,
    /// Read from an existing file.
    File(PathBuf),
    /// Generated and written to a new file (mode 0600).
    Generated(PathBuf),
}

/// Finds the token: given outright, read from `file` if it exists, or generated into `file`.
pub fn resolve_token(
    given: Option<String>,
    file: &Path,
) -> Result<(AuthToken, TokenSource), TokenError> {
    if let Some(token) = given {
        return Ok((AuthToken::new(token)?, TokenSource::Given));
    }
    match fs::read_to_string(file) {
        Ok(text) => {
            if let Ok(meta) = fs::metadata(file)
                && meta.permissions().mode() & 0o077 != 0
            {
                tracing::warn!(file = %file.display(), "token file is readable by other users; chmod 600 it");
            }
            Ok((AuthToken::new(text)?, TokenSource::File(file.to_path_buf())))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let token = AuthToken::generate();
            write_token_file(file, &token).map_err(|source| TokenError::Write {
                path: file.to_path_buf(),
                source,
            })?;
            Ok((token, TokenSource::Generated(file.to_path_buf())))
        }
        Err(source) => Err(TokenError::Read {
            path: file.to_path_buf(),
            source,
        }),
    }
}

fn write_token_file(file: &Path, token: &AuthToken) -> io::Result<()> {
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(file)?;
    f.write_all(token.expose().as_bytes())?;
    f.write_all(b"\n")?;
    f.sync_all()
}

/// Middleware: answers 401 unless the request carries `Authorization: Bearer <token>`.
pub async fn require_token(State(app): State<AppState>, request: Request, next: Next) -> Response {
    let presented = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, token) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        });
    match presented {
        Some(token) if app.token.matches(token) => next.run(request).await,
        Some(_) => {
            let peer = crate::server::peer(request.extensions()).map(|a| a.ip());
            match app.failures.record(peer, "the API") {
                Verdict::Refuse => {
                    ApiError::new(ErrorCode::Unauthorized, "wrong bearer token").into_response()
                }
                Verdict::TooMany { retry_after } => too_many(retry_after),
            }
        }
        None => ApiError::new(
            ErrorCode::Unauthorized,
            "missing `Authorization: Bearer <token>` header",
        )
        .into_response(),
    }
}

/// The answer to a client past the limit of failed attempts.
pub fn too_many(retry_after: Duration) -> Response {
    let mut response = ApiError::new(
        ErrorCode::TooManyFailures,
        format!(
            "too many wrong tokens from this address; wait {} s",
            retry_after.as_secs().max(1)
        ),
    )
    .into_response();
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(retry_after.as_secs().max(1)));
    response
}

/// How long failures are counted together.
const FAILURE_WINDOW: Duration = Duration::from_secs(60);
/// Failures from one address in a window before it is refused outright.
const FAILURES_ALLOWED: u32 = 20;
/// Failures from one address logged one by one in a window; the rest are counted.
const FAILURES_LOGGED: u32 = 5;
/// Addresses tracked at once; past it the oldest windows are forgotten.
const ADDRESSES_TRACKED: usize = 10_000;

/// The address failures are counted under: an IPv4 address, or an IPv6 address's /64.
fn network_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return IpAddr::V4(v4);
            }
            let s = v6.segments();
            IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
    }
}

/// What to answer a wrong token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// 401, as always.
    Refuse,
    /// 429: the address is past its limit for a while.
    TooMany { retry_after: Duration },
}

/// Wrong tokens per client address: each is logged (a few per window, then a count), and an
/// address past the limit gets 429 until its window ends. A right token is never refused, so
/// a page in the sandbox's own browser cannot lock the controller out by guessing.
#[derive(Debug, Default)]
pub struct Failures {
    by_address: Mutex<HashMap<Option<IpAddr>, Window>>,
}

#[derive(Debug, Clone, Copy)]
struct Window {
    started: Instant,
    count: u32,
}

impl Failures {
    /// Records a wrong token from `peer` for `what` (a name for the log).
    pub fn record(&self, peer: Option<IpAddr>, what: &str) -> Verdict {
        let now = Instant::now();
        // One host of IPv6 has a whole /64 to send from.
        let peer = peer.map(network_of);
        let mut map = self.by_address.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= ADDRESSES_TRACKED && !map.contains_key(&peer) {
            map.retain(|_, w| now.duration_since(w.started) < FAILURE_WINDOW);
            // Still full of addresses guessing now: forget the one that began longest ago,
            // not everyone's count.
            if map.len() >= ADDRESSES_TRACKED
                && let Some(oldest) = map.iter().min_by_key(|(_, w)| w.started).map(|(k, _)| *k)
            {
                map.remove(&oldest);
            }
        }
        let window = map.entry(peer).or_insert(Window {
            started: now,
            count: 0,
        });
        if now.duration_since(window.started) >= FAILURE_WINDOW {
            *window = Window {
                started: now,
                count: 0,
            };
        }
        window.count = window.count.saturating_add(1);
        let Window { started, count } = *window;
        drop(map);
        let shown = peer.map_or_else(|| "an unknown address".to_string(), |ip| ip.to_string());
        if count <= FAILURES_LOGGED {
            tracing::warn!(peer = %shown, count, "a wrong token for {what}");
        } else if count == FAILURES_LOGGED + 1 {
            tracing::warn!(
                peer = %shown,
                "more wrong tokens; counting them without logging each until the minute is over"
            );
        }
        if count > FAILURES_ALLOWED {
            if count == FAILURES_ALLOWED + 1 {
                tracing::warn!(peer = %shown, "{FAILURES_ALLOWED} wrong tokens in a minute; refusing this address's wrong tokens with 429");
            }
            let retry_after = FAILURE_WINDOW.saturating_sub(now.duration_since(started));
            Verdict::TooMany { retry_after }
        } else {
            Verdict::Refuse
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T32: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn tokens_compare_exactly() {
        let t = AuthToken::new(T32).unwrap();
        assert!(t.matches(T32));
        assert!(!t.matches("0123456789abcdef0123456789abcdeX"));
        assert!(!t.matches(&T32[..31]));
        assert!(!t.matches(""));
        assert_eq!(format!("{t:?}"), "AuthToken(<redacted>)");
    }

    #[test]
    fn bad_tokens_are_refused() {
        assert!(matches!(AuthToken::new("  \n"), Err(TokenError::Empty)));
        assert!(matches!(AuthToken::new("a b"), Err(TokenError::Malformed)));
        assert!(matches!(
            AuthToken::new("a"),
            Err(TokenError::TooShort { len: 1 })
        ));
        assert!(matches!(
            AuthToken::new(&T32[..31]),
            Err(TokenError::TooShort { len: 31 })
        ));
        assert_eq!(AuthToken::new(format!(" {T32}\n")).unwrap().expose(), T32);
        assert_eq!(AuthToken::generate().expose().len(), 64);
    }

    #[test]
    fn an_address_past_the_limit_is_told_to_wait_and_others_are_not() {
        let failures = Failures::default();
        let guesser = Some(IpAddr::from([10, 0, 0, 9]));
        for _ in 0..FAILURES_ALLOWED {
            assert_eq!(failures.record(guesser, "a test"), Verdict::Refuse);
        }
        let Verdict::TooMany { retry_after } = failures.record(guesser, "a test") else {
            panic!("the 21st wrong token is still refused plainly");
        };
        assert!(retry_after <= FAILURE_WINDOW && retry_after > Duration::ZERO);
        assert_eq!(
            failures.record(Some(IpAddr::from([10, 0, 0, 10])), "a test"),
            Verdict::Refuse
        );
        // Addresses of one IPv6 /64 count as one.
        let v6 = |last: u16| Some(IpAddr::from([0x2001, 0xdb8, 0, 1, 0, 0, 0, last]));
        for n in 0..FAILURES_ALLOWED {
            assert_eq!(failures.record(v6(n as u16), "a test"), Verdict::Refuse);
        }
        assert!(matches!(
            failures.record(v6(999), "a test"),
            Verdict::TooMany { .. }
        ));
    }

    #[test]
    fn a_missing_file_gets_a_fresh_private_token_then_keeps_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state/token");
        let (first, source) = resolve_token(None, &file).unwrap();
        assert_eq!(source, TokenSource::Generated(file.clone()));
        assert_eq!(
            fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let (again, source) = resolve_token(None, &file).unwrap();
        assert_eq!(source, TokenSource::File(file.clone()));
        assert_eq!(first.expose(), again.expose());
        let (given, source) = resolve_token(Some(T32.into()), &file).unwrap();
        assert_eq!((given.expose(), source), (T32, TokenSource::Given));
    }
}
