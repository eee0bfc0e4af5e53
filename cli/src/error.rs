//! Why a command failed, sorted by what the user does next; the kind decides the exit code,
//! so a script can tell "fix the command" from "try again later" without reading the text.

use std::process::ExitCode;

use cove_protocol::client::ClientError;

use cove_core::agent::RunError;
use cove_core::config::ConfigError;
use cove_core::llm::LlmError;
use cove_core::llm::choice::ChoiceError;
use cove_core::session::SessionError;
use cove_core::store::{PlanError, StoreError};
use cove_sandbox::SandboxError;
use cove_sandbox::choice::SandboxesError;
use cove_sandbox::docker::DockerError;
use cove_sandbox::kubernetes::KubeError;

/// Exit codes of `cove`, one per outcome a script may act on.
pub mod exit {
    /// The work failed (a run that failed, a refused operation, a database error).
    pub const FAILED: u8 = 1;
    /// The command line is wrong: a value, a file that is not text (clap's own errors exit
    /// with 2 as well).
    pub const USAGE: u8 = 2;
    /// The thread waits for the user's answer (`ask`): `cove reply`.
    pub const PAUSED: u8 = 3;
    /// The run stopped at its iteration cap: `cove resume`.
    pub const STOPPED: u8 = 4;
    /// The named thread, knowledge entry or sandbox does not exist.
    pub const NOT_FOUND: u8 = 5;
    /// Something must be set up first: a model key, `coved`, Docker's socket, a token.
    pub const SETUP: u8 = 6;
    /// A sandbox, Docker or the model's server could not be reached: try again when it is up.
    pub const UNREACHABLE: u8 = 7;
    /// The thread waits for the user to approve its plan: `cove approve` or `cove reject`.
    pub const AWAITING_APPROVAL: u8 = 8;
    /// Calls wait for the user's permission: `cove permit`, then `cove resume`.
    pub const AWAITING_PERMISSION: u8 = 9;
    /// Ctrl-C stopped the run: `cove resume`.
    pub const INTERRUPTED: u8 = 130;
}

/// A command's failure: one line for the user, its kind for the exit code.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Fix the command line.
    #[error("{0}")]
    Usage(String),
    /// Name something that exists (the message says which command lists them).
    #[error("{0}")]
    NotFound(String),
    /// The thread waits for an answer: give it with `cove reply`.
    #[error("{0}")]
    Waiting(String),
    /// The thread's plan waits for approval: `cove approve` or `cove reject`.
    #[error("{0}")]
    AwaitingApproval(String),
    /// Calls wait for permission: `cove permit`, then `cove resume`.
    #[error("{0}")]
    AwaitingPermission(String),
    /// Set something up first (the message says what).
    #[error("{0}")]
    Setup(String),
    /// Try again once the service answers.
    #[error("{0}")]
    Unreachable(String),
    /// The work failed; the message says why.
    #[error("{0}")]
    Failed(String),
}

impl CliError {
    /// The process exit code of this failure (see [`exit`]).
    pub fn code(&self) -> u8 {
        match self {
            CliError::Usage(_) => exit::USAGE,
            CliError::NotFound(_) => exit::NOT_FOUND,
            CliError::Waiting(_) => exit::PAUSED,
            CliError::AwaitingApproval(_) => exit::AWAITING_APPROVAL,
            CliError::AwaitingPermission(_) => exit::AWAITING_PERMISSION,
            CliError::Setup(_) => exit::SETUP,
            CliError::Unreachable(_) => exit::UNREACHABLE,
            CliError::Failed(_) => exit::FAILED,
        }
    }

    /// [`CliError::code`] as the process's exit code.
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(self.code())
    }
}

impl From<SessionError> for CliError {
    fn from(e: SessionError) -> Self {
        match e {
            SessionError::Invalid(m) | SessionError::Busy(m) => CliError::Usage(m),
            SessionError::NotFound(m) => CliError::NotFound(m),
            SessionError::Waiting(m) | SessionError::SubAgent(m) => CliError::Waiting(m),
            SessionError::AwaitingApproval(m) => CliError::AwaitingApproval(m),
            SessionError::AwaitingPermission(m) => CliError::AwaitingPermission(m),
            SessionError::Setup(m) => CliError::Setup(m),
            SessionError::Unreachable(m) => CliError::Unreachable(m),
            SessionError::Failed(m) => CliError::Failed(m),
        }
    }
}

/// The engine's errors reach a command as the session layer sorts them.
macro_rules! through_the_session {
    ($($error:ty),*) => {$(
        impl From<$error> for CliError {
            fn from(e: $error) -> Self {
                SessionError::from(e).into()
            }
        }
    )*};
}

through_the_session!(
    StoreError,
    PlanError,
    LlmError,
    ChoiceError,
    ConfigError,
    ClientError,
    RunError
);

impl From<SandboxesError> for CliError {
    fn from(e: SandboxesError) -> Self {
        match e {
            SandboxesError::Invalid(m) => CliError::Usage(m),
            SandboxesError::NotFound(m) => CliError::NotFound(m),
            SandboxesError::Failed(m) => CliError::Failed(m),
            SandboxesError::Sandbox(e) => e.into(),
            SandboxesError::Docker(e) => e.into(),
            SandboxesError::Kube(e) => e.into(),
            SandboxesError::Store(e) => e.into(),
        }
    }
}

impl From<cove_sandbox::pool::PoolError> for CliError {
    fn from(e: cove_sandbox::pool::PoolError) -> Self {
        use cove_sandbox::pool::PoolError;
        match e {
            PoolError::Unknown { .. } | PoolError::Invalid { .. } => CliError::Usage(e.to_string()),
            PoolError::CannotFill { .. } => CliError::Failed(e.to_string()),
            PoolError::Sandboxes(e) => e.into(),
        }
    }
}

impl From<SandboxError> for CliError {
    fn from(e: SandboxError) -> Self {
        match e {
            SandboxError::DaemonMissing
            | SandboxError::Outdated { .. }
            | SandboxError::BadToken { .. }
            | SandboxError::NoToken { .. }
            | SandboxError::NoIsolation { .. } => CliError::Setup(e.to_string()),
            SandboxError::Unreachable { .. } => CliError::Unreachable(e.to_string()),
            SandboxError::Startup(_)
            | SandboxError::NotStarted(_)
            | SandboxError::Disowned { .. } => CliError::Failed(e.to_string()),
        }
    }
}

impl From<DockerError> for CliError {
    fn from(e: DockerError) -> Self {
        match e {
            DockerError::Unreachable { .. } => CliError::Unreachable(e.to_string()),
            DockerError::UnsupportedHost { .. }
            | DockerError::NoImage { .. }
            | DockerError::NoDiskLimit { .. } => CliError::Setup(e.to_string()),
            DockerError::Conflict { .. } => CliError::Usage(e.to_string()),
            DockerError::NotFound(_) => CliError::NotFound(e.to_string()),
            DockerError::Unhealthy { .. }
            | DockerError::Api { .. }
            | DockerError::DiskFull { .. } => CliError::Failed(e.to_string()),
        }
    }
}

impl From<KubeError> for CliError {
    fn from(e: KubeError) -> Self {
        match e {
            KubeError::NoConfig(_) | KubeError::NoSnapshots { .. } => {
                CliError::Setup(e.to_string())
            }
            KubeError::Unreachable(_) | KubeError::Forward { .. } => {
                CliError::Unreachable(e.to_string())
            }
            KubeError::Conflict { .. } | KubeError::NotOurs { .. } => {
                CliError::Usage(e.to_string())
            }
            KubeError::Api { code: 404, .. } => CliError::NotFound(e.to_string()),
            KubeError::Api { .. }
            | KubeError::NotReady { .. }
            | KubeError::SnapshotFailed { .. } => CliError::Failed(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_its_own_exit_code() {
        let kinds = [
            CliError::Usage(String::new()),
            CliError::NotFound(String::new()),
            CliError::Waiting(String::new()),
            CliError::Setup(String::new()),
            CliError::Unreachable(String::new()),
            CliError::Failed(String::new()),
        ];
        let codes: Vec<u8> = kinds.iter().map(CliError::code).collect();
        let mut unique = codes.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), kinds.len(), "{codes:?}");
    }

    #[test]
    fn a_missing_key_is_set_up_and_a_dropped_connection_is_unreachable() {
        let key: CliError = LlmError::MissingApiKey {
            provider: "openai",
            variable: "OPENAI_API_KEY",
        }
        .into();
        assert!(matches!(key, CliError::Setup(_)), "{key:?}");
        let gone: CliError = RunError::Llm(LlmError::Transport {
            provider: "openai",
            message: "connection refused".into(),
        })
        .into();
        assert!(matches!(gone, CliError::Unreachable(_)), "{gone:?}");
        let thread: CliError = StoreError::NoThread("x".into()).into();
        assert!(matches!(thread, CliError::NotFound(_)), "{thread:?}");
    }
}
