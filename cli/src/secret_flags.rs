//! Secrets given as flags (`cove serve --token T`, `--sandbox-token T`) are in the process
//! list, which every user of the machine reads. `cove` moves them into the environment
//! variables the flags also read and runs itself again without them, before anything else:
//! the process list shows them only for the moment between the two.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;

/// Set in the environment of the run again: which flags were moved, for the warning.
pub const MOVED: &str = "COVE_MOVED_FLAGS";

/// Flags holding secrets, the variable each also reads, and the subcommand it belongs to
/// (none: any).
const SECRET_FLAGS: &[(&str, &str, Option<&str>)] = &[
    ("--token", "COVE_SERVE_TOKEN", Some("serve")),
    ("--sandbox-token", "COVE_SANDBOX_TOKEN", None),
];

/// The arguments without their secret flags, and what to put in the environment instead.
fn split(args: &[OsString]) -> (Vec<OsString>, Vec<(&'static str, OsString, &'static str)>) {
    let mut kept = Vec::with_capacity(args.len());
    let mut moved = Vec::new();
    let mut iter = args.iter().peekable();
    while let Some(arg) = iter.next() {
        let text = arg.to_string_lossy();
        let flag = SECRET_FLAGS.iter().find(|(flag, _, within)| {
            let named = text == *flag || text.starts_with(&format!("{flag}="));
            named && within.is_none_or(|sub| kept.iter().any(|a| a == sub))
        });
        match flag {
            Some((flag, var, _)) if text == *flag => match iter.next() {
                Some(value) => moved.push((*var, value.clone(), *flag)),
                None => kept.push(arg.clone()),
            },
            Some((flag, var, _)) => {
                let value = text[flag.len() + 1..].to_string();
                moved.push((*var, OsString::from(value), *flag));
            }
            None => kept.push(arg.clone()),
        }
    }
    (kept, moved)
}

/// Runs this program again with its secret flags moved into the environment; returns only
/// when there were none (or it could not run itself again, when the flags stay as given).
pub fn move_to_environment() {
    if std::env::var_os(MOVED).is_some() {
        return;
    }
    let args: Vec<OsString> = std::env::args_os().collect();
    let (kept, moved) = split(&args);
    if moved.is_empty() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let names: Vec<&str> = moved.iter().map(|(_, _, flag)| *flag).collect();
    let mut command = std::process::Command::new(exe);
    if let Some(first) = kept.first() {
        command.arg0(first);
    }
    command
        .args(kept.iter().skip(1))
        .envs(moved.iter().map(|(var, value, _)| (var, value)))
        .env(MOVED, names.join(","));
    // Only returns on failure: then the flags are used as given.
    let _ = command.exec();
}

/// The warning for flags that were moved (the secret was in the process list a moment).
pub fn warning() -> Option<String> {
    let moved = std::env::var(MOVED).ok()?;
    let vars: Vec<String> = moved
        .split(',')
        .filter_map(|flag| SECRET_FLAGS.iter().find(|(f, _, _)| *f == flag))
        .map(|(flag, var, _)| format!("{flag} (set {var} instead)"))
        .collect();
    Some(format!(
        "warning: {} put the secret in the process list, readable by every user of this machine; cove moved it out at once",
        vars.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn secret_flags_are_taken_out_and_nothing_else() {
        let (kept, moved) = split(&os(&[
            "cove",
            "--json",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--token",
            "s3cret",
            "--sandbox-token=t0k",
        ]));
        assert_eq!(
            kept,
            os(&["cove", "--json", "serve", "--listen", "127.0.0.1:0"])
        );
        assert_eq!(
            moved,
            vec![
                ("COVE_SERVE_TOKEN", OsString::from("s3cret"), "--token"),
                (
                    "COVE_SANDBOX_TOKEN",
                    OsString::from("t0k"),
                    "--sandbox-token"
                ),
            ]
        );
        // A task that mentions a flag is a task; --token outside serve is not serve's.
        let (kept, moved) = split(&os(&["cove", "run", "use --token here", "--token", "x"]));
        assert_eq!(kept.len(), 5);
        assert!(moved.is_empty());
    }
}
