//! A plan as a person edits it: Markdown (a `# goal` line, then a numbered or bulleted step
//! per line, as [`Plan::to_markdown`](cove_protocol::plan::Plan::to_markdown) writes it) or
//! JSON (`{"goal": …, "steps": [{"id"?, "description"}]}`).

use cove_protocol::plan::{PlanStep, StepStatus};
use serde::Deserialize;

use crate::store::{PlanDraft, PlanError};

/// A plan as JSON: what a stored plan also carries (id, version, status) is not read.
#[derive(Deserialize)]
struct JsonPlan {
    goal: String,
    steps: Vec<JsonStep>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonStep {
    #[serde(default)]
    id: Option<String>,
    description: String,
    #[serde(default)]
    status: Option<StepStatus>,
}

/// Reads an edited plan; a malformed one is refused with what is wrong.
pub fn parse(text: &str) -> Result<PlanDraft, PlanError> {
    let text = text.trim();
    if text.starts_with('{') {
        let plan: JsonPlan = serde_json::from_str(text)
            .map_err(|e| PlanError::Malformed(format!("the plan is not valid JSON: {e}")))?;
        return PlanDraft {
            goal: plan.goal,
            steps: plan
                .steps
                .into_iter()
                .map(|s| PlanStep {
                    id: s.id.unwrap_or_default(),
                    description: s.description,
                    status: s.status.unwrap_or_default(),
                })
                .collect(),
        }
        .checked();
    }
    let mut goal = None;
    let mut steps = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(heading) = line.strip_prefix('#') {
            if goal.is_some() {
                return Err(PlanError::Malformed(format!(
                    "line {}: a plan has one goal (one `#` line)",
                    n + 1
                )));
            }
            goal = Some(heading.trim_start_matches('#').trim().to_string());
            continue;
        }
        let Some(item) = list_item(line) else {
            return Err(PlanError::Malformed(format!(
                "line {}: expected `# goal` or a step such as `1. …`, found {line:?}",
                n + 1
            )));
        };
        if goal.is_none() {
            return Err(PlanError::Malformed(
                "the plan must start with its goal as a `# …` line".into(),
            ));
        }
        steps.push(step(item));
    }
    PlanDraft {
        goal: goal.unwrap_or_default(),
        steps,
    }
    .checked()
}

/// The text of a list item (`1. x`, `1) x`, `- x`, `* x`), if the line is one.
fn list_item(line: &str) -> Option<&str> {
    if let Some(rest) = line.strip_prefix("- ").or_else(|| line.strip_prefix("* ")) {
        return Some(rest);
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let rest = &line[digits..];
    rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") "))
}

/// A step from a list item: an optional `[x]`-style mark, the words, an optional
/// `(step ID)` at the end.
fn step(item: &str) -> PlanStep {
    let mut text = item.trim();
    let mut status = StepStatus::Pending;
    for (mark, s) in [
        ("[ ]", StepStatus::Pending),
        ("[~]", StepStatus::InProgress),
        ("[x]", StepStatus::Completed),
        ("[X]", StepStatus::Completed),
        ("[-]", StepStatus::Skipped),
    ] {
        if let Some(rest) = text.strip_prefix(mark) {
            text = rest.trim_start();
            status = s;
            break;
        }
    }
    let mut id = String::new();
    if let Some(open) = text.rfind("(step ")
        && text.ends_with(')')
    {
        id = text[open + "(step ".len()..text.len() - 1]
            .trim()
            .to_string();
        text = text[..open].trim_end();
    }
    PlanStep {
        id,
        description: text.to_string(),
        status,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cove_protocol::plan::{Plan, PlanStatus};

    #[test]
    fn markdown_round_trips_and_edits_read_back() {
        let plan = Plan {
            id: "t".into(),
            version: 1,
            goal: "Ship the site".into(),
            steps: vec![
                PlanStep {
                    id: "1".into(),
                    description: "Build it".into(),
                    status: StepStatus::Completed,
                },
                PlanStep {
                    id: "b".into(),
                    description: "Deploy (carefully)".into(),
                    status: StepStatus::Pending,
                },
            ],
            status: PlanStatus::Proposed,
            reason: None,
        };
        let back = parse(&plan.to_markdown()).unwrap();
        assert_eq!(back.goal, plan.goal);
        assert_eq!(back.steps, plan.steps);

        let edited = parse("# Ship it\n\n1. Build\n2) Test\n- Deploy\n").unwrap();
        assert_eq!(edited.goal, "Ship it");
        let ids: Vec<&str> = edited.steps.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["1", "2", "3"]);
        assert_eq!(edited.steps[2].description, "Deploy");
    }

    #[test]
    fn json_edits() {
        let draft = parse(
            r#"{"goal": "G", "steps": [{"description": "a"}, {"id": "z", "description": "b"}]}"#,
        )
        .unwrap();
        assert_eq!(draft.steps[0].id, "1");
        assert_eq!(draft.steps[1].id, "z");
    }

    #[test]
    fn malformed_plans_say_what_is_wrong() {
        for (text, says) in [
            ("1. a step", "must start with its goal"),
            ("# Goal", "no steps"),
            ("# Goal\nsome prose", "line 2: expected"),
            ("# Goal\n1. a\n# Other", "one goal"),
            ("# \n1. a", "no goal"),
            ("{\"goal\": \"G\"}", "not valid JSON"),
            (
                "{\"goal\": \"G\", \"steps\": [{\"id\": \"1\", \"description\": \"a\"}, {\"id\": \"1\", \"description\": \"b\"}]}",
                "two steps have the id",
            ),
        ] {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.contains(says), "{text:?}: {err}");
        }
    }
}
