//! What the whole store has seen, summed for `GET /metrics` of `cove serve`: runs by state,
//! model calls with their tokens and cost by model, tool calls by tool and outcome, and the
//! threads waiting now and for what. Summed at each question, so the figures agree with the
//! stored runs whatever process ran them and however often the server restarted.

use rusqlite::params;

use super::{Store, StoreError};

/// One model's calls, over every run.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelFigures {
    pub model: String,
    pub calls: u64,
    pub input_tokens: u64,
    pub cached_tokens: u64,
    pub output_tokens: u64,
    /// US dollars, over the calls whose price was known.
    pub cost_usd: f64,
}

/// The store's sums.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    /// (state, runs).
    pub runs: Vec<(String, u64)>,
    pub models: Vec<ModelFigures>,
    /// (tool, `ok` or `failed`, calls).
    pub tool_calls: Vec<(String, String, u64)>,
    /// (what is waited for: `ask`, `permission`, `plan`, `takeover`, `events`, threads).
    pub waits: Vec<(String, u64)>,
}

impl Store {
    /// The sums over everything stored.
    pub fn figures(&self) -> Result<Figures, StoreError> {
        let conn = self.conn();
        let pairs = |sql: &str| -> Result<Vec<(String, u64)>, StoreError> {
            let mut stmt = conn.prepare(sql)?;
            let rows = stmt
                .query_map(params![], |r| {
                    Ok((
                        r.get::<_, Option<String>>(0)?.unwrap_or_default(),
                        u64::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
                    ))
                })?
                .collect::<Result<_, _>>()?;
            Ok(rows)
        };
        let runs = pairs("SELECT status, count(*) FROM runs GROUP BY status ORDER BY status")?;
        // A thread waits for the person while a request of it is unanswered, and for its
        // sandbox while it waits for events.
        let mut waits = pairs(
            "SELECT kind, count(DISTINCT thread_id) FROM requests
             WHERE decision IS NULL GROUP BY kind
             UNION ALL SELECT 'events', count(*) FROM event_waits",
        )?;
        waits.retain(|(_, n)| *n > 0);
        waits.sort();
        let mut stmt = conn.prepare(
            "SELECT model, count(*), sum(input_tokens), sum(cached_tokens), sum(output_tokens),
                    COALESCE(sum(cost_usd), 0)
             FROM model_calls GROUP BY model ORDER BY model",
        )?;
        let models = stmt
            .query_map(params![], |r| {
                let n = |i: usize| r.get::<_, i64>(i).map(|v| u64::try_from(v).unwrap_or(0));
                Ok(ModelFigures {
                    model: r.get(0)?,
                    calls: n(1)?,
                    input_tokens: n(2)?,
                    cached_tokens: n(3)?,
                    output_tokens: n(4)?,
                    cost_usd: r.get(5)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        let mut stmt = conn.prepare(
            "SELECT json_extract(content, '$.tool'), json_extract(content, '$.type'), count(*)
             FROM messages
             WHERE kind = 'status' AND branch = 0
               AND json_extract(content, '$.type') IN ('tool_completed', 'tool_failed')
             GROUP BY 1, 2 ORDER BY 1, 2",
        )?;
        let tool_calls = stmt
            .query_map(params![], |r| {
                let outcome: String = r.get(1)?;
                Ok((
                    r.get::<_, Option<String>>(0)?.unwrap_or_default(),
                    if outcome == "tool_completed" {
                        "ok"
                    } else {
                        "failed"
                    }
                    .to_string(),
                    u64::try_from(r.get::<_, i64>(2)?).unwrap_or(0),
                ))
            })?
            .collect::<Result<_, _>>()?;
        Ok(Figures {
            runs,
            models,
            tool_calls,
            waits,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NewRequest, NewThread, RequestKind};
    use cove_protocol::conversation::Usage;

    #[test]
    fn the_sums_count_runs_calls_by_model_and_unanswered_requests() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("cove.db")).unwrap();
        let thread = store
            .create_thread(NewThread::new("t", "m", "native", "local"))
            .unwrap();
        let run = store.start_run(&thread.id).unwrap();
        let usage = Usage {
            input_tokens: 100,
            cached_tokens: 40,
            cache_write_tokens: 0,
            output_tokens: 7,
        };
        store
            .record_call(&run.id, 1, "openai/a", &usage, Some(0.5))
            .unwrap();
        store
            .record_call(&run.id, 2, "openai/a", &usage, None)
            .unwrap();
        store
            .open_request(NewRequest {
                thread_id: thread.id.clone(),
                run_id: run.id.clone(),
                kind: RequestKind::Permission,
                call_id: "c".into(),
                tool: "execute_command".into(),
                summary: "run `ls`".into(),
                why: "asks".into(),
                arguments: serde_json::json!({}),
                fingerprint: "f".into(),
            })
            .unwrap();
        let figures = store.figures().unwrap();
        assert_eq!(figures.runs, [("running".to_string(), 1)]);
        assert_eq!(figures.waits, [("permission".to_string(), 1)]);
        assert_eq!(
            figures.models,
            [ModelFigures {
                model: "openai/a".into(),
                calls: 2,
                input_tokens: 200,
                cached_tokens: 80,
                output_tokens: 14,
                cost_usd: 0.5,
            }]
        );
        assert!(figures.tool_calls.is_empty());
    }
}
