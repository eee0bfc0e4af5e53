//! The model calls of each run: the tokens the provider billed and what they cost.

use cove_protocol::events::TokenUsage;
use rusqlite::params;
use serde::Serialize;

use super::{Store, StoreError, now_ms};
use cove_protocol::conversation::Usage;

/// What a run's model calls add up to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct RunUsage {
    #[serde(flatten)]
    pub tokens: TokenUsage,
    /// In US dollars; `None` when a call's model had no known price.
    pub cost: Option<f64>,
}

impl RunUsage {
    /// `runs` together: their tokens summed, and the cost when every run's is known.
    pub fn sum<'a>(runs: impl IntoIterator<Item = &'a RunUsage>) -> RunUsage {
        let mut total = RunUsage {
            cost: Some(0.0),
            ..RunUsage::default()
        };
        for run in runs {
            let (t, more) = (&mut total.tokens, &run.tokens);
            t.calls += more.calls;
            t.input_tokens += more.input_tokens;
            t.cached_tokens += more.cached_tokens;
            t.cache_write_tokens += more.cache_write_tokens;
            t.output_tokens += more.output_tokens;
            total.cost = total.cost.zip(run.cost).map(|(a, b)| a + b);
        }
        total
    }
}

/// One model call as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelCall {
    pub iteration: u32,
    pub model: String,
    pub input_tokens: u64,
    pub cached_tokens: u64,
    pub cache_write_tokens: u64,
    pub output_tokens: u64,
    pub cost: Option<f64>,
}

impl Store {
    /// Records a model call of `run` (iteration `iteration`) and its cost, if known.
    pub fn record_call(
        &self,
        run: &str,
        iteration: u32,
        model: &str,
        usage: &Usage,
        cost: Option<f64>,
    ) -> Result<(), StoreError> {
        let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        self.conn()
            .prepare_cached(
                "INSERT INTO model_calls (run_id, iteration, model, input_tokens, cached_tokens,
                     cache_write_tokens, output_tokens, cost_usd, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?
            .execute(params![
                run,
                iteration,
                model,
                count(usage.input_tokens),
                count(usage.cached_tokens),
                count(usage.cache_write_tokens),
                count(usage.output_tokens),
                cost,
                now_ms()
            ])?;
        Ok(())
    }

    /// The model calls of `run`, in order.
    pub fn calls(&self, run: &str) -> Result<Vec<ModelCall>, StoreError> {
        let conn = self.conn();
        let mut statement = conn.prepare_cached(
            "SELECT iteration, model, input_tokens, cached_tokens, cache_write_tokens,
                    output_tokens, cost_usd
             FROM model_calls WHERE run_id = ?1 ORDER BY id",
        )?;
        let rows = statement.query_map(params![run], |r| {
            let count = |i: usize| r.get::<_, i64>(i).map(|n| u64::try_from(n).unwrap_or(0));
            Ok(ModelCall {
                iteration: r.get(0)?,
                model: r.get(1)?,
                input_tokens: count(2)?,
                cached_tokens: count(3)?,
                cache_write_tokens: count(4)?,
                output_tokens: count(5)?,
                cost: r.get(6)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// What the model calls of `run` add up to.
    pub fn run_usage(&self, run: &str) -> Result<RunUsage, StoreError> {
        let calls = self.calls(run)?;
        // Runs from before calls were stored have none: their cost is unknown, not $0.
        let mut total = RunUsage {
            cost: (!calls.is_empty()).then_some(0.0),
            ..RunUsage::default()
        };
        for call in &calls {
            let t = &mut total.tokens;
            t.calls += 1;
            t.input_tokens += call.input_tokens;
            t.cached_tokens += call.cached_tokens;
            t.cache_write_tokens += call.cache_write_tokens;
            t.output_tokens += call.output_tokens;
            total.cost = total.cost.zip(call.cost).map(|(a, b)| a + b);
        }
        Ok(total)
    }
}
