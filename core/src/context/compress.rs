//! Fitting the history into the model's window before every call.
//!
//! The stored history never changes; each call gets a compressed view of it, built in this
//! order until it fits: drop long tool-call arguments of older answers; truncate older tool
//! results, then user messages, then assistant messages to a threshold (the newest few tool
//! results stay whole), halving the threshold and repeating; then leave out whole old turns
//! from the middle outwards, keeping the first user message. Every cut says which stored
//! message it came from, so `expand_message` can bring it back. Token counts are taken once
//! per message, so planning a call is arithmetic over cached numbers.

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

/// How the history was cut for a run's calls so far, kept so that its later calls send the
/// same prefix and the provider's prompt cache keeps serving it.
///
/// [`fit`] plans every call afresh: as the history grows it truncates a little more each
/// time, halving thresholds over old messages and moving the gap of left-out turns, so the
/// start of the prompt changes from one call to the next. Here a message's form is decided
/// once: a tool result longer than a page of `expand_message` is cut when first sent (it
/// could not stay whole for long, and cutting it a call later would change the prompt one
/// message back on every call), and a message, once cut, stays cut the same way. A call that
/// no longer fits cuts the messages since the last deeply cut one, deeply (one threshold, no
/// second pass), all at once, so the prompt changes only near its end and the room lasts
/// (the newest turn, the task and the newest user message stay whole). Only when that is not
/// enough is the history planned afresh, deeply: every older message cut and whole turns
/// left out from the middle until the history takes 85% of the room it may, so that many
/// following calls only append.
#[derive(Debug, Clone, Default)]
pub struct Cuts {
    /// Forms by stored message id; a message not named is sent whole.
    forms: std::collections::HashMap<i64, Form>,
    /// Tokens of cut messages as sent, by (id, stripped first, threshold).
    counted: std::cell::RefCell<std::collections::HashMap<(i64, bool, usize), usize>>,
    /// Times the history was planned afresh.
    recuts: u32,
    /// The provider refused the last prompt as too long this many times: the next plan cuts
    /// what is whole (1), or plans afresh (2), whatever Cove's count says.
    refused: u8,
    /// Messages sent at least once: a message's form at first sight is decided only once.
    seen: std::collections::HashSet<i64>,
}

/// How a message too long to keep is cut when first sent.
struct FirstSight {
    /// Tokens above which a message is cut at once: a page of `expand_message` (a quarter of
    /// what the answer leaves of the window), so that pages read back are never cut.
    limit: usize,
    /// Tokens of it that are sent.
    head: usize,
}

impl FirstSight {
    fn of(budget: Budget) -> FirstSight {
        let limit = page_tokens(budget.window, budget.max_tokens) + NOTE_TOKENS;
        FirstSight {
            limit,
            head: (limit / 4).clamp(MIN_THRESHOLD, FIRST_THRESHOLD),
        }
    }
}

impl Cuts {
    /// Times the history had to be planned afresh (each one changes the prompt's middle).
    pub fn recuts(&self) -> u32 {
        self.recuts
    }

    /// The provider found the prompt too long `times` times in a row although Cove's count
    /// said it fits: the next plan cuts harder (the second time, afresh).
    pub fn refused(&mut self, times: u8) {
        self.refused = times;
    }

    /// Fits `entries` into `budget`, keeping the cuts of earlier calls; `counter` counts
    /// the cut messages as they are sent (once each).
    pub fn fit(
        &mut self,
        entries: &[Entry],
        budget: Budget,
        calibration: &Calibration,
        counter: &TokenCounter,
    ) -> Result<Fitted, ContextError> {
        let counted = std::mem::take(&mut self.counted);
        let exact = TruncatedCounts {
            counter,
            known: &counted,
        };
        let fitted = self.plan(entries, budget, calibration, &exact);
        self.counted = counted;
        fitted
    }

    fn plan(
        &mut self,
        entries: &[Entry],
        budget: Budget,
        calibration: &Calibration,
        exact: &TruncatedCounts<'_>,
    ) -> Result<Fitted, ContextError> {
        let available = budget.window.saturating_sub(margin(budget.window));
        let reserve = budget.max_tokens;
        let min_output = budget.max_tokens.min(MIN_OUTPUT_TOKENS);
        let fits = |plan: &Plan, reserve: usize| {
            calibration.apply(budget.fixed + plan.total) + reserve <= available
        };
        let whole: usize = entries.iter().map(Entry::tokens).sum();
        let tokens_before = calibration.apply(budget.fixed + whole);
        let deep = deep_threshold(budget.window);
        let protected = newest_turn_and_task(entries);

        let mut plan = Plan::new(entries);
        plan.exact = Some(exact);
        let first_sight = FirstSight::of(budget);
        for (i, entry) in entries.iter().enumerate() {
            if let Some(form) = self.forms.get(&entry.id) {
                plan.cut(i, *form);
            } else if entry.kind == Kind::ToolResult
                && !self.seen.contains(&entry.id)
                && entry.tokens() > first_sight.limit
            {
                // Longer than a page the model could read back: it could not stay whole for
                // long, and cutting it later would change the prompt one message back on
                // every call. It is cut now, once, and read page by page if needed.
                plan.cut(i, Form::Truncated(first_sight.head));
            }
        }
        self.seen.extend(entries.iter().map(|e| e.id));
        if plan.forms.contains(&Form::Omitted) {
            // The note that stands in for the left-out turns.
            plan.total += NOTE_TOKENS;
        }
        let mut refused = std::mem::take(&mut self.refused);
        if refused >= 1 || !fits(&plan, reserve) {
            let before = plan.total;
            // The messages since the last one cut deep (or left out), all at once: the
            // prompt changes only there, near its end, and the room they free lasts many
            // calls. After a refusal, all of them too.
            let tail_start = (0..entries.len())
                .rev()
                .find(|&i| {
                    !protected.contains(&i)
                        && match plan.forms[i] {
                            Form::Omitted => true,
                            Form::Truncated(t) => t <= deep,
                            Form::Whole | Form::Stripped => false,
                        }
                })
                .map_or(0, |i| i + 1);
            for i in tail_start..entries.len() {
                if !protected.contains(&i) {
                    plan.cut(i, Form::Truncated(deep));
                }
            }
            // ...and if that is not enough, every one left not cut deep, at once: the prompt
            // then changes from the middle once, not a little further up on every call.
            if refused >= 1 || !fits(&plan, reserve) {
                for i in 0..entries.len() {
                    let shallow = match plan.forms[i] {
                        Form::Whole | Form::Stripped => true,
                        Form::Truncated(t) => t > deep,
                        Form::Omitted => false,
                    };
                    if !protected.contains(&i) && shallow {
                        plan.cut(i, Form::Truncated(deep));
                    }
                }
            }
            if plan.total == before {
                // Nothing was left to cut this way: a refusal needs the next step.
                refused = refused.saturating_mul(2);
            }
        }
        if refused >= 2 || !fits(&plan, reserve) {
            self.recuts += 1;
            let refused_at = calibration.apply(budget.fixed + plan.total);
            plan = Plan::new(entries);
            plan.exact = Some(exact);
            for i in 0..entries.len() {
                if !protected.contains(&i) {
                    plan.cut(i, Form::Truncated(deep));
                }
            }
            let room = available.saturating_sub(reserve);
            let fixed = calibration.apply(budget.fixed);
            let mut target = fixed + room.saturating_sub(fixed) * RECUT_TARGET_PERCENT / 100;
            if refused >= 2 {
                // The provider counts more than Cove does: well below what it refused.
                target = target.min(fixed + refused_at.saturating_sub(fixed) / 2);
            }
            if calibration.apply(budget.fixed + plan.total) > target {
                omit_middle_out(&mut plan, &protected, |plan| {
                    calibration.apply(budget.fixed + plan.total) <= target
                });
            }
            // The newest messages too, before giving up on a full output cap; the task last.
            for i in (1..entries.len()).chain((!entries.is_empty()).then_some(0)) {
                if fits(&plan, min_output) {
                    break;
                }
                if plan.forms[i] != Form::Omitted {
                    plan.cut(i, Form::Truncated(MIN_THRESHOLD));
                }
            }
        }
        self.forms = entries
            .iter()
            .zip(&plan.forms)
            .filter(|(_, f)| **f != Form::Whole)
            .map(|(e, f)| (e.id, *f))
            .collect();
        finish(&plan, budget, calibration, tokens_before)
    }
}

/// The one threshold older messages are cut to: deep enough that a cut is rarely needed
/// again, more of each kept in larger windows.
fn deep_threshold(window: usize) -> usize {
    (window / 200).clamp(100, FIRST_THRESHOLD)
}

/// The entries that stay whole: the first (the task), the newest user message, and the newest
/// turn (the last answer and what follows it: its results, the browser state).
fn newest_turn_and_task(entries: &[Entry]) -> Vec<usize> {
    let mut out = vec![0];
    let start = entries
        .iter()
        .rposition(|e| e.kind == Kind::Assistant)
        .unwrap_or(entries.len().saturating_sub(1));
    out.extend(start..entries.len());
    out.extend(newest(entries, Kind::User, 1));
    out
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
mod tests {
    use super::*;
    use crate::llm::ToolCall;
    use serde_json::json;

    fn counter() -> TokenCounter {
        TokenCounter::for_model("gpt-4o")
    }

    fn words(n: usize, seed: &str) -> String {
        (0..n).map(|i| format!("{seed}{i} ")).collect()
    }

    /// A native history: task, then `turns` of (assistant call, tool result of `size` words).
    fn history(turns: usize, size: usize) -> Vec<Entry> {
        let c = counter();
        let mut out = vec![Entry::new(1, ChatMessage::user("Build the site"), &c)];
        for t in 0..turns {
            let id = 2 + 2 * t as i64;
            let mut a = ChatMessage::assistant(format!("Step {t}"));
            a.tool_calls.push(ToolCall {
                id: format!("c{t}"),
                name: "create_file".into(),
                arguments: json!({"file_path": format!("f{t}.html"), "file_contents": words(100, "html")}),
            });
            out.push(Entry::new(id, a, &c));
            let r = ChatMessage::tool_result(
                &format!("c{t}"),
                "create_file",
                words(size, "out"),
                false,
            );
            out.push(Entry::new(id + 1, r, &c));
        }
        out
    }

    fn total(messages: &[ChatMessage]) -> usize {
        messages.iter().map(|m| counter().message(m)).sum()
    }

    #[test]
    fn a_history_that_fits_is_sent_as_it_is() {
        let entries = history(5, 100);
        let fitted = fit(
            &entries,
            Budget {
                window: 100_000,
                max_tokens: 4_000,
                fixed: 1_000,
            },
            &Calibration::default(),
        )
        .unwrap();
        assert!(!fitted.stats.compressed());
        assert_eq!(fitted.max_tokens, 4_000);
        let sent: Vec<_> = entries.iter().map(|e| e.message().clone()).collect();
        assert_eq!(fitted.messages, sent);
    }

    #[test]
    fn arguments_go_first_then_old_tool_results_are_truncated_with_a_pointer() {
        let entries = history(30, 1_000);
        let whole: usize = entries.iter().map(Entry::tokens).sum();
        let budget = Budget {
            window: whole / 2,
            max_tokens: 2_000,
            fixed: 500,
        };
        let fitted = fit(&entries, budget, &Calibration::default()).unwrap();
        let sent = total(&fitted.messages);
        assert!(
            sent + budget.fixed + fitted.max_tokens <= budget.window,
            "{sent} + fixed + {} > {}",
            fitted.max_tokens,
            budget.window
        );
        assert!(fitted.stats.arguments_dropped > 0 && fitted.stats.truncated > 0);
        assert_eq!(fitted.stats.omitted, 0, "truncation was enough");
        assert_eq!(fitted.messages.len(), entries.len());
        // The oldest result is cut and says where the whole is; the newest three are whole.
        let oldest = fitted.messages[2].text();
        assert!(
            oldest.contains("expand_message with message_id 3"),
            "{oldest}"
        );
        for back in [1, 3, 5] {
            let i = entries.len() - back;
            assert_eq!(&fitted.messages[i], entries[i].message(), "message {i}");
        }
        // Old calls keep their ids and keys; the long value is gone.
        let old_call = &fitted.messages[1].tool_calls[0];
        assert_eq!(old_call.id, "c0");
        assert_eq!(old_call.arguments["file_path"], "f0.html");
        assert!(
            old_call.arguments["file_contents"]
                .as_str()
                .unwrap()
                .contains("expand_message 2")
        );
    }

    #[test]
    fn middle_out_keeps_the_task_and_the_newest_turn_and_pairs_stay_whole() {
        let entries = history(200, 300);
        let budget = Budget {
            window: 8_000,
            max_tokens: 1_000,
            fixed: 1_000,
        };
        let fitted = fit(&entries, budget, &Calibration::default()).unwrap();
        assert!(fitted.stats.omitted > 0);
        let m = &fitted.messages;
        assert_eq!(m[0].text(), "Build the site", "the task stays");
        let note = m
            .iter()
            .position(|x| x.text().starts_with("[Context note:"))
            .expect("a note where messages are left out");
        assert!(note > 1 && note < m.len() - 2, "the gap is in the middle");
        assert_eq!(
            m[1].text(),
            "Step 0",
            "the oldest turns after the task stay too"
        );
        assert_eq!(m.last(), entries.last().map(Entry::message));
        // Every tool result follows the assistant message that called it.
        for (i, msg) in m.iter().enumerate() {
            if let Some(id) = &msg.tool_call_id {
                assert!(
                    m[..i]
                        .iter()
                        .rev()
                        .find(|p| p.role == Role::Assistant)
                        .is_some_and(|p| p.tool_calls.iter().any(|c| &c.id == id)),
                    "result {id} lost its call"
                );
            }
        }
        assert!(total(m) + budget.fixed + fitted.max_tokens <= budget.window);
    }

    #[test]
    fn calibration_makes_room_for_what_the_provider_really_counts() {
        let entries = history(40, 500);
        let budget = Budget {
            window: 20_000,
            max_tokens: 2_000,
            fixed: 500,
        };
        let mut calibration = Calibration::default();
        calibration.observe(1_000, 1_500);
        let fitted = fit(&entries, budget, &calibration).unwrap();
        let sent = calibration.apply(total(&fitted.messages) + budget.fixed);
        assert!(sent + fitted.max_tokens <= budget.window, "{sent}");
    }

    #[test]
    fn the_output_cap_shrinks_before_giving_up_and_the_impossible_fails() {
        let entries = history(1, 50);
        let fitted = fit(
            &entries,
            Budget {
                window: 4_000,
                max_tokens: 4_000,
                fixed: 1_500,
            },
            &Calibration::default(),
        )
        .unwrap();
        assert!(fitted.max_tokens >= 1_024 && fitted.max_tokens < 4_000);
        let err = fit(
            &entries,
            Budget {
                window: 4_000,
                max_tokens: 4_000,
                fixed: 3_900,
            },
            &Calibration::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("4000"), "{err}");
    }

    #[test]
    fn xml_parameters_are_stripped_by_value() {
        let long = "x".repeat(500);
        let text = format!(
            "Writing it.\n<function_calls>\n<invoke name=\"create_file\">\n<parameter name=\"file_path\">a.html</parameter>\n<parameter name=\"file_contents\">{long}</parameter>\n</invoke>\n</function_calls>"
        );
        let stripped = strip_arguments(&ChatMessage::assistant(text), 7).unwrap();
        let t = stripped.text();
        assert!(t.contains("<parameter name=\"file_path\">a.html</parameter>"));
        assert!(t.contains("[500 characters dropped to save context; expand_message 7]"));
        assert!(!t.contains(&long));
        assert!(strip_arguments(&ChatMessage::assistant("short"), 1).is_none());
    }

    /// Tokens at the start of `now` that repeat the start of `before`, message by message.
    fn shared_prefix(before: &[ChatMessage], now: &[ChatMessage]) -> usize {
        before
            .iter()
            .zip(now)
            .take_while(|(a, b)| a == b)
            .map(|(a, _)| counter().message(a))
            .sum()
    }

    /// Grows a native history by `turns` calls of `size`-word results, fitting each call
    /// into `budget` with `plan`; returns the share of all sent tokens that repeated the
    /// previous call's start, and the lowest share of one call.
    fn replay(
        turns: usize,
        size: usize,
        budget: Budget,
        mut plan: impl FnMut(&[Entry]) -> Fitted,
    ) -> (f64, f64) {
        let all = history(turns, size);
        let (mut shared, mut sent, mut lowest) = (0, 0, 1.0_f64);
        let mut previous: Vec<ChatMessage> = Vec::new();
        for end in (3..=all.len()).step_by(2) {
            let fitted = plan(&all[..end]);
            let total: usize = fitted.messages.iter().map(|m| counter().message(m)).sum();
            assert!(
                total + budget.fixed + fitted.max_tokens <= budget.window,
                "call {end} overflows"
            );
            let same = shared_prefix(&previous, &fitted.messages);
            if fitted.stats.compressed() {
                lowest = lowest.min(same as f64 / total as f64);
            }
            shared += same;
            sent += total;
            previous = fitted.messages;
        }
        (shared as f64 / sent as f64, lowest)
    }

    #[test]
    fn kept_cuts_keep_each_call_a_prefix_of_the_next() {
        let budget = Budget {
            window: 40_000,
            max_tokens: 4_000,
            fixed: 2_000,
        };
        let calibration = Calibration::default();
        let mut cuts = Cuts::default();
        let (stable, stable_lowest) = replay(300, 1_500, budget, |entries| {
            cuts.fit(entries, budget, &calibration, &counter()).unwrap()
        });
        let (fresh, _) = replay(300, 1_500, budget, |entries| {
            fit(entries, budget, &calibration).unwrap()
        });
        assert!(cuts.recuts() > 0, "the run was long enough to need re-cuts");
        assert!(
            stable >= 0.8,
            "kept cuts: {stable:.3} of the tokens repeated the previous call's start"
        );
        assert!(
            stable > fresh + 0.1,
            "kept cuts {stable:.3} against fresh plans {fresh:.3}"
        );
        assert!(stable_lowest > 0.0, "{stable_lowest}");
    }

    #[test]
    fn a_call_after_a_cut_changes_only_the_end_of_the_prompt() {
        let entries = history(60, 400);
        let budget = Budget {
            window: 30_000,
            max_tokens: 2_000,
            fixed: 1_000,
        };
        let calibration = Calibration::default();
        let mut cuts = Cuts::default();
        let first = cuts
            .fit(&entries[..81], budget, &calibration, &counter())
            .unwrap();
        assert!(first.stats.compressed());
        // Two more turns: only the turn that was the newest may change (cut now); everything
        // before it comes back as it was sent.
        let next = cuts
            .fit(&entries[..85], budget, &calibration, &counter())
            .unwrap();
        let same = first
            .messages
            .iter()
            .zip(&next.messages)
            .take_while(|(a, b)| a == b)
            .count();
        assert!(
            same >= first.messages.len() - 2,
            "{same} of {}",
            first.messages.len()
        );
        assert_eq!(next.messages.last(), Some(entries[84].message()));
        assert_eq!(
            next.messages[0].text(),
            "Build the site",
            "the task stays whole"
        );
    }

    #[test]
    fn a_fresh_plan_keeps_the_task_and_the_newest_user_message() {
        let c = counter();
        let mut entries = history(40, 300);
        let said = Entry::new(500, ChatMessage::user("NEW INSTRUCTION: use tabs"), &c);
        entries.push(said);
        entries.extend(history(40, 300).into_iter().skip(1).map(|e| {
            let id = e.id + 1_000;
            Entry::new(id, e.message().clone(), &c)
        }));
        let budget = Budget {
            window: 12_000,
            max_tokens: 1_000,
            fixed: 1_000,
        };
        let mut cuts = Cuts::default();
        let fitted = cuts
            .fit(&entries, budget, &Calibration::default(), &c)
            .unwrap();
        assert!(fitted.stats.omitted > 0, "{:?}", fitted.stats);
        let texts: Vec<String> = fitted.messages.iter().map(ChatMessage::text).collect();
        assert_eq!(texts[0], "Build the site");
        assert!(
            texts.iter().any(|t| t == "NEW INSTRUCTION: use tabs"),
            "the newest user message was left out"
        );
    }
}
