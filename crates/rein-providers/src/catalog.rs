//! What rein knows about well-known models without asking: context windows
//! and prices.

use rein_core::Pricing;

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

const fn price(input: f64, cached_input: f64, output: f64) -> Pricing {
    Pricing {
        input,
        cached_input,
        output,
    }
}

/// OpenAI models by exact name (after dropping a vendor path and a date),
/// US$ per million tokens: input, cached input, output.
///
/// Where the figures come from (none was checked against OpenAI's own
/// pricing page, which this build cannot reach: treat them all as
/// unverified, and correct them here when they change):
/// - gpt-4.1, gpt-4.1-mini, gpt-4.1-nano, gpt-4o, gpt-4o-mini and the first
///   gpt-4o snapshot: the `openai_responses` Hex package's price table,
///   which cites OpenAI's pricing page of 2025-06-03; gpt-4o and
///   gpt-4o-mini agree with two more published tables.
/// - gpt-5 ($1.25 / $10) and gpt-5-mini ($0.25 / $2): two public price
///   tables each; their cached price (a tenth of input, as for the whole
///   GPT-5 generation) from price trackers only.
/// - gpt-5.4, gpt-5.4-mini, gpt-5.5: a price tracker quoting OpenAI's page
///   (2026-04), one more table for gpt-5.4 and gpt-5.4-mini.
/// - o3 ($2 / $0.50 / $8, after the mid-2025 price cut): two price trackers.
/// - o4-mini ($1.10 / $0.275 / $4.40): a coding agent's model table citing
///   OpenAI's launch pages.
const OPENAI_PRICES: &[(&str, Pricing)] = &[
    ("gpt-5", price(1.25, 0.125, 10.0)),
    ("gpt-5-mini", price(0.25, 0.025, 2.0)),
    ("gpt-5.4", price(2.50, 0.25, 15.0)),
    ("gpt-5.4-mini", price(0.75, 0.075, 4.50)),
    ("gpt-5.5", price(5.0, 0.50, 30.0)),
    ("gpt-4.1", price(2.0, 0.50, 8.0)),
    ("gpt-4.1-mini", price(0.40, 0.10, 1.60)),
    ("gpt-4.1-nano", price(0.10, 0.025, 0.40)),
    ("gpt-4o", price(2.50, 1.25, 10.0)),
    // The first gpt-4o snapshot kept its launch price, without a cache.
    ("gpt-4o-2024-05-13", price(5.0, 5.0, 15.0)),
    ("gpt-4o-mini", price(0.15, 0.075, 0.60)),
    ("o3", price(2.0, 0.50, 8.0)),
    ("o4-mini", price(1.10, 0.275, 4.40)),
];

/// Claude prices by family and version: (family, major, minor (None: any),
/// pricing). Cache writes are billed by Anthropic at 1.25x input; rein
/// counts them as plain input, so costs with many cache writes come out a
/// little low.
///
/// Sources: Anthropic's model pages (Claude Haiku 4.5 $1 / $5, Claude
/// Opus 5 $5 / $0.50 cache read / $25, Claude Sonnet 5 $2 / $0.20 / $10)
/// and price tables that cite Anthropic's pricing page: Opus 4 and 4.1
/// $15 / $1.50 / $75, Opus 4.5 to 4.7 $5 / $0.50 / $25, Sonnet 3.7 and 4.x
/// $3 / $0.30 / $15, Haiku 3.5 $0.80 / $0.08 / $4, cache reads a tenth of
/// input. Cache-read prices other than Opus 5's and Sonnet 5's are
/// unverified.
const CLAUDE_PRICES: &[(&str, u32, Option<u32>, Pricing)] = &[
    ("opus", 4, Some(0), price(15.0, 1.50, 75.0)),
    ("opus", 4, Some(1), price(15.0, 1.50, 75.0)),
    ("opus", 4, Some(5), price(5.0, 0.50, 25.0)),
    ("opus", 4, Some(6), price(5.0, 0.50, 25.0)),
    ("opus", 4, Some(7), price(5.0, 0.50, 25.0)),
    ("opus", 5, Some(0), price(5.0, 0.50, 25.0)),
    ("sonnet", 3, Some(7), price(3.0, 0.30, 15.0)),
    ("sonnet", 4, None, price(3.0, 0.30, 15.0)),
    ("sonnet", 5, Some(0), price(2.0, 0.20, 10.0)),
    ("haiku", 3, Some(5), price(0.80, 0.08, 4.0)),
    ("haiku", 4, Some(5), price(1.0, 0.10, 5.0)),
];

/// Prices of a well-known model in US$ per million tokens (input, cached
/// input, output), or `None` when rein does not know them. Names are
/// matched exactly, after dropping a vendor path (`openai/gpt-4o`), a date
/// (`gpt-4.1-2025-04-14`, `claude-sonnet-4-5-20250929`) and `-latest`, so a
/// newer model with a similar name is never priced as an older one.
pub fn pricing(model: &str) -> Option<Pricing> {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .trim()
        .to_ascii_lowercase();
    if let Some(p) = claude_pricing(&name) {
        return Some(p);
    }
    let lookup = |n: &str| OPENAI_PRICES.iter().find(|(k, _)| *k == n).map(|(_, p)| *p);
    lookup(&name).or_else(|| lookup(strip_version_suffix(&name)))
}

/// `name` without a trailing `-latest`, `-YYYY-MM-DD` or `-YYYYMMDD`.
fn strip_version_suffix(name: &str) -> &str {
    if let Some(base) = name.strip_suffix("-latest") {
        return base;
    }
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some((base, date)) = name.rsplit_once('-')
        && date.len() == 8
        && digits(date)
    {
        return base;
    }
    // -YYYY-MM-DD: three dash-separated numeric parts of 4, 2 and 2 digits.
    let parts: Vec<&str> = name.rsplitn(4, '-').collect();
    if let [day, month, year, base] = parts.as_slice()
        && year.len() == 4
        && month.len() == 2
        && day.len() == 2
        && digits(year)
        && digits(month)
        && digits(day)
    {
        return base;
    }
    name
}

/// Claude's prices from a model id in any of its spellings:
/// `claude-sonnet-4-5-20250929`, `claude-3-5-haiku-latest`,
/// `claude-opus-4.1` (OpenRouter), `anthropic.claude-haiku-4-5-20251001-v1:0`
/// (Bedrock), `claude-sonnet-4-5@20250929` (Vertex).
fn claude_pricing(name: &str) -> Option<Pricing> {
    let start = name.find("claude-")?;
    let parts: Vec<&str> = name[start..].split(['-', '.', '@', ':']).skip(1).collect();
    let is_family = |p: &str| matches!(p, "opus" | "sonnet" | "haiku");
    // A version number is one or two digits (dates have eight).
    let number = |p: Option<&&str>| {
        p.filter(|s| (1..=2).contains(&s.len()))
            .and_then(|s| s.parse::<u32>().ok())
    };
    let (family, major, minor) = match parts.first() {
        // claude-sonnet-4-5
        Some(f) if is_family(f) => {
            let major = number(parts.get(1))?;
            (*f, major, number(parts.get(2)))
        }
        // claude-3-5-haiku, claude-3-haiku
        _ => {
            let major = number(parts.first())?;
            match parts.get(1) {
                Some(f) if is_family(f) => (*f, major, None),
                _ => {
                    let minor = number(parts.get(1))?;
                    let f = parts.get(2).filter(|f| is_family(f))?;
                    (*f, major, Some(minor))
                }
            }
        }
    };
    let minor = minor.unwrap_or(0);
    CLAUDE_PRICES
        .iter()
        .find(|(f, ma, mi, _)| *f == family && *ma == major && mi.is_none_or(|m| m == minor))
        .map(|(_, _, _, p)| *p)
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

    fn priced(model: &str) -> Option<(f64, f64, f64)> {
        pricing(model).map(|p| (p.input, p.cached_input, p.output))
    }

    #[test]
    fn openai_models_are_priced_by_exact_name_after_a_date() {
        assert_eq!(priced("gpt-4o"), Some((2.50, 1.25, 10.0)));
        assert_eq!(priced("gpt-4o-2024-08-06"), Some((2.50, 1.25, 10.0)));
        assert_eq!(priced("gpt-4o-2024-05-13"), Some((5.0, 5.0, 15.0)));
        assert_eq!(priced("openai/gpt-4.1-mini"), Some((0.40, 0.10, 1.60)));
        assert_eq!(priced("gpt-4.1-2025-04-14"), Some((2.0, 0.50, 8.0)));
        assert_eq!(priced("GPT-5"), Some((1.25, 0.125, 10.0)));
        assert_eq!(priced("gpt-5-mini-2025-08-07"), Some((0.25, 0.025, 2.0)));
        assert_eq!(priced("o3"), Some((2.0, 0.50, 8.0)));
        assert_eq!(priced("o4-mini-2025-04-16"), Some((1.10, 0.275, 4.40)));
        // Similar names are not taken for a known model.
        for unknown in [
            "gpt-5.9",
            "gpt-5-pro",
            "gpt-4o-audio-preview",
            "o3-pro",
            "ft:gpt-4o:x",
        ] {
            assert_eq!(priced(unknown), None, "{unknown}");
        }
    }

    #[test]
    fn claude_models_are_priced_in_every_spelling() {
        let opus_old = Some((15.0, 1.50, 75.0));
        let opus_new = Some((5.0, 0.50, 25.0));
        let sonnet4 = Some((3.0, 0.30, 15.0));
        for (model, want) in [
            ("claude-opus-4-20250514", opus_old),
            ("claude-opus-4-0", opus_old),
            ("claude-opus-4-1-20250805", opus_old),
            ("anthropic/claude-opus-4.1", opus_old),
            ("claude-opus-4-5", opus_new),
            ("claude-opus-4-7", opus_new),
            ("claude-sonnet-4-20250514", sonnet4),
            ("claude-sonnet-4-5-20250929", sonnet4),
            ("anthropic.claude-sonnet-4-5-20250929-v1:0", sonnet4),
            ("claude-sonnet-4-5@20250929", sonnet4),
            ("claude-sonnet-4-6", sonnet4),
            ("claude-3-7-sonnet-latest", sonnet4),
            ("claude-haiku-4-5-20251001", Some((1.0, 0.10, 5.0))),
            ("claude-3-5-haiku-20241022", Some((0.80, 0.08, 4.0))),
            ("anthropic/claude-3.5-haiku", Some((0.80, 0.08, 4.0))),
            ("claude-sonnet-5", Some((2.0, 0.20, 10.0))),
            ("claude-opus-5", opus_new),
        ] {
            assert_eq!(priced(model), want, "{model}");
        }
        for unknown in [
            "claude-opus-4-3",
            "claude-sonnet-5-5",
            "claude-3-haiku-20240307",
            "claude-haiku",
            "claude-",
            "my-claude-x",
        ] {
            assert_eq!(priced(unknown), None, "{unknown}");
        }
    }

    #[test]
    fn unknown_models_have_no_price() {
        assert_eq!(priced("deepseek-chat"), None);
        assert_eq!(priced("qwen2.5-coder-7b"), None);
        assert_eq!(priced(""), None);
    }
}
