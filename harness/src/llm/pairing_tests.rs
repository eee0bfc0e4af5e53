//! The request invariants the scripted server checks, checked.

use super::*;

fn request(wire: Wire, native: bool, messages: Value) -> Received {
    let mut body = json!({"messages": messages});
    if native {
        body["tools"] = json!([{"name": "read_file"}]);
    }
    Received {
        wire,
        body,
        headers: HeaderMap::new(),
    }
}

#[test]
fn openai_calls_need_their_tool_messages_right_after() {
    let paired = json!([
        {"role": "user", "content": "task"},
        {"role": "assistant", "tool_calls": [{"id": "a"}, {"id": "b"}]},
        {"role": "tool", "tool_call_id": "a", "content": "1"},
        {"role": "tool", "tool_call_id": "b", "content": "2"},
        {"role": "user", "content": "the browser now"},
    ]);
    assert!(pairing_problems(&request(Wire::OpenAi, true, paired)).is_empty());
    let missing = json!([
        {"role": "assistant", "tool_calls": [{"id": "a"}, {"id": "b"}]},
        {"role": "tool", "tool_call_id": "a", "content": "1"},
        {"role": "user", "content": "next"},
    ]);
    assert_eq!(
        pairing_problems(&request(Wire::OpenAi, true, missing)).len(),
        1
    );
    let orphan = json!([
        {"role": "user", "content": "task"},
        {"role": "tool", "tool_call_id": "z", "content": "1"},
    ]);
    assert_eq!(
        pairing_problems(&request(Wire::OpenAi, true, orphan)).len(),
        1
    );
}

#[test]
fn anthropic_results_come_in_the_next_user_message() {
    let paired = json!([
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a"}, {"type": "text", "text": "and the page"}]},
    ]);
    assert!(pairing_problems(&request(Wire::Anthropic, true, paired)).is_empty());
    let late = json!([
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a"}]},
        {"role": "user", "content": [{"type": "text", "text": "something else"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a"}]},
    ]);
    assert_eq!(
        pairing_problems(&request(Wire::Anthropic, true, late)).len(),
        2
    );
}

#[test]
fn xml_calls_are_followed_by_results_and_results_follow_calls() {
    let paired = json!([
        {"role": "assistant", "content": "<function_calls><invoke name=\"x\"></invoke></function_calls>"},
        {"role": "user", "content": "<function_results>1</function_results>"},
        {"role": "user", "content": "<function_results>2</function_results>"},
    ]);
    assert!(pairing_problems(&request(Wire::OpenAi, false, paired)).is_empty());
    let cut = json!([
        {"role": "assistant", "content": "<function_calls><invoke name=\"x\"></invoke></function_calls>"},
        {"role": "user", "content": "[Context note: left out]"},
        {"role": "user", "content": "<function_results>1</function_results>"},
    ]);
    assert_eq!(
        pairing_problems(&request(Wire::Anthropic, false, cut)).len(),
        2
    );
}
