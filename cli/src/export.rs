//! `cove export THREAD`: the thread as one file a person can open anywhere.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use cove_core::export::{self, Format, Secrets, Step};
use serde_json::json;

use crate::{CliError, Invocation};

/// `cove export` arguments.
#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// The thread (its id, or the start of it).
    thread: String,
    /// html (one self-contained page), md or json; by default the output file's ending
    /// says, else html.
    #[arg(long, value_enum)]
    format: Option<FormatArg>,
    /// Where to write it (`-`: standard output); by default THREAD.html (or .md, .json) in
    /// this folder.
    #[arg(long, short)]
    output: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum FormatArg {
    Html,
    Md,
    Json,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        match f {
            FormatArg::Html => Format::Html,
            FormatArg::Md => Format::Markdown,
            FormatArg::Json => Format::Json,
        }
    }
}

/// The format an output file's name asks for.
fn format_of(path: &std::path::Path) -> Option<Format> {
    match path.extension()?.to_str()? {
        "html" | "htm" => Some(Format::Html),
        "md" | "markdown" => Some(Format::Markdown),
        "json" => Some(Format::Json),
        _ => None,
    }
}

/// `cove export THREAD [--format F] [--output FILE]`
pub(crate) fn export(inv: &Invocation, args: ExportArgs) -> Result<ExitCode, CliError> {
    let transcript = export::transcript(&inv.store, &args.thread)?;
    let format = args
        .format
        .map(Format::from)
        .or_else(|| args.output.as_deref().and_then(format_of))
        .unwrap_or(Format::Html);
    let text = export::render(&transcript, format, &Secrets::of_controller(&inv.store)?);
    let to_stdout = args.output.as_deref() == Some(std::path::Path::new("-"));
    if to_stdout {
        std::io::stdout()
            .write_all(text.as_bytes())
            .map_err(|e| CliError::Failed(format!("cannot write the export: {e}")))?;
        return Ok(ExitCode::SUCCESS);
    }
    let path = args.output.unwrap_or_else(|| {
        PathBuf::from(format!("{}.{}", transcript.thread.id, format.extension()))
    });
    std::fs::write(&path, &text)
        .map_err(|e| CliError::Failed(format!("cannot write {}: {e}", path.display())))?;
    let screenshots = transcript
        .steps
        .iter()
        .filter(|s| {
            matches!(
                s,
                Step::Tool {
                    screenshot: Some(_),
                    ..
                }
            )
        })
        .count();
    let written = json!({
        "path": path.display().to_string(),
        "format": format.extension(),
        "bytes": text.len(),
        "steps": transcript.steps.len(),
        "screenshots": screenshots,
    });
    inv.printer.result(&written, |w| {
        format!(
            "wrote {} ({} steps, {} screenshots, {} KB)",
            w["path"].as_str().unwrap_or_default(),
            w["steps"],
            w["screenshots"],
            text.len().div_ceil(1024)
        )
    });
    Ok(ExitCode::SUCCESS)
}
