//! What model calls cost: the providers' published prices for the model families Cove
//! knows, in US dollars per million tokens, and `[prices."MODEL"]` in `cove.toml` for any
//! other model or a price that changed.
//!
//! The table was taken from Anthropic's and OpenAI's pricing pages in November 2026. It
//! prices the 5-minute cache Cove asks for, and no long-context surcharge, batch discount or
//! regional premium.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Usage;

/// The prices of one model, in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Price {
    /// Prompt tokens read fresh.
    pub input: f64,
    /// Prompt tokens read from the provider's cache.
    pub cached_input: f64,
    /// Prompt tokens written to the cache (Anthropic: 1.25 times the input price; OpenAI
    /// caches without charge, so the input price).
    pub cache_write: f64,
    pub output: f64,
}

impl Price {
    /// What a call with `usage` costs.
    pub fn cost(&self, usage: &Usage) -> f64 {
        (usage.uncached_tokens() as f64 * self.input
            + usage.cached_tokens as f64 * self.cached_input
            + usage.cache_write_tokens as f64 * self.cache_write
            + usage.output_tokens as f64 * self.output)
            / 1_000_000.0
    }

    /// The most a call can cost: its whole prompt at the dearer of the input and cache-write
    /// prices, and an answer as long as its output cap.
    pub fn worst_case(&self, prompt_tokens: u64, output_cap: u64) -> f64 {
        (prompt_tokens as f64 * self.input.max(self.cache_write) + output_cap as f64 * self.output)
            / 1_000_000.0
    }
}

/// A price as `cove.toml` gives it: `input` and `output` needed, the cache prices default to
/// the input price.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceConfig {
    pub input: f64,
    pub output: f64,
    pub cached_input: Option<f64>,
    pub cache_write: Option<f64>,
}

impl PriceConfig {
    fn price(&self) -> Price {
        Price {
            input: self.input,
            output: self.output,
            cached_input: self.cached_input.unwrap_or(self.input),
            cache_write: self.cache_write.unwrap_or(self.input),
        }
    }
}

/// Why a configured price is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "[prices.{model:?}] in cove.toml: {field} must be a number of dollars per million tokens, 0 or more"
)]
pub struct PriceError {
    pub model: String,
    pub field: &'static str,
}

/// Anthropic's prices: input, cache write, cache read, output.
const fn anthropic(input: f64, write: f64, read: f64, output: f64) -> Price {
    Price {
        input,
        cached_input: read,
        cache_write: write,
        output,
    }
}

/// OpenAI's prices: input, cached input, output (writing to its cache costs nothing more).
const fn openai(input: f64, cached: f64, output: f64) -> Price {
    Price {
        input,
        cached_input: cached,
        cache_write: input,
        output,
    }
}

/// Model families by the start of their names (normalized: see [`normalize`]); the longest
/// start that ends where a name's part ends wins.
const BUILT_IN: &[(&str, Price)] = &[
    ("claude-opus-4-5", anthropic(5.0, 6.25, 0.50, 25.0)),
    ("claude-opus-4-6", anthropic(5.0, 6.25, 0.50, 25.0)),
    ("claude-opus-4-7", anthropic(5.0, 6.25, 0.50, 25.0)),
    ("claude-opus-4-8", anthropic(5.0, 6.25, 0.50, 25.0)),
    ("claude-opus-4", anthropic(15.0, 18.75, 1.50, 75.0)),
    ("claude-3-opus", anthropic(15.0, 18.75, 1.50, 75.0)),
    ("claude-sonnet", anthropic(3.0, 3.75, 0.30, 15.0)),
    ("claude-3-7-sonnet", anthropic(3.0, 3.75, 0.30, 15.0)),
    ("claude-3-5-sonnet", anthropic(3.0, 3.75, 0.30, 15.0)),
    ("claude-haiku-4", anthropic(1.0, 1.25, 0.10, 5.0)),
    ("claude-3-5-haiku", anthropic(0.80, 1.0, 0.08, 4.0)),
    ("claude-3-haiku", anthropic(0.25, 0.30, 0.03, 1.25)),
    ("gpt-5-5", openai(5.0, 0.50, 30.0)),
    ("gpt-5-4", openai(2.50, 0.25, 15.0)),
    ("gpt-5-4-mini", openai(0.75, 0.075, 4.50)),
    ("gpt-5-4-nano", openai(0.20, 0.02, 1.25)),
    ("gpt-5", openai(1.25, 0.125, 10.0)),
    ("gpt-5-mini", openai(0.25, 0.025, 2.0)),
    ("gpt-5-nano", openai(0.05, 0.005, 0.40)),
    ("gpt-4-1", openai(2.0, 0.50, 8.0)),
    ("gpt-4-1-mini", openai(0.40, 0.10, 1.60)),
    ("gpt-4-1-nano", openai(0.10, 0.025, 0.40)),
    ("gpt-4o", openai(2.50, 1.25, 10.0)),
    ("gpt-4o-mini", openai(0.15, 0.075, 0.60)),
    ("o3", openai(2.0, 0.50, 8.0)),
    ("o4-mini", openai(1.10, 0.275, 4.40)),
];

/// A model name as the table knows it: lower case, without a router's `vendor/` prefix,
/// version dots as dashes (`anthropic/claude-sonnet-4.5` is `claude-sonnet-4-5`).
pub fn normalize(model: &str) -> String {
    let name = model.rsplit('/').next().unwrap_or(model);
    name.to_ascii_lowercase().replace('.', "-")
}

/// Whether `family` names `model`: `model` is the family, or the family with a version or
/// date (`-4-5`, `-20250929`, `-latest`) or a tag (`:8b`, `@2024`) after it. A different
/// kind of model that shares the start of the name (`gpt-5-pro`, `o4-mini-deep-research`,
/// priced apart) is not named, so it has no price rather than a wrong one.
fn names(family: &str, model: &str) -> bool {
    let Some(rest) = model.strip_prefix(family) else {
        return false;
    };
    if rest.is_empty() || rest.starts_with([':', '@']) {
        return true;
    }
    let Some(part) = rest.strip_prefix('-') else {
        return false;
    };
    part.starts_with(|c: char| c.is_ascii_digit()) || part == "latest"
}

fn longest<'a>(
    entries: impl Iterator<Item = (&'a str, Price)>,
    model: &str,
) -> Option<(usize, Price)> {
    entries
        .filter(|(family, _)| names(family, model))
        .map(|(family, price)| (family.len(), price))
        .max_by_key(|(len, _)| *len)
}

/// The prices Cove charges calls at: `cove.toml`'s, then the built-in table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceTable {
    configured: Vec<(String, Price)>,
}

impl PriceTable {
    /// The built-in table with `configured` prices (by model name or family) before it.
    pub fn new(configured: &BTreeMap<String, PriceConfig>) -> Result<Self, PriceError> {
        let mut out = Vec::new();
        for (model, config) in configured {
            for (field, value) in [
                ("input", Some(config.input)),
                ("output", Some(config.output)),
                ("cached_input", config.cached_input),
                ("cache_write", config.cache_write),
            ] {
                if value.is_some_and(|v| !v.is_finite() || v < 0.0) {
                    return Err(PriceError {
                        model: model.clone(),
                        field,
                    });
                }
            }
            out.push((normalize(model), config.price()));
        }
        Ok(PriceTable { configured: out })
    }

    /// The price of `model`, if it is configured or of a known family.
    pub fn price(&self, model: &str) -> Option<Price> {
        let model = normalize(model);
        let configured = self.configured.iter().map(|(f, p)| (f.as_str(), *p));
        longest(configured, &model)
            .or_else(|| longest(BUILT_IN.iter().copied(), &model))
            .map(|(_, price)| price)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> PriceTable {
        PriceTable::default()
    }

    #[test]
    fn families_are_found_by_the_start_of_the_name() {
        let t = table();
        let sonnet = t.price("claude-sonnet-4-5-20250929").unwrap();
        assert_eq!(sonnet.input, 3.0);
        assert_eq!(sonnet.cache_write, 3.75);
        assert_eq!(t.price("anthropic/claude-sonnet-4.5"), Some(sonnet));
        assert_eq!(t.price("claude-opus-4-1-20250805").unwrap().input, 15.0);
        assert_eq!(t.price("claude-opus-4-5").unwrap().input, 5.0);
        assert_eq!(t.price("gpt-4o-mini-2024-07-18").unwrap().input, 0.15);
        assert_eq!(t.price("gpt-4o").unwrap().input, 2.50);
        assert_eq!(t.price("gpt-5-2025-08-07").unwrap().input, 1.25);
        assert_eq!(t.price("gpt-5.4-mini").unwrap().input, 0.75);
        assert_eq!(t.price("o3").unwrap().output, 8.0);
        assert_eq!(t.price("o3x"), None, "a family ends where a part ends");
        assert_eq!(t.price("gpt-5-pro"), None, "priced apart, not as gpt-5");
        assert_eq!(t.price("o4-mini-deep-research"), None);
        assert_eq!(t.price("claude-3-5-sonnet-latest").unwrap().input, 3.0);
        assert_eq!(t.price("llama3.1:8b"), None);
    }

    #[test]
    fn configured_prices_come_first_and_are_checked() {
        let mut configured = BTreeMap::new();
        configured.insert(
            "llama3.1".to_string(),
            PriceConfig {
                input: 0.0,
                output: 0.0,
                cached_input: None,
                cache_write: None,
            },
        );
        configured.insert(
            "gpt-4o".to_string(),
            PriceConfig {
                input: 2.0,
                output: 8.0,
                cached_input: Some(0.5),
                cache_write: None,
            },
        );
        let t = PriceTable::new(&configured).unwrap();
        assert_eq!(t.price("llama3.1:8b").unwrap().output, 0.0);
        let gpt = t.price("gpt-4o").unwrap();
        assert_eq!(
            (gpt.input, gpt.cached_input, gpt.cache_write),
            (2.0, 0.5, 2.0)
        );
        assert_eq!(t.price("gpt-4o-2024-08-06").unwrap().input, 2.0, "dated");
        assert_eq!(
            t.price("gpt-4o-mini").unwrap().input,
            0.15,
            "another model, priced apart"
        );
        configured.insert(
            "bad".into(),
            PriceConfig {
                input: -1.0,
                output: 1.0,
                cached_input: None,
                cache_write: None,
            },
        );
        let err = PriceTable::new(&configured).unwrap_err();
        assert_eq!(err.field, "input");
        assert!(err.to_string().contains("bad"), "{err}");
    }

    #[test]
    fn a_call_costs_each_part_at_its_price_and_the_worst_case_bounds_it() {
        let sonnet = table().price("claude-sonnet-4-5").unwrap();
        let usage = Usage {
            input_tokens: 100_000,
            cached_tokens: 80_000,
            cache_write_tokens: 15_000,
            output_tokens: 2_000,
        };
        let cost = sonnet.cost(&usage);
        let expected = (5_000.0 * 3.0 + 80_000.0 * 0.30 + 15_000.0 * 3.75 + 2_000.0 * 15.0) / 1e6;
        assert!((cost - expected).abs() < 1e-12, "{cost} != {expected}");
        assert!(sonnet.worst_case(100_000, 2_000) >= cost);
        assert!((sonnet.worst_case(1_000_000, 0) - 3.75).abs() < 1e-12);
    }
}
