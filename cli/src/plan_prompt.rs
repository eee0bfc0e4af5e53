//! The answer to a proposed plan typed at the terminal of the run that proposed it:
//! approve, edit in the person's editor, or reject with a reason.

use cove_protocol::plan::Plan;

use super::prompts::Typing;
use super::render::Renderer;
use super::{CliError, Invocation};
use cove_core::llm::ChatMessage;
use cove_core::plan_answer::{approved, rejected};
use cove_core::plan_text;

/// How the thread's end reads after a rejection without a reason.
pub(super) fn ending(plan: &Plan, thread: &str) -> String {
    if plan.reason.is_some() {
        format!(
            "Plan rejected ({} versions so far); the thread ends here. Go on with: cove reply {thread} \"...\"",
            plan.version
        )
    } else {
        format!("Plan rejected; the thread ends here. Go on with: cove reply {thread} \"...\"")
    }
}

/// Reads an edited plan from `path`.
pub(super) fn read_edit(path: &std::path::Path) -> Result<cove_core::store::PlanDraft, CliError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        CliError::Failed(format!(
            "cannot read {}: {e}; nothing was changed",
            path.display()
        ))
    })?;
    Ok(plan_text::parse(&text)?)
}

/// What the person at the terminal made of a proposed plan.
pub(super) enum PlanAnswer {
    /// Approved, edited, or rejected with a reason: the run goes on with this message.
    RunOn(ChatMessage),
    /// Rejected without a reason: the thread ends.
    Ended,
    /// Ctrl-C or the end of input: the plan still waits for an answer.
    Unanswered,
}

/// Asks the person at the terminal about the plan the run proposed.
pub(super) async fn ask_at_terminal<O: std::io::Write, E: std::io::Write>(
    inv: &Invocation,
    thread: &str,
    renderer: &mut Renderer<O, E>,
) -> Result<PlanAnswer, CliError> {
    loop {
        let typing = Typing::start();
        renderer.prompt_for_plan();
        let Some(line) = typing.line().await else {
            renderer.left_prompt();
            return Ok(PlanAnswer::Unanswered);
        };
        let line = line.trim();
        let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        match word.to_ascii_lowercase().as_str() {
            "a" | "approve" | "y" | "yes" => {
                let plan = inv.store.approve_plan(thread, None)?;
                return Ok(PlanAnswer::RunOn(approved(&plan, false)));
            }
            "e" | "edit" => match edit_in_editor(inv, thread).await {
                Ok(plan) => return Ok(PlanAnswer::RunOn(approved(&plan, true))),
                Err(e) => renderer.plan_note(&e.to_string()),
            },
            "r" | "reject" | "n" | "no" => {
                let reason = Some(rest.trim()).filter(|r| !r.is_empty());
                let plan = inv.store.reject_plan(thread, reason)?;
                return Ok(match rejected(&plan) {
                    Some(message) => PlanAnswer::RunOn(message),
                    None => {
                        renderer.plan_note(&ending(&plan, thread));
                        PlanAnswer::Ended
                    }
                });
            }
            _ => renderer
                .plan_note("answer a (approve), e (edit) or r (reject, a reason may follow)"),
        }
    }
}

/// Opens `$VISUAL` / `$EDITOR` (else `vi`) on the waiting plan as Markdown and approves what
/// the person saves; a malformed edit changes nothing.
async fn edit_in_editor(inv: &Invocation, thread: &str) -> Result<Plan, CliError> {
    let plan = inv
        .store
        .current_plan(thread)?
        .ok_or_else(|| CliError::Failed("the thread has no plan".into()))?;
    let dir = tempfile::tempdir()
        .map_err(|e| CliError::Failed(format!("cannot make a file to edit: {e}")))?;
    let path = dir.path().join("plan.md");
    std::fs::write(&path, plan.to_markdown())
        .map_err(|e| CliError::Failed(format!("cannot write {}: {e}", path.display())))?;
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(|key| std::env::var(key).ok())
        .find(|e| !e.trim().is_empty())
        .unwrap_or_else(|| "vi".into());
    let status = {
        let path = path.clone();
        tokio::task::spawn_blocking(move || {
            // The editor may carry its own arguments (`code --wait`).
            std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("{editor} \"$1\""))
                .arg("sh")
                .arg(&path)
                .status()
        })
        .await
        .map_err(|e| CliError::Failed(e.to_string()))?
    };
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => {
            return Err(CliError::Failed(format!(
                "the editor exited with {s}; nothing was changed"
            )));
        }
        Err(e) => {
            return Err(CliError::Setup(format!(
                "cannot start the editor ($VISUAL / $EDITOR): {e}"
            )));
        }
    }
    let draft = read_edit(&path)?;
    Ok(inv.store.approve_plan(thread, Some(draft))?)
}
