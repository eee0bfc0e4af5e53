//! What the agent is told when a person answers its plan, and how a person reads that
//! message back: the approval is the person's message to the model, in words the model
//! acts on, but a page shows it as what the person did.

use cove_protocol::plan::Plan;

use crate::llm::ChatMessage;

/// Versions of a plan the user may reject with a reason before the thread ends.
pub const MAX_VERSIONS: u32 = 5;

/// What the agent is told of an approval.
pub fn approved(plan: &Plan, edited: bool) -> ChatMessage {
    ChatMessage::user(if edited {
        format!(
            "I edited your plan and approved my version (version {}):\n\n{}\nCarry out this version, reporting progress with update_plan.",
            plan.version,
            plan.to_markdown()
        )
    } else {
        format!(
            "I approve the plan (version {}). Carry it out, reporting progress with update_plan.",
            plan.version
        )
    })
}

/// What the agent is told of a rejection with a reason; none when the thread ends there.
pub fn rejected(plan: &Plan) -> Option<ChatMessage> {
    let reason = plan.reason.as_deref()?;
    (plan.version < MAX_VERSIONS).then(|| {
        ChatMessage::user(format!(
            "I reject this plan: {reason}\nPropose a new version with create_plan."
        ))
    })
}

/// What the person did, when `text` is one of the messages above: "You approved the plan
/// (version 2)." None for anything else the person wrote.
pub fn in_person_words(text: &str) -> Option<String> {
    let version = |rest: &str| {
        rest.split(|c: char| !c.is_ascii_digit())
            .find(|d| !d.is_empty())
            .map(str::to_string)
    };
    if let Some(rest) = text.strip_prefix("I approve the plan (version ") {
        return Some(format!(
            "You approved the plan (version {}).",
            version(rest)?
        ));
    }
    if let Some(rest) = text.strip_prefix("I edited your plan and approved my version (version ") {
        return Some(format!(
            "You edited the plan and approved your version (version {}).",
            version(rest)?
        ));
    }
    let reason = text.strip_prefix("I reject this plan: ")?;
    let reason = reason
        .strip_suffix("\nPropose a new version with create_plan.")
        .unwrap_or(reason);
    Some(format!("You asked for changes to the plan: {reason}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cove_protocol::plan::{PlanStatus, PlanStep};

    fn plan(version: u32, reason: Option<&str>) -> Plan {
        Plan {
            id: "p".into(),
            version,
            goal: "Goal".into(),
            steps: vec![PlanStep {
                id: "1".into(),
                description: "Do it".into(),
                status: Default::default(),
            }],
            status: PlanStatus::Proposed,
            reason: reason.map(str::to_string),
        }
    }

    #[test]
    fn each_answer_reads_back_as_what_the_person_did() {
        let said = |m: ChatMessage| in_person_words(&m.text());
        assert_eq!(
            said(approved(&plan(2, None), false)).as_deref(),
            Some("You approved the plan (version 2).")
        );
        assert_eq!(
            said(approved(&plan(3, None), true)).as_deref(),
            Some("You edited the plan and approved your version (version 3).")
        );
        assert_eq!(
            said(rejected(&plan(1, Some("fewer steps"))).unwrap()).as_deref(),
            Some("You asked for changes to the plan: fewer steps")
        );
        assert_eq!(in_person_words("Please approve the plan"), None);
    }
}
