//! The API token as the daemon holds it: one value every part that checks it shares (the
//! token middleware, previews, the MCP endpoint, the forks' own daemons), replaced whole by
//! `POST /v1/token`. A sandbox made ahead of use (a pool's) starts with a token its maker
//! knows and gets its own as it is handed out; the environment, which the agent's processes
//! may read (a container's first process holds it), then carries only a dead one.

use std::sync::{Arc, PoisonError, RwLock};

use axum::Json;
use axum::extract::State;
use cove_protocol::info::{RotateToken, TokenRotated};

use crate::AppState;
use crate::auth::AuthToken;
use crate::error::ApiError;
use crate::extract::ApiJson;

/// The token the API takes now; clones share it.
#[derive(Clone)]
pub struct ApiToken(Arc<RwLock<AuthToken>>);

impl std::fmt::Debug for ApiToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiToken(<redacted>)")
    }
}

impl From<AuthToken> for ApiToken {
    fn from(token: AuthToken) -> Self {
        ApiToken(Arc::new(RwLock::new(token)))
    }
}

impl ApiToken {
    /// Compares `presented` with the token now, in constant time.
    pub fn matches(&self, presented: &str) -> bool {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .matches(presented)
    }

    /// The token now, for clients inside the daemon.
    pub fn expose(&self) -> String {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .expose()
            .to_string()
    }

    /// Takes `token` from now on; the one before is refused.
    pub fn replace(&self, token: AuthToken) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = token;
    }
}

/// `POST /v1/token`
pub async fn rotate(
    State(app): State<AppState>,
    ApiJson(request): ApiJson<RotateToken>,
) -> Result<Json<TokenRotated>, ApiError> {
    let token = AuthToken::new(request.token)
        .map_err(|e| ApiError::invalid_request(format!("the new token is refused: {e}")))?;
    app.token.replace(token);
    tracing::info!("the API token was replaced; the one before is refused from now on");
    Ok(Json(TokenRotated { rotated: true }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_what_replace_puts_in() {
        let first = "a".repeat(32);
        let second = "b".repeat(40);
        let token = ApiToken::from(AuthToken::new(&first).unwrap());
        let fork = token.clone();
        token.replace(AuthToken::new(&second).unwrap());
        assert!(!fork.matches(&first));
        assert!(fork.matches(&second));
        assert_eq!(fork.expose(), second);
        assert_eq!(format!("{token:?}"), "ApiToken(<redacted>)");
    }
}
