//! `cove sandbox connect NAME`: a sandbox's address and token for another program (the
//! Harbor environment), with the sandbox held open (a Kubernetes one's port-forward) while
//! that program keeps the pipe open.

use std::process::ExitCode;

use serde_json::json;

use crate::sandbox_choice::{self, SandboxArgs};
use crate::{CliError, Invocation};

/// `cove sandbox connect NAME`: the sandbox's address and token, held open until standard
/// input ends (the caller closes it, or exits) or Ctrl-C.
pub(super) async fn connect(inv: &Invocation, name: &str) -> Result<ExitCode, CliError> {
    let args = SandboxArgs {
        sandbox: Some(name.to_string()),
        ..SandboxArgs::default()
    };
    let sandbox = sandbox_choice::open_for_command(inv, &args).await?;
    let url = sandbox
        .client
        .base_url()
        .as_str()
        .trim_end_matches('/')
        .to_string();
    inv.printer.result(
        &json!({"name": name, "url": url, "token": sandbox.client.token()}),
        |_| {
            format!(
                "sandbox {name}: {url}\ntoken: {}\nopen until standard input ends or Ctrl-C",
                sandbox.client.token()
            )
        },
    );
    // Read (and ignore) until the end of standard input, on a thread of its own that the
    // process's exit does not wait for (after Ctrl-C it is still reading).
    let (ended, input_ends) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let mut sink = [0u8; 1024];
        let mut stdin = std::io::stdin().lock();
        while matches!(std::io::Read::read(&mut stdin, &mut sink), Ok(n) if n > 0) {}
        let _ = ended.send(());
    });
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = input_ends => {}
    }
    sandbox.close().await;
    Ok(ExitCode::SUCCESS)
}
