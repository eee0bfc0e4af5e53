//! What a model can take: its context window, its output cap, whether it sees images.

/// The limits the loop plans around.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelProfile {
    /// Tokens in and out of one call.
    pub context_window: u32,
    /// Most tokens one answer may have.
    pub max_output: u32,
    /// Accepts image input.
    pub vision: bool,
}

impl ModelProfile {
    /// What an unknown model is assumed to take: modest, so it works on small local models.
    pub const UNKNOWN: ModelProfile = ModelProfile {
        context_window: 32_768,
        max_output: 4_096,
        vision: false,
    };
}

/// The profile of `model` from `provider`, by name; unknown models get [`ModelProfile::UNKNOWN`].
pub fn profile(provider: &str, model: &str) -> ModelProfile {
    let m = model.to_ascii_lowercase();
    let name = m.rsplit('/').next().unwrap_or(&m);
    let known = |window, output, vision| ModelProfile {
        context_window: window,
        max_output: output,
        vision,
    };
    if name.starts_with("claude") {
        return match name {
            n if n.contains("opus-4") || n.contains("sonnet-4") => known(200_000, 32_000, true),
            n if n.contains("haiku-4") => known(200_000, 16_000, true),
            n if n.contains("3-5") || n.contains("3.5") || n.contains("3-7") => {
                known(200_000, 8_192, true)
            }
            _ => known(200_000, 4_096, true),
        };
    }
    if name.starts_with("gpt-5") {
        return known(400_000, 32_000, true);
    }
    if name.starts_with("gpt-4.1") {
        return known(1_000_000, 32_768, true);
    }
    if name.starts_with("gpt-4o") {
        return known(128_000, 16_384, true);
    }
    if name.starts_with("o1") || name.starts_with("o3") || name.starts_with("o4") {
        return known(200_000, 32_000, true);
    }
    if name.starts_with("deepseek") {
        return known(64_000, 8_000, false);
    }
    if name.starts_with("qwen") || name.starts_with("llama3") || name.starts_with("llama-3") {
        return known(
            32_768,
            4_096,
            name.contains("vl") || name.contains("vision"),
        );
    }
    let _ = provider;
    ModelProfile::UNKNOWN
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_families_and_unknown_models() {
        assert_eq!(
            profile("anthropic", "claude-sonnet-4-5").context_window,
            200_000
        );
        assert!(profile("openai", "gpt-4o-mini").vision);
        assert_eq!(
            profile("openrouter", "openai/gpt-4.1").context_window,
            1_000_000
        );
        assert_eq!(profile("openai", "my-finetune"), ModelProfile::UNKNOWN);
    }
}
