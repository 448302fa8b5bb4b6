//! Counting tokens the way OpenAI's models do, offline.
//!
//! OpenAI publishes its tokenizers (`tiktoken`); the `tiktoken-rs` crate
//! compiles their byte-pair tables into the binary, so counting never
//! touches the network. Two encodings cover OpenAI's chat models:
//! `o200k_base` (GPT-4o, GPT-4.1, GPT-4.5, GPT-5, o1, o3, o4) and
//! `cl100k_base` (GPT-4, GPT-3.5 Turbo). Building an encoder parses a few
//! megabytes of tables, so each is built once per process, on first use,
//! and only when exact counts are asked for ([`openai_counter`]).
//!
//! Models of other vendors served over an OpenAI-compatible API have their
//! own tokenizers: [`openai_counter`] answers `None` for them, and the
//! engine falls back to its calibrated estimate.

use std::sync::{Arc, OnceLock};

use rein_core::{ExactOnDemand, TokenCounter};
use tiktoken_rs::CoreBPE;

/// An OpenAI tokenizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// GPT-4o, GPT-4.1, GPT-4.5, GPT-5 and the o-series.
    O200kBase,
    /// GPT-4 and GPT-3.5 Turbo.
    Cl100kBase,
}

impl Encoding {
    /// The encoding's name as tiktoken spells it.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
        }
    }
}

/// Model families on `o200k_base`, matched as a whole name or a prefix
/// followed by `-` or `.` (`gpt-5`, `gpt-5-mini`, `gpt-5.4`).
const O200K_FAMILIES: &[&str] = &[
    "gpt-4o",
    "chatgpt-4o",
    "gpt-4.1",
    "gpt-4.5",
    "gpt-5",
    "o1",
    "o3",
    "o4",
];

/// Model families on `cl100k_base`, matched as a whole name or a prefix
/// followed by `-` (so `gpt-4o` and `gpt-4.1` are not taken for `gpt-4`).
/// `gpt-35-turbo` is Azure's spelling.
const CL100K_FAMILIES: &[&str] = &["gpt-4", "gpt-3.5-turbo", "gpt-35-turbo"];

/// The encoding of an OpenAI model, by its name: a vendor path
/// (`openai/gpt-4o`) and a fine-tune prefix (`ft:gpt-4o-mini:org::id`) are
/// allowed. `None` for models that are not OpenAI's.
pub fn encoding_for_model(model: &str) -> Option<Encoding> {
    let name = name_only(model);
    if O200K_FAMILIES
        .iter()
        .any(|f| in_family(&name, f, &['-', '.']))
    {
        Some(Encoding::O200kBase)
    } else if CL100K_FAMILIES.iter().any(|f| in_family(&name, f, &['-'])) {
        Some(Encoding::Cl100kBase)
    } else {
        None
    }
}

/// The bare model name: no vendor path, no fine-tune decoration
/// (`ft:gpt-4o-mini:org::id` is `gpt-4o-mini`), lower case.
fn name_only(model: &str) -> String {
    let name = model.rsplit('/').next().unwrap_or(model).trim();
    let name = name.strip_prefix("ft:").unwrap_or(name);
    let end = name.find(':').unwrap_or(name.len());
    name[..end].to_ascii_lowercase()
}

/// Whether `name` is `family` or `family` followed by one of `separators`.
fn in_family(name: &str, family: &str, separators: &[char]) -> bool {
    match name.strip_prefix(family) {
        Some("") => true,
        Some(rest) => rest.starts_with(separators),
        None => false,
    }
}

/// A counter with OpenAI's own tokenizer for `model`, or `None` when the
/// model is not a known OpenAI model. It estimates until the engine asks
/// for exact counts near the compaction threshold ([`ExactOnDemand`]):
/// building the encoder costs tens of megabytes and a fifth of a second
/// of CPU that a short session does not need.
pub fn openai_counter(model: &str) -> Option<Arc<dyn TokenCounter>> {
    let exact = Arc::new(TiktokenCounter::new(encoding_for_model(model)?));
    Some(Arc::new(ExactOnDemand::new(exact)))
}

/// The encoder of `encoding`, built on first use. `None` only if the
/// tables compiled into the binary do not load (a broken build).
fn encoder(encoding: Encoding) -> Option<&'static CoreBPE> {
    static O200K: OnceLock<Option<CoreBPE>> = OnceLock::new();
    static CL100K: OnceLock<Option<CoreBPE>> = OnceLock::new();
    match encoding {
        Encoding::O200kBase => O200K.get_or_init(|| tiktoken_rs::o200k_base().ok()),
        Encoding::Cl100kBase => CL100K.get_or_init(|| tiktoken_rs::cl100k_base().ok()),
    }
    .as_ref()
}

/// Counts with one of OpenAI's tokenizers. Text is encoded as ordinary
/// text: a special-token marker inside a message (`<|endoftext|>`) counts
/// as the characters it is made of, as the API treats it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TiktokenCounter {
    encoding: Encoding,
}

impl TiktokenCounter {
    pub fn new(encoding: Encoding) -> Self {
        TiktokenCounter { encoding }
    }

    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// The token ids of `text`; `None` if the encoder is unavailable or
    /// failed on this text.
    pub fn encode(&self, text: &str) -> Option<Vec<u32>> {
        let bpe = encoder(self.encoding)?;
        // The regex engine inside may give up on pathological input and
        // the library unwraps that; a count is never worth a crash.
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| bpe.encode_ordinary(text))).ok()
    }
}

impl TokenCounter for TiktokenCounter {
    fn count(&self, text: &str) -> u64 {
        if text.is_empty() {
            return 0;
        }
        match self.encode(text) {
            Some(ids) => ids.len() as u64,
            // Never expected; four bytes a token is the usual estimate.
            None => (text.len() as u64).div_ceil(4),
        }
    }

    fn exact(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn families_are_matched_by_whole_name_or_separated_prefix() {
        use Encoding::*;
        for (model, want) in [
            ("gpt-4o", Some(O200kBase)),
            ("gpt-4o-mini-2024-07-18", Some(O200kBase)),
            ("openai/gpt-4.1-mini", Some(O200kBase)),
            ("gpt-5", Some(O200kBase)),
            ("GPT-5.4-mini", Some(O200kBase)),
            ("o1-preview", Some(O200kBase)),
            ("o3", Some(O200kBase)),
            ("o4-mini", Some(O200kBase)),
            ("ft:gpt-4o-mini:acme::abc123", Some(O200kBase)),
            ("gpt-4", Some(Cl100kBase)),
            ("gpt-4-0613", Some(Cl100kBase)),
            ("gpt-4-turbo", Some(Cl100kBase)),
            ("gpt-3.5-turbo", Some(Cl100kBase)),
            ("gpt-35-turbo-16k", Some(Cl100kBase)),
            ("gpt-40", None),
            ("o30", None),
            ("oss-model", None),
            ("deepseek-chat", None),
            ("qwen2.5-coder-32b", None),
            ("claude-sonnet-4-5", None),
            ("", None),
        ] {
            assert_eq!(encoding_for_model(model), want, "{model}");
        }
    }

    #[test]
    fn the_empty_text_is_no_tokens() {
        assert_eq!(TiktokenCounter::new(Encoding::Cl100kBase).count(""), 0);
    }
}
