//! Token counting: OpenAI's own tokenizers (tiktoken) for OpenAI models, a calibrated
//! estimate for every other model, and a correction learnt from the usage each provider
//! reports, so the count tracks what the provider really bills.

use tiktoken_rs::CoreBPE;
use tiktoken_rs::tokenizer::get_tokenizer;

use crate::llm::{ChatMessage, ContentPart, ToolCall, ToolSpec};

/// What one image costs, whatever its size: a 1280×800 screenshot is about 1,100 tokens for
/// OpenAI (high detail) and 1,400 for Anthropic; this errs above both.
pub const IMAGE_TOKENS: usize = 1_600;

/// The framing every message costs besides its content (role, separators).
pub const MESSAGE_OVERHEAD: usize = 4;

/// Counts tokens the way one model family does.
#[derive(Clone, Copy)]
pub struct TokenCounter {
    bpe: Option<&'static CoreBPE>,
    /// The tokenizer is the model's own.
    exact: bool,
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCounter")
            .field("exact", &self.is_exact())
            .finish()
    }
}

impl TokenCounter {
    /// The counter for `model` (`gpt-4o`, `openai/gpt-4.1` through OpenRouter, `claude-…`):
    /// tiktoken where OpenAI publishes the tokenizer; elsewhere o200k too, as the nearest
    /// published tokenizer (the models' own are byte-pair encodings of like size), its
    /// counts calibrated against what the provider reports. It is far nearer than a
    /// character estimate on JSON, such as the tools' descriptions, which would else be
    /// counted at almost twice their size and skew the calibration of everything else.
    pub fn for_model(model: &str) -> Self {
        let name = model.rsplit('/').next().unwrap_or(model);
        match get_tokenizer(name).map(tiktoken_rs::bpe_for_tokenizer) {
            Some(Ok(bpe)) => TokenCounter {
                bpe: Some(bpe),
                exact: true,
            },
            _ => TokenCounter {
                bpe: Some(tiktoken_rs::o200k_base_singleton()),
                exact: false,
            },
        }
    }

    /// The character estimate only, no tokenizer.
    pub fn estimate() -> Self {
        TokenCounter {
            bpe: None,
            exact: false,
        }
    }

    /// Whether counts come from the model's own tokenizer.
    pub fn is_exact(&self) -> bool {
        self.exact
    }

    /// Tokens of `text`.
    pub fn text(&self, text: &str) -> usize {
        match self.bpe {
            Some(bpe) => bpe.encode_ordinary(text).len(),
            None => estimate(text),
        }
    }

    /// Tokens of a message: its text, its tool calls, its images and its framing.
    pub fn message(&self, message: &ChatMessage) -> usize {
        let mut tokens = MESSAGE_OVERHEAD;
        for part in &message.content {
            tokens += match part {
                ContentPart::Text { text } => self.text(text),
                ContentPart::Image { .. } => IMAGE_TOKENS,
            };
        }
        tokens + self.tool_calls(&message.tool_calls)
    }

    /// Tokens of native tool calls (name, arguments and their framing).
    pub fn tool_calls(&self, calls: &[ToolCall]) -> usize {
        calls
            .iter()
            .map(|call| self.text(&call.name) + self.text(&call.arguments.to_string()) + 8)
            .sum()
    }

    /// Tokens of the native tool descriptions sent with every call.
    pub fn tools(&self, tools: &[ToolSpec]) -> usize {
        if tools.is_empty() {
            return 0;
        }
        self.text(&serde_json::to_string(tools).unwrap_or_default())
    }
}

/// A tokenizer-free estimate, calibrated against cl100k/o200k on prose, code, JSON and HTML:
/// short words are one token, long ones one per five letters, digits go in threes,
/// punctuation is about a token a character, and non-ASCII text about a token a character.
/// It errs high; [`Calibration`] brings it to what the provider reports.
pub fn estimate(text: &str) -> usize {
    let mut tokens = 0usize;
    let mut letters = 0usize;
    let mut digits = 0usize;
    let mut in_space = false;
    let flush = |letters: &mut usize, digits: &mut usize, tokens: &mut usize| {
        if *letters > 0 {
            *tokens += 1 + (*letters - 1) / 5;
            *letters = 0;
        }
        if *digits > 0 {
            *tokens += (*digits).div_ceil(3);
            *digits = 0;
        }
    };
    for c in text.chars() {
        if c.is_ascii_alphabetic() {
            if digits > 0 {
                flush(&mut 0, &mut digits, &mut tokens);
            }
            letters += 1;
            in_space = false;
        } else if c.is_ascii_digit() {
            if letters > 0 {
                flush(&mut letters, &mut 0, &mut tokens);
            }
            digits += 1;
            in_space = false;
        } else {
            flush(&mut letters, &mut digits, &mut tokens);
            if c == ' ' {
                // A single space joins the next word's token; runs (indentation) are one more.
                if in_space {
                    continue;
                }
                in_space = true;
            } else if c.is_whitespace() {
                if !in_space {
                    tokens += 1;
                }
                in_space = true;
            } else {
                in_space = false;
                tokens += 1;
            }
        }
    }
    flush(&mut letters, &mut digits, &mut tokens);
    tokens
}

/// The ratio between what a provider reports and what Cove counted, learnt call by call.
///
/// The prompt's fixed start (the system prompt and the tools' JSON, the same in every call)
/// is learnt apart from the rest when Cove knows its size: where counts are estimates, JSON
/// and prose are off by different ratios, and one ratio over both would be wrong for the
/// part that changes as soon as the mix changes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    /// The ratio of the part after the fixed start (or of the whole, before it is known).
    factor: f64,
    /// The ratio the call before the last one showed.
    previous: f64,
    /// Tokens of the fixed start, as Cove counts them.
    fixed: usize,
    /// Its ratio, once a call made mostly of it showed it.
    fixed_factor: Option<f64>,
}

impl Default for Calibration {
    fn default() -> Self {
        Calibration {
            factor: 1.0,
            previous: 0.0,
            fixed: 0,
            fixed_factor: None,
        }
    }
}

/// Clamped: a provider that reports nonsense must not make Cove send 10x too much.
fn clamp_ratio(ratio: f64) -> f64 {
    ratio.clamp(0.5, 4.0)
}

impl Calibration {
    /// Tells it how many of every prompt's tokens (as Cove counts them) are its fixed start.
    pub fn set_fixed(&mut self, tokens: usize) {
        self.fixed = tokens;
    }

    /// Learns from one call: Cove counted `counted` prompt tokens, the provider reported
    /// `reported`. Small prompts say little about the ratio and are ignored, as are reports
    /// of zero (servers that do not report usage).
    pub fn observe(&mut self, counted: usize, reported: u64) {
        if reported == 0 || counted < 256 {
            return;
        }
        let whole = clamp_ratio(reported as f64 / counted as f64);
        let rest = counted.saturating_sub(self.fixed);
        let ratio = if self.fixed == 0 || counted < self.fixed {
            whole
        } else if self.fixed_factor.is_none() || rest * 20 < counted {
            // A prompt that is nearly all its fixed start (the first call: the task alone
            // after it) tells that part's ratio.
            self.fixed_factor = Some(whole);
            whole
        } else if rest < 256 {
            return;
        } else {
            let fixed = self.fixed as f64 * self.fixed_factor.unwrap_or(whole);
            clamp_ratio((reported as f64 - fixed).max(0.0) / rest as f64)
        };
        // The dearer of the last two: a prompt whose mix of messages changed since (a cut)
        // may count differently, and running short costs a refused call.
        self.factor = ratio.max(self.previous);
        self.previous = ratio;
    }

    /// Counts more conservatively after the provider refused a prompt as too long.
    pub fn tighten(&mut self) {
        self.factor = (self.factor * 1.25).min(4.0);
        self.fixed_factor = self.fixed_factor.map(|f| (f * 1.25).min(4.0));
    }

    /// `tokens` (a prompt, or its fixed start and more) as the provider would count them.
    pub fn apply(&self, tokens: usize) -> usize {
        match self.fixed_factor {
            Some(fixed_factor) if tokens >= self.fixed => {
                let rest = (tokens - self.fixed) as f64 * self.factor;
                (self.fixed as f64 * fixed_factor + rest).ceil() as usize
            }
            _ => (tokens as f64 * self.factor).ceil() as usize,
        }
    }

    /// The factor in use for what follows the fixed start.
    pub fn factor(&self) -> f64 {
        self.factor
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ChatMessage;

    const PROSE: &str = "The agent works in a sandboxed Linux machine with a shell, files, a real browser and vision. It plans its work in todo.md, checks each step off as it goes, and verifies the result before it declares the task complete. ";
    const CODE: &str = "fn main() {\n    let primes: Vec<u64> = (2..100).filter(|n| (2..*n).all(|d| n % d != 0)).collect();\n    println!(\"{primes:?}\");\n}\n";
    const JSON: &str = r#"{"command": "ls -la /workspace", "session_name": "default", "blocking": true, "timeout": 60, "results": [1, 2, 3, 1234567]}"#;
    const HTML: &str = "<!doctype html>\n<html><head><title>Fixture</title></head>\n<body>\n  <div class=\"card\"><a href=\"/page2.html\">Next page</a> <button id=\"go\">Go</button></div>\n</body></html>\n";

    #[test]
    fn the_estimate_errs_high_but_not_wildly_against_tiktoken() {
        let exact = TokenCounter::for_model("gpt-4o");
        assert!(exact.is_exact(), "gpt-4o has a tiktoken tokenizer");
        for (name, sample) in [
            ("prose", PROSE),
            ("code", CODE),
            ("json", JSON),
            ("html", HTML),
        ] {
            let text = sample.repeat(20);
            let real = exact.text(&text) as f64;
            let guess = estimate(&text) as f64;
            let ratio = guess / real;
            assert!(
                (0.95..1.8).contains(&ratio),
                "{name}: estimate {guess} for {real} real tokens ({ratio:.2})"
            );
        }
        assert_eq!(estimate(""), 0);
        assert!(
            estimate("日本語のテキスト") >= 8,
            "non-ASCII is a token a character"
        );
    }

    #[test]
    fn models_get_their_family_tokenizer() {
        assert!(TokenCounter::for_model("gpt-4.1-mini").is_exact());
        assert!(TokenCounter::for_model("openai/gpt-4o").is_exact());
        assert!(!TokenCounter::for_model("claude-sonnet-4-5").is_exact());
        assert!(!TokenCounter::for_model("qwen2.5-coder:7b").is_exact());
    }

    #[test]
    fn messages_count_text_calls_images_and_framing() {
        let counter = TokenCounter::for_model("gpt-4o");
        let plain = ChatMessage::user("hello world");
        assert_eq!(counter.message(&plain), 2 + MESSAGE_OVERHEAD);
        let mut with_image = plain.clone();
        with_image.content.push(ContentPart::Image {
            mime: "image/png".into(),
            data: "AAAA".into(),
        });
        assert_eq!(
            counter.message(&with_image),
            counter.message(&plain) + IMAGE_TOKENS
        );
    }

    #[test]
    fn calibration_follows_reports_within_bounds() {
        let mut c = Calibration::default();
        assert_eq!(c.apply(1000), 1000);
        c.observe(1000, 1300);
        assert_eq!(c.apply(1000), 1300);
        c.observe(100, 5000);
        assert_eq!(c.apply(1000), 1300, "small prompts are ignored");
        c.observe(1000, 0);
        assert_eq!(c.apply(1000), 1300, "no report, no change");
        c.observe(1000, 100_000);
        assert_eq!(c.factor(), 4.0, "clamped");
        c.observe(1000, 900);
        assert_eq!(c.factor(), 4.0, "the dearer of the last two");
        c.observe(1000, 900);
        assert_eq!(c.apply(1000), 900);
    }

    #[test]
    fn the_fixed_start_is_learnt_apart_from_the_rest() {
        // Cove's estimate counts the tools' JSON 25% high and the rest 10% low.
        let mut c = Calibration::default();
        c.set_fixed(4000);
        // The first prompt is mostly the fixed start: 4,000 + 300 counted.
        c.observe(4300, 3000 + 330);
        // Then a long tool result: 4,000 + 8,000 counted, the provider says 3,000 + 8,800.
        c.observe(12_000, 11_800);
        assert!(
            c.apply(12_000).abs_diff(11_800) <= 1,
            "both parts at their own ratio: {}",
            c.apply(12_000)
        );
        // One ratio over the whole would have counted the next, longer prompt short.
        let one_ratio = 12_000.0 * (11_800.0 / 12_000.0);
        assert!(c.apply(16_000) as f64 > one_ratio + 4000.0 * (11_800.0 / 12_000.0));
        // Without the fixed start known, the whole is one ratio, as before.
        let mut plain = Calibration::default();
        plain.observe(1000, 1300);
        assert_eq!(plain.apply(1000), 1300);
    }
}
