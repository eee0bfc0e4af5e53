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
        // Another opener may have given it its own token a moment ago.
        Err(ClientError::Api {
            code: ErrorCode::Unauthorized,
            ..
        }) => match client(url, token)?.info().await {
            Ok(_) => Ok(()),
            Err(_) => Err(SandboxError::Disowned {
                name: name.to_string(),
            }),
        },
        Err(ClientError::Api {
            code: ErrorCode::UnknownRoute,
            ..
        }) => Err(SandboxError::Outdated {
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

#[cfg(test)]
mod tests {
    use super::*;
    use cove_harness::{DaemonBuilder, workspace_binary};

    fn made(boot: &str, own: &str) -> ManagedSandbox {
        ManagedSandbox {
            name: "s".into(),
            provider: "docker".into(),
            container_id: "c".into(),
            url: None,
            token: own.into(),
            image: "i".into(),
            created_at: 0,
            spec: None,
            boot_token: Some(boot.into()),
            made_as: None,
        }
    }

    #[tokio::test]
    async fn two_openers_at_once_both_give_the_sandbox_its_own_token() {
        let boot = "boot-token-0123456789abcdef0123456789";
        let own = "own-token-0123456789abcdef0123456789ab";
        let d = DaemonBuilder::new(workspace_binary("coved").unwrap())
            .token_in_env(boot)
            .spawn()
            .await
            .unwrap();
        let url = d
            .client
            .base_url()
            .as_str()
            .trim_end_matches('/')
            .to_string();
        let sandbox = made(boot, own);
        let (a, b) = tokio::join!(ensure_own(&url, &sandbox), ensure_own(&url, &sandbox));
        a.unwrap();
        b.unwrap();
        assert!(client(&url, own).unwrap().info().await.is_ok());
        assert!(client(&url, boot).unwrap().info().await.is_err());
        // A token changed outside Cove: neither works, and it says so.
        client(&url, own)
            .unwrap()
            .rotate_token("someone-elses-0123456789abcdef0123456789")
            .await
            .unwrap();
        let refused = ensure_own(&url, &sandbox).await.unwrap_err();
        assert!(
            matches!(refused, SandboxError::Disowned { .. }),
            "{refused}"
        );
    }
}
