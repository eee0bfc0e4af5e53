//! The error envelope every coved route answers with on failure, and its stable codes.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! error_codes {
    ($( $(#[doc = $doc:literal])* $variant:ident = $code:literal => $status:literal, )*) => {
        /// A stable, machine-readable error code. Clients branch on these, never on messages.
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $( $(#[doc = $doc])* $variant, )*
            /// A code this version of the protocol does not know (sent by a newer daemon).
            Other(String),
        }

        impl ErrorCode {
            /// Every code this version knows, for documentation and tests.
            pub const KNOWN: &'static [ErrorCode] = &[$(ErrorCode::$variant),*];

            /// The snake_case wire form.
            pub fn as_str(&self) -> &str {
                match self {
                    $( ErrorCode::$variant => $code, )*
                    ErrorCode::Other(code) => code,
                }
            }

            /// The HTTP status a daemon answers with for this code.
            pub fn http_status(&self) -> u16 {
                match self {
                    $( ErrorCode::$variant => $status, )*
                    ErrorCode::Other(_) => 500,
                }
            }

            /// Parses the wire form; unknown codes are kept as [`ErrorCode::Other`].
            pub fn from_wire(code: &str) -> ErrorCode {
                match code {
                    $( $code => ErrorCode::$variant, )*
                    other => ErrorCode::Other(other.to_string()),
                }
            }
        }
    };
}

error_codes! {
    /// The bearer token is missing or wrong.
    Unauthorized = "unauthorized" => 401,
    /// The named file, directory or shell session does not exist.
    NotFound = "not_found" => 404,
    /// No route matches this path.
    UnknownRoute = "unknown_route" => 404,
    /// The route exists but not with this HTTP method.
    MethodNotAllowed = "method_not_allowed" => 405,
    /// The request body or query is malformed, has wrong types or unknown fields.
    InvalidRequest = "invalid_request" => 400,
    /// The path is not usable (empty, a symlink loop, a non-directory in the middle).
    InvalidPath = "invalid_path" => 400,
    /// The path is absolute, uses `..`, holds a NUL byte, or resolves outside the workspace.
    PathOutsideWorkspace = "path_outside_workspace" => 403,
    /// The filesystem refused the operation for lack of permission.
    PermissionDenied = "permission_denied" => 403,
    /// `create` found a file already at that path.
    AlreadyExists = "already_exists" => 409,
    /// `str_replace` found no occurrence of `old_str`.
    NoMatch = "no_match" => 422,
    /// `str_replace` found `old_str` more than once.
    MultipleMatches = "multiple_matches" => 422,
    /// The file is not UTF-8 text; download it raw instead.
    NotText = "not_text" => 422,
    /// A file operation was asked of a directory.
    IsDirectory = "is_directory" => 409,
    /// A directory operation was asked of a file.
    NotDirectory = "not_directory" => 409,
    /// The directory is not empty; delete it with `recursive=true`.
    DirectoryNotEmpty = "directory_not_empty" => 409,
    /// The request body is over the configured size cap.
    PayloadTooLarge = "payload_too_large" => 413,
    /// The file is too large to return as text; read a line range or download it.
    FileTooLarge = "file_too_large" => 413,
    /// The operation did not finish within its deadline.
    Timeout = "timeout" => 504,
    /// The shell session is still running an earlier command.
    SessionBusy = "session_busy" => 409,
    /// The session has no command running to send input or a signal to.
    NoRunningCommand = "no_running_command" => 409,
    /// The daemon's limit on concurrent shell sessions is reached.
    TooManySessions = "too_many_sessions" => 429,
    /// The daemon could not start a shell.
    ShellUnavailable = "shell_unavailable" => 503,
    /// The element at that index is gone from the page; `details.state` is the fresh state.
    StaleElement = "stale_element" => 409,
    /// No element has that index in that snapshot; `details.state` is the fresh state.
    ElementNotFound = "element_not_found" => 404,
    /// Something else covers the element, so a click would not reach it; `details.state` is
    /// the fresh state.
    ElementNotClickable = "element_not_clickable" => 409,
    /// The element cannot take this action (typing into a checkbox, options of a div).
    WrongElementKind = "wrong_element_kind" => 422,
    /// No browser can run: Chromium is missing or will not start.
    BrowserUnavailable = "browser_unavailable" => 503,
    /// A person has taken over the browser; actions wait until they hand it back (reading
    /// the state and screenshots still work).
    TakeoverActive = "takeover_active" => 409,
    /// The page could not be loaded (DNS, refused connection, bad certificate...).
    NavigationFailed = "navigation_failed" => 502,
    /// The input is not an image this daemon can read (PNG, JPEG, GIF, WebP).
    NotAnImage = "not_an_image" => 422,
    /// The URL could not be fetched (unreachable, an HTTP error status, broke off).
    FetchFailed = "fetch_failed" => 502,
    /// The URL serves content that is not a page (an image, an archive, a program); download
    /// it with the shell instead.
    NotAPage = "not_a_page" => 415,
    /// The page is over the download limit; download it with the shell instead.
    PageTooLarge = "page_too_large" => 413,
    /// The search engine answered with a page that has no results to read (a captcha, a
    /// consent wall); a person can clear it by taking over the browser, or configure a
    /// search provider's key.
    SearchBlocked = "search_blocked" => 502,
    /// The path names a FIFO, socket or device: only regular files are read or served.
    NotRegularFile = "not_regular_file" => 409,
    /// The file changed between reading and writing it (another edit won); read it again and
    /// redo the edit.
    Conflict = "conflict" => 409,
    /// The request's `Host` is not one this daemon answers for (set by `--public-url`).
    MisdirectedRequest = "misdirected_request" => 421,
    /// Preview links need an origin per app, and the daemon is reached by an address with no
    /// subdomains; start coved with `--public-url` (a name whose subdomains lead to it).
    NoPreviewOrigin = "no_preview_origin" => 409,
    /// The port is held by a process the agent did not start; only servers started from its
    /// shell sessions can be previewed.
    PortNotAgents = "port_not_agents" => 403,
    /// Too many requests with a wrong token came from this address; wait and retry.
    TooManyFailures = "too_many_failures" => 429,
    /// A shell session is running a command that could change the workspace meanwhile;
    /// wait for it, or ask again with `stop_commands` to kill those sessions first.
    Busy = "busy" => 409,
    /// The archive is not a checkpoint this daemon can take: not a tar, or it names a path
    /// outside the workspace (`..`, absolute) or a link out of it. Nothing was changed.
    InvalidArchive = "invalid_archive" => 400,
    /// The daemon's limit on watches waiting at once is reached; delete one first.
    TooManyWatches = "too_many_watches" => 429,
    /// The daemon failed in a way that is not the caller's fault.
    Internal = "internal" => 500,
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let code = Cow::<'de, str>::deserialize(deserializer)?;
        Ok(ErrorCode::from_wire(&code))
    }
}

impl JsonSchema for ErrorCode {
    fn schema_name() -> Cow<'static, str> {
        "ErrorCode".into()
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        let known: Vec<&str> = ErrorCode::KNOWN.iter().map(ErrorCode::as_str).collect();
        json_schema!({
            "type": "string",
            "description": "Stable snake_case error code; clients must tolerate codes not listed here.",
            "examples": known,
        })
    }
}

/// The body of every error answer: `{"error": {"code": "...", "message": "..."}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorEnvelope {
    pub error: ErrorBody,
}

/// The code and human-readable message of an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorBody {
    pub code: ErrorCode,
    pub message: String,
    /// Extra data for some codes: `{"state": BrowserState}` for the browser's element errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
}

impl ErrorEnvelope {
    /// Builds an envelope from a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorEnvelope {
            error: ErrorBody {
                code,
                message: message.into(),
                details: None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_through_the_wire_form() {
        for code in ErrorCode::KNOWN {
            assert_eq!(&ErrorCode::from_wire(code.as_str()), code);
            let json = serde_json::to_string(code).unwrap();
            let back: ErrorCode = serde_json::from_str(&json).unwrap();
            assert_eq!(&back, code);
        }
    }

    #[test]
    fn unknown_codes_survive_as_other() {
        let env: ErrorEnvelope =
            serde_json::from_str(r#"{"error":{"code":"brand_new","message":"m"}}"#).unwrap();
        assert_eq!(env.error.code, ErrorCode::Other("brand_new".into()));
        assert_eq!(env.error.code.as_str(), "brand_new");
    }

    #[test]
    fn codes_are_snake_case_and_unique() {
        let mut seen = std::collections::HashSet::new();
        for code in ErrorCode::KNOWN {
            let s = code.as_str();
            assert!(s.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{s}");
            assert!(seen.insert(s), "duplicate code {s}");
            assert!((400..600).contains(&code.http_status()), "{s}");
        }
    }
}
