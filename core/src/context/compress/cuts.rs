//! Prefix-stable cuts: a message's form decided once, when it is first sent, so the start
//! of the prompt stays the same from one call to the next and the provider's cache serves
//! it; the history planned afresh only when that no longer fits.

use super::*;

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
pub(super) fn deep_threshold(window: usize) -> usize {
    (window / 200).clamp(100, FIRST_THRESHOLD)
}

/// The entries that stay whole: the first (the task), the newest user message, and the newest
/// turn (the last answer and what follows it: its results, the browser state).
pub(super) fn newest_turn_and_task(entries: &[Entry]) -> Vec<usize> {
    let mut out = vec![0];
    let start = entries
        .iter()
        .rposition(|e| e.kind == Kind::Assistant)
        .unwrap_or(entries.len().saturating_sub(1));
    out.extend(start..entries.len());
    out.extend(newest(entries, Kind::User, 1));
    out
}
