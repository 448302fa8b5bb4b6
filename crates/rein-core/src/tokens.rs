//! Token accounting: counting with the model's own tokenizer when one is
//! available offline, a calibrated estimate otherwise, and what calls cost.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::schema::{ContentPart, Message, Usage};

/// Counts tokens of text the way one model does.
pub trait TokenCounter: Send + Sync {
    fn count(&self, text: &str) -> u64;

    /// True for a real tokenizer, false for an estimate.
    fn exact(&self) -> bool;

    /// Learn from a provider's reported figure: `chars` characters of
    /// request were `tokens` tokens. Exact counters ignore it.
    fn observe(&self, _chars: u64, _tokens: u64) {}

    /// Count exactly from now on, for a counter that estimates until asked
    /// ([`ExactOnDemand`]). True when its counts change by it, so that
    /// what was counted before should be counted again.
    fn sharpen(&self) -> bool {
        false
    }
}

/// A real tokenizer that costs something to load (OpenAI's tables are
/// tens of megabytes of memory and a fifth of a second of CPU): it counts
/// with a [`CalibratedEstimator`] until [`TokenCounter::sharpen`], which
/// the engine calls only when a request nears the compaction threshold.
/// A session that stays short never loads the tables; the decision to
/// compact is taken on exact counts all the same.
pub struct ExactOnDemand {
    exact: Arc<dyn TokenCounter>,
    estimate: CalibratedEstimator,
    sharp: AtomicBool,
}

impl ExactOnDemand {
    pub fn new(exact: Arc<dyn TokenCounter>) -> Self {
        ExactOnDemand {
            exact,
            estimate: CalibratedEstimator::default(),
            sharp: AtomicBool::new(false),
        }
    }

    fn is_sharp(&self) -> bool {
        self.sharp.load(Ordering::Acquire)
    }
}

impl TokenCounter for ExactOnDemand {
    fn count(&self, text: &str) -> u64 {
        if self.is_sharp() {
            self.exact.count(text)
        } else {
            self.estimate.count(text)
        }
    }

    fn exact(&self) -> bool {
        self.is_sharp() && self.exact.exact()
    }

    fn observe(&self, chars: u64, tokens: u64) {
        self.estimate.observe(chars, tokens);
    }

    fn sharpen(&self) -> bool {
        !self.sharp.swap(true, Ordering::AcqRel)
    }
}

/// Characters per token learned from reported usage (an exponential
/// average over this session's calls), for models without an offline
/// tokenizer. Starts at 4 bytes a token.
pub struct CalibratedEstimator {
    state: Mutex<(f64, u32)>,
}

impl Default for CalibratedEstimator {
    fn default() -> Self {
        CalibratedEstimator {
            state: Mutex::new((4.0, 0)),
        }
    }
}

impl CalibratedEstimator {
    pub fn chars_per_token(&self) -> f64 {
        match self.state.lock() {
            Ok(s) => s.0,
            Err(p) => p.into_inner().0,
        }
    }
}

impl TokenCounter for CalibratedEstimator {
    fn count(&self, text: &str) -> u64 {
        let cpt = self.chars_per_token().max(0.5);
        (text.len() as f64 / cpt).ceil() as u64
    }

    fn exact(&self) -> bool {
        false
    }

    fn observe(&self, chars: u64, tokens: u64) {
        if chars < 200 || tokens == 0 {
            return;
        }
        let sample = (chars as f64 / tokens as f64).clamp(0.5, 12.0);
        let mut s = match self.state.lock() {
            Ok(s) => s,
            Err(p) => p.into_inner(),
        };
        // The first sample replaces the prior; later ones move it halfway.
        s.0 = if s.1 == 0 {
            sample
        } else {
            s.0 * 0.5 + sample * 0.5
        };
        s.1 = s.1.saturating_add(1);
    }
}

/// Per-message overhead of chat formats (role markers and separators).
pub const MESSAGE_OVERHEAD: u64 = 4;

/// The text of a message as a model reads it, for counting.
pub fn message_text(m: &Message) -> String {
    match m {
        Message::System { content } | Message::User { content, .. } => content.clone(),
        Message::Tool(r) => r.output.clone(),
        Message::Assistant(a) => {
            let mut s = String::new();
            for p in &a.content {
                match p {
                    ContentPart::Text { text } => s.push_str(text),
                    ContentPart::Reasoning(r) => s.push_str(&r.text),
                    ContentPart::ToolCall(c) => {
                        s.push_str(&c.name);
                        s.push(' ');
                        s.push_str(&c.arguments);
                    }
                }
                s.push('\n');
            }
            s
        }
    }
}

/// Tokens of one message with `counter` (a tool result's or the user's
/// images at their estimate).
pub fn count_message(counter: &dyn TokenCounter, m: &Message) -> u64 {
    let images = match m {
        Message::Tool(r) => r.images.len(),
        Message::User { images, .. } => images.len(),
        _ => 0,
    } as u64
        * crate::Image::ESTIMATED_TOKENS;
    counter
        .count(&message_text(m))
        .saturating_add(MESSAGE_OVERHEAD)
        .saturating_add(images)
}

/// Prices of a model, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Pricing {
    pub input: f64,
    /// Cached input tokens (billed instead of `input` for those).
    pub cached_input: f64,
    pub output: f64,
}

impl Pricing {
    /// The cost of one call's usage. Reasoning tokens are output tokens.
    pub fn cost(&self, u: &Usage) -> f64 {
        let cached = u.cached_input_tokens.min(u.input_tokens);
        let fresh = u.input_tokens - cached;
        (fresh as f64 * self.input
            + cached as f64 * self.cached_input
            + u.output_tokens as f64 * self.output)
            / 1_000_000.0
    }
}

/// What kind of model call a ledger entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallKind {
    /// A turn of the agent loop.
    Turn,
    /// A failed attempt that was retried.
    Retry,
    /// Summarising history for compaction.
    Compaction,
    /// A short call for a session title.
    Title,
    /// A sub-agent's whole run (all its model calls, summed).
    Subagent,
}

/// One model call the harness made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerEntry {
    pub kind: CallKind,
    pub provider: String,
    pub model: String,
    pub usage: Usage,
    /// None when the model's prices are unknown.
    pub cost_usd: Option<f64>,
    /// Whether the call produced an answer.
    pub ok: bool,
    pub duration_ms: u64,
    /// Unix milliseconds.
    pub at: i64,
}

/// Sums over ledger entries.
///
/// In JSON the cost is honest about what is not known: `cost_usd` is the
/// whole cost, or `null` when some call had no known price (a consumer
/// adding it up must not count those runs as free), and `known_cost_usd`
/// is the part that is known.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LedgerTotals {
    pub calls: u64,
    pub input_tokens: u64,
    pub cached_input_tokens: u64,
    pub output_tokens: u64,
    pub reasoning_tokens: u64,
    /// The whole cost; `None` when some call's price is unknown.
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// Sum of the known costs.
    #[serde(default)]
    pub known_cost_usd: f64,
    /// Calls whose cost is unknown (their tokens are in the sums).
    pub unpriced_calls: u64,
}

impl LedgerTotals {
    /// Count one entry. Token sums saturate at `u64::MAX` instead of
    /// wrapping; a cost that is not a finite, non-negative number (a
    /// provider's absurd usage priced) counts as unpriced.
    pub fn add(&mut self, e: &LedgerEntry) {
        self.calls = self.calls.saturating_add(1);
        self.input_tokens = self.input_tokens.saturating_add(e.usage.input_tokens);
        self.cached_input_tokens = self
            .cached_input_tokens
            .saturating_add(e.usage.cached_input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(e.usage.output_tokens);
        self.reasoning_tokens = self
            .reasoning_tokens
            .saturating_add(e.usage.reasoning_tokens);
        match e.cost_usd.filter(|c| c.is_finite() && *c >= 0.0) {
            Some(c) => self.known_cost_usd = (self.known_cost_usd + c).min(f64::MAX),
            None => self.unpriced_calls = self.unpriced_calls.saturating_add(1),
        }
        self.cost_usd = (self.unpriced_calls == 0).then_some(self.known_cost_usd);
    }

    /// The cost in words, the same everywhere rein shows it: `$0.0123`
    /// when every call's price is known (`$0.0000` before any call),
    /// `cost unknown` when none is, `≥ $0.0123` when some are.
    pub fn cost_text(&self) -> String {
        if self.unpriced_calls == 0 {
            format!("${:.4}", self.known_cost_usd)
        } else if self.unpriced_calls >= self.calls {
            "cost unknown".to_string()
        } else {
            format!("≥ ${:.4}", self.known_cost_usd)
        }
    }

    pub fn of(entries: &[LedgerEntry]) -> LedgerTotals {
        let mut t = LedgerTotals::default();
        for e in entries {
            t.add(e);
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimator_converges_to_the_reported_ratio() {
        let est = CalibratedEstimator::default();
        // The provider's tokenizer sees 3 characters a token.
        for _ in 0..6 {
            est.observe(30_000, 10_000);
        }
        let text = "x".repeat(9_000);
        let n = est.count(&text) as f64;
        assert!((n - 3_000.0).abs() / 3_000.0 < 0.10, "{n}");
        // Tiny samples teach nothing.
        est.observe(10, 100);
        assert!((est.chars_per_token() - 3.0).abs() < 0.1);
    }

    /// Counts a token a byte, and remembers being asked.
    struct Tables(AtomicBool);
    impl TokenCounter for Tables {
        fn count(&self, text: &str) -> u64 {
            self.0.store(true, Ordering::SeqCst);
            text.len() as u64
        }
        fn exact(&self) -> bool {
            true
        }
    }

    #[test]
    fn an_on_demand_tokenizer_estimates_until_sharpened_then_counts_exactly() {
        let tables = Arc::new(Tables(AtomicBool::new(false)));
        let counter = ExactOnDemand::new(tables.clone());
        let text = "x".repeat(4_000);
        assert_eq!(
            counter.count(&text),
            1_000,
            "4 bytes a token before any report"
        );
        counter.observe(6_000, 3_000);
        assert_eq!(counter.count(&text), 2_000, "calibrated on the report");
        assert!(!counter.exact());
        assert!(!tables.0.load(Ordering::SeqCst), "the tables were used");
        assert!(counter.sharpen(), "the first sharpen changes the counts");
        assert!(!counter.sharpen(), "later ones do not");
        assert!(counter.exact());
        assert_eq!(counter.count(&text), 4_000);
        assert!(tables.0.load(Ordering::SeqCst));
        // Counters that are exact or estimates from the start never change.
        assert!(!CalibratedEstimator::default().sharpen());
    }

    #[test]
    fn unknown_prices_make_the_cost_unknown_in_json_and_in_words() {
        let entry = |cost: Option<f64>| LedgerEntry {
            kind: CallKind::Turn,
            provider: "p".into(),
            model: "m".into(),
            usage: Usage::default(),
            cost_usd: cost,
            ok: true,
            duration_ms: 1,
            at: 0,
        };
        let priced = LedgerTotals::of(&[entry(Some(0.01)), entry(Some(0.02))]);
        assert_eq!(priced.cost_text(), "$0.0300");
        let json = serde_json::to_value(&priced).unwrap();
        assert!((json["cost_usd"].as_f64().unwrap() - 0.03).abs() < 1e-12);
        let mixed = LedgerTotals::of(&[entry(Some(0.01)), entry(None)]);
        assert_eq!(mixed.cost_text(), "≥ $0.0100");
        let json = serde_json::to_value(&mixed).unwrap();
        assert!(json["cost_usd"].is_null(), "{json}");
        assert_eq!(json["known_cost_usd"], 0.01);
        assert_eq!(json["unpriced_calls"], 1);
        let unknown = LedgerTotals::of(&[entry(None)]);
        assert_eq!(unknown.cost_text(), "cost unknown");
        assert_eq!(LedgerTotals::default().cost_text(), "$0.0000");
        let back: LedgerTotals = serde_json::from_value(json).unwrap();
        assert_eq!(back, mixed);
    }

    #[test]
    fn cost_bills_cached_input_at_its_own_price() {
        let p = Pricing {
            input: 2.0,
            cached_input: 0.5,
            output: 8.0,
        };
        let u = Usage {
            input_tokens: 1_000_000,
            cached_input_tokens: 400_000,
            output_tokens: 100_000,
            reasoning_tokens: 50_000,
        };
        let c = p.cost(&u);
        assert!((c - (1.2 + 0.2 + 0.8)).abs() < 1e-9, "{c}");
    }
}
