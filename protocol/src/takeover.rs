//! Browser takeover: a person drives the agent's browser from a web page served by the
//! daemon, then hands it back. These are the HTTP types; the page's WebSocket messages are
//! the daemon's own business (it serves both ends).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::browser::BrowserState;

/// Default lifetime of a takeover and its token.
pub const DEFAULT_TAKEOVER_TTL_SECS: u64 = 30 * 60;
/// Longest lifetime a caller may ask for.
pub const MAX_TAKEOVER_TTL_SECS: u64 = 24 * 60 * 60;
/// Longest `wait_secs` of `GET /v1/browser/takeover`.
pub const MAX_TAKEOVER_WAIT_SECS: u64 = 60;

/// `POST /v1/browser/takeover`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartTakeover {
    /// What the agent asks the person to do; shown at the top of the page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// How long the takeover (and its token) lasts; default 1800, at most 86400.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_secs: Option<u64>,
}

/// The answer to `POST /v1/browser/takeover`: where the person goes. A takeover already
/// under way is answered again (same token), so a caller that lost the answer can ask again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TakeoverGrant {
    /// Names this takeover in `GET`'s `last_ended`.
    pub id: String,
    /// The page to open, token included.
    pub url: String,
    /// The takeover token alone: valid only for the page and its WebSocket.
    pub token: String,
    /// RFC 3339; after it the token is refused and control returns to the agent.
    pub expires_at: String,
}

/// Who drives the browser.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InControl {
    Agent,
    Person,
}

/// Why a takeover ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TakeoverEnd {
    /// The person pressed "Done — hand back to the agent".
    HandedBack,
    /// `DELETE /v1/browser/takeover` (the controller, or an operator).
    Released,
    /// Its time ran out.
    Expired,
}

/// A takeover under way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ActiveTakeover {
    pub id: String,
    pub started_at: String,
    pub expires_at: String,
    pub message: Option<String>,
    /// Pages connected now; the first one to connect sends input, the others watch.
    pub viewers: u32,
}

/// A takeover that is over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EndedTakeover {
    pub id: String,
    pub reason: TakeoverEnd,
    /// What the person typed in the page's note box before handing back.
    pub note: Option<String>,
    pub ended_at: String,
}

/// `GET /v1/browser/takeover`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TakeoverQuery {
    /// Wait up to this many seconds (at most 60) for the takeover under way to end before
    /// answering.
    #[serde(default)]
    pub wait_secs: Option<u64>,
}

/// The answer to `GET /v1/browser/takeover`: who is in control.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TakeoverStatus {
    pub in_control: InControl,
    pub active: Option<ActiveTakeover>,
    /// The most recent takeover that ended, if any.
    pub last_ended: Option<EndedTakeover>,
}

/// The answer to `DELETE /v1/browser/takeover`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TakeoverReleased {
    /// The takeover this ended; `None` when none was under way.
    pub ended: Option<EndedTakeover>,
    /// The fresh state of the browser, with a screenshot.
    pub state: BrowserState,
}
