//! A made sandbox's own token. Its container or Pod starts with a boot token in its
//! environment, which the agent's processes may read (a container's first process holds
//! it); its daemon is given the sandbox's own token, known only to Cove, as the sandbox is
//! made or taken from a pool, and again after each start (a start brings the boot token
//! back), so the one the environment shows is dead.

use cove_protocol::ErrorCode;
use cove_protocol::client::{ClientError, CovedClient};
use cove_store::ManagedSandbox;

use super::SandboxError;

/// Makes sure the daemon of `made` at `url` takes its own token, giving it that token if it
/// still takes the boot one.
pub async fn ensure_own(url: &str, made: &ManagedSandbox) -> Result<(), SandboxError> {
    let Some(boot) = made.boot_token.as_deref() else {
        // Made before tokens were handed over: its one token is its environment's.
        return Ok(());
    };
    match client(url, &made.token)?.info().await {
        Ok(_) => Ok(()),
        Err(ClientError::Api {
            code: ErrorCode::Unauthorized,
            ..
        }) => hand_over(url, &made.name, boot, &made.token).await,
        Err(e) => Err(SandboxError::Unreachable {
            url: url.to_string(),
            message: e.to_string(),
        }),
    }
}

/// Gives the daemon of sandbox `name` at `url`, which takes `boot`, its own `token`.
pub async fn hand_over(url: &str, name: &str, boot: &str, token: &str) -> Result<(), SandboxError> {
    match client(url, boot)?.rotate_token(token).await {
        Ok(()) => Ok(()),
        Err(ClientError::Api {
            code: ErrorCode::Unauthorized,
            ..
        }) => Err(SandboxError::Disowned {
            name: name.to_string(),
        }),
        Err(e) => Err(SandboxError::Unreachable {
            url: url.to_string(),
            message: e.to_string(),
        }),
    }
}

fn client(url: &str, token: &str) -> Result<CovedClient, SandboxError> {
    CovedClient::new(url, token).map_err(|e| SandboxError::Unreachable {
        url: url.to_string(),
        message: e.to_string(),
    })
}
