//! Finding the workspace's binaries from any test: they live in the target directory next to
//! the test executable's `deps/`. A binary that was not built (a test run of one package) is
//! built on demand.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

use anyhow::{Context, Result, bail};

static BUILD: Mutex<()> = Mutex::new(());

/// The path of the workspace binary `name` (`coved`, `cove`), built if it is missing.
pub fn workspace_binary(name: &str) -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    // target/<profile>/deps/<test> → target/<profile>
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .context("the test executable is not inside a target directory")?;
    let path = dir.join(name);
    if path.is_file() {
        return Ok(path);
    }
    let _guard = BUILD.lock().unwrap_or_else(|p| p.into_inner());
    if path.is_file() {
        return Ok(path);
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let release = dir.file_name().is_some_and(|n| n == "release");
    let mut cmd = Command::new(cargo);
    // From any member's folder (a bench runs in its own): the whole workspace's bins.
    cmd.args(["build", "--quiet", "--workspace", "--bin", name]);
    if release {
        cmd.arg("--release");
    }
    let status = cmd
        .status()
        .context("cannot run cargo to build a test binary")?;
    if !status.success() || !path.is_file() {
        bail!("building {name} for the tests failed ({status})");
    }
    Ok(path)
}

/// The first of `names` found on `PATH`.
pub fn on_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |name| dir.join(name)))
        .find(|p| p.is_file())
}
