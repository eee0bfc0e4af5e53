//! The bearer token: where it comes from, and the middleware that demands it.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use cove_protocol::ErrorCode;
use subtle::ConstantTimeEq;

use crate::AppState;
use crate::error::ApiError;
use crate::util::random_hex;

/// A secret that authorises API calls. Its `Debug` never shows the value.
#[derive(Clone)]
pub struct AuthToken(String);

impl std::fmt::Debug for AuthToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuthToken(<redacted>)")
    }
}

impl AuthToken {
    /// Wraps a token, refusing an empty one or one with whitespace inside.
    pub fn new(token: impl Into<String>) -> Result<AuthToken, TokenError> {
        let token = token.into();
        let token = token.trim();
        if token.is_empty() {
            return Err(TokenError::Empty);
        }
        if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(TokenError::Malformed);
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
        Some(_) => ApiError::new(ErrorCode::Unauthorized, "wrong bearer token").into_response(),
        None => ApiError::new(
            ErrorCode::Unauthorized,
            "missing `Authorization: Bearer <token>` header",
        )
        .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_exactly() {
        let t = AuthToken::new("abc123").unwrap();
        assert!(t.matches("abc123"));
        assert!(!t.matches("abc124"));
        assert!(!t.matches("abc12"));
        assert!(!t.matches(""));
        assert_eq!(format!("{t:?}"), "AuthToken(<redacted>)");
    }

    #[test]
    fn bad_tokens_are_refused() {
        assert!(matches!(AuthToken::new("  \n"), Err(TokenError::Empty)));
        assert!(matches!(AuthToken::new("a b"), Err(TokenError::Malformed)));
        assert_eq!(AuthToken::new(" tok\n").unwrap().expose(), "tok");
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
        let (given, source) = resolve_token(Some("given".into()), &file).unwrap();
        assert_eq!((given.expose(), source), ("given", TokenSource::Given));
    }
}
