//! Fitting the history into the model's window before every call.
//!
//! The stored history never changes; each call gets a compressed view of it, built in this
//! order until it fits: drop long tool-call arguments of older answers; truncate older tool
//! results, then user messages, then assistant messages to a threshold (the newest few tool
//! results stay whole), halving the threshold and repeating; then leave out whole old turns
//! from the middle outwards, keeping the first user message. Every cut says which stored
//! message it came from, so `expand_message` can bring it back. Token counts are taken once
//! per message, so planning a call is arithmetic over cached numbers.

mod cuts;

pub use cuts::Cuts;

use serde_json::Value;

use super::tokens::{Calibration, IMAGE_TOKENS, MESSAGE_OVERHEAD, TokenCounter};
use crate::llm::{ChatMessage, ContentPart, Role};

/// Strings in old tool-call arguments longer than this are dropped.
const LONG_ARGUMENT_CHARS: usize = 200;

/// What the note that ends a truncated message costs, at most.
const NOTE_TOKENS: usize = 60;

/// The first truncation threshold, in tokens; halved each round down to `MIN_THRESHOLD`.
const FIRST_THRESHOLD: usize = 1_000;

const MIN_THRESHOLD: usize = 50;

/// Tool results this new stay whole until nothing else is left to cut.
const KEEP_RECENT_TOOL_RESULTS: usize = 3;

/// Assistant answers this new keep their tool-call arguments.
const KEEP_RECENT_ARGUMENTS: usize = 2;

/// Planned afresh, the history takes at most this share of the room it may take: enough
/// left for many calls to append before the next fresh plan, which changes the prompt's
/// middle, and enough kept that each call's new turn is a small part of its prompt.
const RECUT_TARGET_PERCENT: usize = 85;

/// Tokens of one page of `expand_message`: a quarter of what the answer leaves of the
/// window. A message longer than that is read back page by page.
pub fn page_tokens(window: usize, max_tokens: usize) -> usize {
    window.saturating_sub(max_tokens) / 4
}

/// The smallest output cap worth calling the model with.
const MIN_OUTPUT_TOKENS: usize = 1_024;

/// Why the history cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContextError {
    /// Even with every message cut, the call does not fit: raise the window, shorten the
    /// system prompt or knowledge, or lower `--max-tokens`.
    #[error(
        "the context cannot fit the model's window of {window} tokens: the system prompt, tools and knowledge take {fixed}, the history cut to the bone {history}, and an answer needs at least {min_output}. Use a model with a larger window, give the server a larger context (llama.cpp: -c 16384; Ollama: OLLAMA_CONTEXT_LENGTH), or send less (--tools compact, a smaller knowledge_budget, a lower --max-tokens)"
    )]
    CannotFit {
        window: usize,
        fixed: usize,
        history: usize,
        min_output: usize,
    },
}

/// What kind of message an entry is, for the order of cuts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A native tool result, or an XML-mode `<function_results>` user message.
    ToolResult,
    User,
    Assistant,
}

/// One form of a message with its counts.
#[derive(Debug, Clone)]
struct Variant {
    message: ChatMessage,
    text_tokens: usize,
    text_chars: usize,
    /// Native tool calls.
    call_tokens: usize,
    images: usize,
}

impl Variant {
    fn new(message: ChatMessage, counter: &TokenCounter) -> Self {
        let text = message.text();
        let call_tokens = counter.tool_calls(&message.tool_calls);
        let images = message
            .content
            .iter()
            .filter(|p| matches!(p, ContentPart::Image { .. }))
            .count();
        Variant {
            text_tokens: counter.text(&text),
            text_chars: text.chars().count(),
            call_tokens,
            images,
            message,
        }
    }

    fn tokens(&self) -> usize {
        self.text_tokens + self.call_tokens + self.images * IMAGE_TOKENS + MESSAGE_OVERHEAD
    }

    /// Tokens once truncated to `threshold` tokens of text (images dropped).
    fn truncated_tokens(&self, threshold: usize) -> usize {
        if self.text_tokens <= threshold && self.images == 0 {
            return self.tokens();
        }
        self.text_tokens.min(threshold) + NOTE_TOKENS + self.call_tokens + MESSAGE_OVERHEAD
    }
}

/// A history message with what compression needs to know about it, computed once.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The stored message's id (what `expand_message` takes).
    pub id: i64,
    kind: Kind,
    full: Variant,
    /// The message with its long tool-call arguments dropped, when that saves anything.
    stripped: Option<Variant>,
}

impl Entry {
    /// Counts `message` (stored as `id`) once, for every later call.
    pub fn new(id: i64, message: ChatMessage, counter: &TokenCounter) -> Self {
        let kind = match message.role {
            Role::Tool => Kind::ToolResult,
            Role::User if crate::toolcall::xml::is_result(&message.text()) => Kind::ToolResult,
            Role::User => Kind::User,
            Role::Assistant => Kind::Assistant,
        };
        let stripped = if kind == Kind::Assistant {
            strip_arguments(&message, id).map(|m| Variant::new(m, counter))
        } else {
            None
        };
        let full = Variant::new(message, counter);
        let stripped = stripped.filter(|s| s.tokens() < full.tokens());
        Entry {
            id,
            kind,
            full,
            stripped,
        }
    }

    /// The message as stored.
    pub fn message(&self) -> &ChatMessage {
        &self.full.message
    }

    /// Its tokens, uncut.
    pub fn tokens(&self) -> usize {
        self.full.tokens()
    }
}

/// How one entry is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Whole,
    Stripped,
    Truncated(usize),
    Omitted,
}

/// The limits of one call.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// The model's context window.
    pub window: usize,
    /// The output cap wanted.
    pub max_tokens: usize,
    /// System prompt, tool descriptions and temporary message, counted.
    pub fixed: usize,
}

/// What compression did to one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Prompt tokens (as the provider counts them) before and after.
    pub tokens_before: usize,
    pub tokens_after: usize,
    pub arguments_dropped: usize,
    pub truncated: usize,
    pub omitted: usize,
}

impl Stats {
    /// Whether anything was cut.
    pub fn compressed(&self) -> bool {
        self.arguments_dropped + self.truncated + self.omitted > 0
    }
}

/// The history as this call sends it.
#[derive(Debug, Clone)]
pub struct Fitted {
    pub messages: Vec<ChatMessage>,
    /// The output cap, lowered if the prompt leaves less room.
    pub max_tokens: usize,
    /// The prompt as Cove counted it (fixed part included), before calibration: what the
    /// provider's reported usage is compared with.
    pub counted: usize,
    pub stats: Stats,
}

/// Room for estimation error: what a count may be off by between two calibrations.
fn margin(window: usize) -> usize {
    window / 50 + 32
}

struct Plan<'a> {
    entries: &'a [Entry],
    forms: Vec<Form>,
    costs: Vec<usize>,
    total: usize,
    /// Counts of truncated messages as sent, when the caller keeps them; else estimates.
    exact: Option<&'a TruncatedCounts<'a>>,
}

/// The tokens of truncated messages as they are sent, counted once each: many estimates of
/// a cut message's head would add up to more error than the window's margin allows.
struct TruncatedCounts<'a> {
    counter: &'a TokenCounter,
    known: &'a std::cell::RefCell<std::collections::HashMap<(i64, bool, usize), usize>>,
}

impl TruncatedCounts<'_> {
    fn count(&self, id: i64, stripped: bool, threshold: usize, variant: &Variant) -> usize {
        let key = (id, stripped, threshold);
        if let Some(n) = self.known.borrow().get(&key) {
            return *n;
        }
        let n = self.counter.message(&truncate(variant, threshold, id));
        self.known.borrow_mut().insert(key, n);
        n
    }
}

impl<'a> Plan<'a> {
    fn new(entries: &'a [Entry]) -> Self {
        let costs: Vec<usize> = entries.iter().map(Entry::tokens).collect();
        Plan {
            entries,
            forms: vec![Form::Whole; entries.len()],
            total: costs.iter().sum(),
            costs,
            exact: None,
        }
    }

    /// Tokens of entry `i` truncated to `threshold` from `base` (stripped or not).
    fn truncated_cost(&self, i: usize, threshold: usize, stripped: bool) -> usize {
        let entry = &self.entries[i];
        let base = match (&entry.stripped, stripped) {
            (Some(s), true) => s,
            _ => &entry.full,
        };
        if base.text_tokens <= threshold && base.images == 0 {
            return base.tokens();
        }
        match self.exact {
            Some(exact) => exact.count(entry.id, stripped, threshold, base),
            None => base.truncated_tokens(threshold),
        }
    }

    fn base(&self, i: usize) -> &Variant {
        match (self.forms[i], &self.entries[i].stripped) {
            (Form::Stripped | Form::Truncated(_), Some(s)) => s,
            _ => &self.entries[i].full,
        }
    }

    fn set(&mut self, i: usize, form: Form) {
        let cost = match form {
            Form::Whole => self.entries[i].full.tokens(),
            Form::Stripped => self.entries[i]
                .stripped
                .as_ref()
                .map_or(self.entries[i].full.tokens(), Variant::tokens),
            Form::Truncated(t) => {
                let stripped = self.entries[i].stripped.is_some()
                    && matches!(self.forms[i], Form::Stripped | Form::Truncated(_));
                self.truncated_cost(i, t, stripped)
            }
            Form::Omitted => 0,
        };
        // A truncation of a stripped message keeps it stripped.
        let form = match (self.forms[i], form) {
            (Form::Stripped, Form::Truncated(t)) | (Form::Truncated(_), Form::Truncated(t)) => {
                Form::Truncated(t)
            }
            (_, f) => f,
        };
        self.total = self.total - self.costs[i] + cost;
        self.costs[i] = cost;
        self.forms[i] = form;
    }
}

impl Plan<'_> {
    /// Cuts entry `i` to `form`, its long arguments dropped first when it has any; a form
    /// that would not make it smaller leaves it as it is.
    fn cut(&mut self, i: usize, form: Form) {
        if matches!(form, Form::Stripped | Form::Truncated(_))
            && self.entries[i].stripped.is_some()
            && self.forms[i] == Form::Whole
        {
            self.set(i, Form::Stripped);
        }
        let stripped = self.entries[i].stripped.is_some() && self.forms[i] != Form::Whole;
        match form {
            Form::Truncated(t) if self.truncated_cost(i, t, stripped) >= self.costs[i] => {}
            Form::Stripped => {}
            form => self.set(i, form),
        }
    }
}

/// Indices of the newest `n` entries of `kind`.
fn newest(entries: &[Entry], kind: Kind, n: usize) -> Vec<usize> {
    entries
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, e)| e.kind == kind)
        .take(n)
        .map(|(i, _)| i)
        .collect()
}

/// Fits `entries` into `budget`. `calibration` turns Cove's counts into the provider's.
pub fn fit(
    entries: &[Entry],
    budget: Budget,
    calibration: &Calibration,
) -> Result<Fitted, ContextError> {
    let available = budget.window.saturating_sub(margin(budget.window));
    let min_output = budget.max_tokens.min(MIN_OUTPUT_TOKENS);
    let mut plan = Plan::new(entries);
    let prompt = |plan: &Plan| calibration.apply(budget.fixed + plan.total);
    let fits = |plan: &Plan, reserve: usize| prompt(plan) + reserve <= available;
    let tokens_before = prompt(&plan);

    let recent_results = newest(entries, Kind::ToolResult, KEEP_RECENT_TOOL_RESULTS);
    let recent_answers = newest(entries, Kind::Assistant, KEEP_RECENT_ARGUMENTS);
    let newest_user = newest(entries, Kind::User, 1).first().copied();
    let last = entries.len().saturating_sub(1);
    // The newest message of each kind is what the model is acting on.
    let protected = |i: usize, kind: Kind| match kind {
        Kind::ToolResult => recent_results.contains(&i),
        Kind::Assistant => recent_answers.first() == Some(&i),
        Kind::User => newest_user == Some(i) || i == last,
    };

    let reserve = budget.max_tokens;
    if !fits(&plan, reserve) {
        // 1. Long tool-call arguments of older answers.
        for (i, entry) in entries.iter().enumerate() {
            if fits(&plan, reserve) {
                break;
            }
            if entry.stripped.is_some() && !recent_answers.contains(&i) {
                plan.set(i, Form::Stripped);
            }
        }
        // 2. Truncation, oldest first, tool results then user then assistant messages.
        let mut threshold = FIRST_THRESHOLD;
        'rounds: while threshold >= MIN_THRESHOLD {
            for kind in [Kind::ToolResult, Kind::User, Kind::Assistant] {
                for (i, entry) in entries.iter().enumerate() {
                    if fits(&plan, reserve) {
                        break 'rounds;
                    }
                    if entry.kind == kind
                        && !protected(i, kind)
                        && plan.base(i).truncated_tokens(threshold) < plan.costs[i]
                    {
                        plan.set(i, Form::Truncated(threshold));
                    }
                }
            }
            threshold /= 2;
        }
        // 3. Whole turns from the middle outwards; the first message and the newest turn stay.
        if !fits(&plan, reserve) {
            omit_middle_out(&mut plan, &[], |plan| fits(plan, reserve));
        }
        // 4. The protected messages too, before giving up on a full output cap.
        if !fits(&plan, min_output) {
            for i in 0..entries.len() {
                if fits(&plan, min_output) {
                    break;
                }
                if plan.forms[i] != Form::Omitted
                    && plan.base(i).truncated_tokens(MIN_THRESHOLD) < plan.costs[i]
                {
                    plan.set(i, Form::Truncated(MIN_THRESHOLD));
                }
            }
        }
    }
    finish(&plan, budget, calibration, tokens_before)
}

/// The call as `plan` leaves it, or why it cannot be made.
fn finish(
    plan: &Plan,
    budget: Budget,
    calibration: &Calibration,
    tokens_before: usize,
) -> Result<Fitted, ContextError> {
    let available = budget.window.saturating_sub(margin(budget.window));
    let min_output = budget.max_tokens.min(MIN_OUTPUT_TOKENS);
    let entries = plan.entries;
    let used = calibration.apply(budget.fixed + plan.total);
    if used + min_output > available {
        return Err(ContextError::CannotFit {
            window: budget.window,
            fixed: calibration.apply(budget.fixed),
            history: calibration.apply(plan.total),
            min_output,
        });
    }
    let max_tokens = budget.max_tokens.min(available - used);
    let stats = Stats {
        tokens_before,
        tokens_after: used,
        arguments_dropped: plan
            .forms
            .iter()
            .zip(entries)
            .filter(|(f, e)| {
                e.stripped.is_some() && matches!(f, Form::Stripped | Form::Truncated(_))
            })
            .count(),
        truncated: plan
            .forms
            .iter()
            .enumerate()
            .filter(|(i, f)| matches!(f, Form::Truncated(t) if plan.base(*i).truncated_tokens(*t) < plan.base(*i).tokens()))
            .count(),
        omitted: plan.forms.iter().filter(|f| **f == Form::Omitted).count(),
    };
    Ok(Fitted {
        messages: materialize(plan),
        max_tokens,
        counted: budget.fixed + plan.total,
        stats,
    })
}

/// Leaves out whole turns (a message and the tool results that answer it) from the middle of
/// the history outwards until `fits`, keeping the first turn, the newest one and any turn
/// holding an entry of `keep`.
fn omit_middle_out(plan: &mut Plan, keep: &[usize], fits: impl Fn(&Plan) -> bool) {
    let entries = plan.entries;
    let mut turns: Vec<(usize, usize)> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        match turns.last_mut() {
            // Results stay with the answer that called for them, native or XML.
            Some((_, end)) if e.kind == Kind::ToolResult => *end = i + 1,
            _ => turns.push((i, i + 1)),
        }
    }
    if turns.len() <= 2 {
        return;
    }
    let droppable = 1..turns.len() - 1;
    let middle = droppable.start + droppable.len() / 2;
    let mut order = vec![middle];
    for d in 1..droppable.len() {
        if middle >= droppable.start + d {
            order.push(middle - d);
        }
        if middle + d < droppable.end {
            order.push(middle + d);
        }
    }
    // The extra note costs a little; count it before it is needed.
    plan.total += NOTE_TOKENS;
    let mut any = false;
    for t in order {
        if fits(plan) {
            break;
        }
        let (start, end) = turns[t];
        if keep.iter().any(|k| (start..end).contains(k)) {
            continue;
        }
        for i in start..end {
            plan.set(i, Form::Omitted);
        }
        any = true;
    }
    if !any {
        plan.total -= NOTE_TOKENS;
    }
}

fn truncation_note(id: i64, full_tokens: usize) -> String {
    format!(
        "\n[… truncated to save context. This is message {id} ({full_tokens} tokens whole): call expand_message with message_id {id} to read all of it.]"
    )
}

fn truncate(variant: &Variant, threshold: usize, id: i64) -> ChatMessage {
    let text = variant.message.text();
    let keep = if variant.text_tokens <= threshold {
        variant.text_chars
    } else {
        variant.text_chars * threshold / variant.text_tokens.max(1)
    };
    let mut head: String = text.chars().take(keep).collect();
    head.push_str(&truncation_note(id, variant.tokens()));
    ChatMessage {
        content: vec![ContentPart::Text { text: head }],
        ..variant.message.clone()
    }
}

fn materialize(plan: &Plan) -> Vec<ChatMessage> {
    let mut out = Vec::with_capacity(plan.entries.len());
    let omitted: Vec<i64> = plan
        .entries
        .iter()
        .zip(&plan.forms)
        .filter(|(_, f)| **f == Form::Omitted)
        .map(|(e, _)| e.id)
        .collect();
    let mut noted = omitted.is_empty();
    for (i, entry) in plan.entries.iter().enumerate() {
        let message = match plan.forms[i] {
            Form::Whole => entry.full.message.clone(),
            Form::Stripped => plan.base(i).message.clone(),
            Form::Truncated(t) => truncate(plan.base(i), t, entry.id),
            Form::Omitted => {
                if !noted {
                    noted = true;
                    out.push(ChatMessage::user(omission_note(&omitted)));
                }
                continue;
            }
        };
        out.push(message);
    }
    out
}

fn omission_note(ids: &[i64]) -> String {
    let (first, last) = (
        ids.first().copied().unwrap_or(0),
        ids.last().copied().unwrap_or(0),
    );
    format!(
        "[Context note: {} earlier messages (ids {first} to {last}) are left out here to fit the model's context window. They are stored: expand_message with a message_id reads any of them.]",
        ids.len()
    )
}

/// The message with long strings in its tool-call arguments replaced by a pointer to the
/// stored message: native arguments keep their keys, XML parameters their names.
fn strip_arguments(message: &ChatMessage, id: i64) -> Option<ChatMessage> {
    let placeholder =
        |chars: usize| format!("[{chars} characters dropped to save context; expand_message {id}]");
    let mut changed = false;
    let mut out = message.clone();
    for call in &mut out.tool_calls {
        changed |= strip_value(&mut call.arguments, &placeholder);
    }
    for part in &mut out.content {
        if let ContentPart::Text { text } = part
            && let Some(stripped) = strip_xml_parameters(text, &placeholder)
        {
            *text = stripped;
            changed = true;
        }
    }
    changed.then_some(out)
}

fn strip_value(value: &mut Value, placeholder: &impl Fn(usize) -> String) -> bool {
    match value {
        Value::String(s) if s.chars().count() > LONG_ARGUMENT_CHARS => {
            *s = placeholder(s.chars().count());
            true
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |acc, v| strip_value(v, placeholder) | acc),
        Value::Object(map) => map
            .values_mut()
            .fold(false, |acc, v| strip_value(v, placeholder) | acc),
        _ => false,
    }
}

fn strip_xml_parameters(text: &str, placeholder: &impl Fn(usize) -> String) -> Option<String> {
    const CLOSE: &str = "</parameter>";
    let mut out = String::new();
    let mut rest = text;
    let mut changed = false;
    while let Some(open) = rest.find("<parameter") {
        let Some(tag_end) = rest[open..].find('>').map(|e| open + e + 1) else {
            break;
        };
        let Some(close) = rest[tag_end..].find(CLOSE).map(|c| tag_end + c) else {
            break;
        };
        let value = &rest[tag_end..close];
        out.push_str(&rest[..tag_end]);
        let chars = value.chars().count();
        if chars > LONG_ARGUMENT_CHARS {
            out.push_str(&placeholder(chars));
            changed = true;
        } else {
            out.push_str(value);
        }
        out.push_str(CLOSE);
        rest = &rest[close + CLOSE.len()..];
    }
    out.push_str(rest);
    changed.then_some(out)
}

#[cfg(test)]
mod tests;
