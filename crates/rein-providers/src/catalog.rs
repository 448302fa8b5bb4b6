//! What rein knows about well-known models without asking: context windows.

/// Context window in tokens of a known model, matched by name prefix.
pub fn context_window(model: &str) -> Option<u64> {
    let m = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    let table: &[(&str, u64)] = &[
        ("gpt-5", 400_000),
        ("gpt-4.1", 1_047_576),
        ("gpt-4o", 128_000),
        ("o3", 200_000),
        ("o4-mini", 200_000),
        ("claude-", 200_000),
        ("deepseek", 128_000),
        ("qwen2.5-coder", 32_768),
        ("llama-3.3", 128_000),
        ("grok-3", 131_072),
        ("kimi-k2", 131_072),
        ("glm-4", 128_000),
        ("mistral", 128_000),
    ];
    table
        .iter()
        .find(|(prefix, _)| m.starts_with(prefix))
        .map(|(_, w)| *w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_models_are_matched_by_prefix_after_any_vendor_path() {
        assert_eq!(context_window("gpt-4o-2024-08-06"), Some(128_000));
        assert_eq!(context_window("anthropic/claude-sonnet-4"), Some(200_000));
        assert_eq!(context_window("my-own-model"), None);
    }
}
