//! Reading and checking a script's JSON.

use std::path::Path;
use std::time::Duration;

use rein_core::{FinishReason, Pricing, ProviderErrorKind, Usage};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::{
    DEFAULT_MODEL, FINISHES, KINDS, ReplayError, ReplayFailure, ReplayScript, ReplayToolCall,
    ReplayTurn, kind_name,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScript {
    description: Option<String>,
    model: Option<String>,
    context_window: Option<u64>,
    pricing: Option<RawPricing>,
    turns: Vec<RawTurn>,
    #[serde(default)]
    summaries: Vec<String>,
    #[serde(default)]
    agents: std::collections::BTreeMap<String, Vec<RawTurn>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPricing {
    input: f64,
    cached_input: Option<f64>,
    output: f64,
}

impl RawPricing {
    fn check(self) -> Result<Pricing, ReplayError> {
        let pricing = Pricing {
            input: self.input,
            cached_input: self.cached_input.unwrap_or(self.input),
            output: self.output,
        };
        for (name, value) in [
            ("input", pricing.input),
            ("cached_input", pricing.cached_input),
            ("output", pricing.output),
        ] {
            if !value.is_finite() || value < 0.0 {
                return Err(ReplayError::invalid(
                    None,
                    format!("`pricing.{name}` must be a price of at least 0, not {value}"),
                ));
            }
        }
        Ok(pricing)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTurn {
    reasoning: Option<String>,
    reasoning_signature: Option<String>,
    text: Option<String>,
    #[serde(default)]
    tool_calls: Vec<RawToolCall>,
    usage: Option<RawUsage>,
    #[serde(default, deserialize_with = "finish_reason")]
    finish: Option<FinishReason>,
    chunk_chars: Option<usize>,
    #[serde(default)]
    delay_ms: u64,
    error: Option<RawFailure>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToolCall {
    id: Option<String>,
    name: String,
    arguments: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cached_input_tokens: u64,
    #[serde(default)]
    reasoning_tokens: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFailure {
    #[serde(deserialize_with = "error_kind")]
    kind: ProviderErrorKind,
    message: Option<String>,
    status: Option<u16>,
    retry_after_ms: Option<u64>,
    #[serde(default)]
    after_text: bool,
}

fn names<T>(table: &[(&str, T)]) -> String {
    table
        .iter()
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join(", ")
}

fn error_kind<'de, D: Deserializer<'de>>(d: D) -> Result<ProviderErrorKind, D::Error> {
    let name = String::deserialize(d)?;
    KINDS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, kind)| *kind)
        .ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown error kind {name:?}, expected one of: {}",
                names(KINDS)
            ))
        })
}

fn finish_reason<'de, D: Deserializer<'de>>(d: D) -> Result<Option<FinishReason>, D::Error> {
    let Some(name) = Option::<String>::deserialize(d)? else {
        return Ok(None);
    };
    FINISHES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, reason)| Some(reason.clone()))
        .ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown finish reason {name:?}, expected one of: {}",
                names(FINISHES)
            ))
        })
}
impl ReplayScript {
    /// A script of these turns, with the default model name.
    pub fn new(turns: Vec<ReplayTurn>) -> Self {
        ReplayScript {
            turns,
            ..Default::default()
        }
    }

    /// Parse and check a script's JSON text.
    pub fn parse(text: &str) -> Result<ReplayScript, ReplayError> {
        let raw: RawScript = serde_json::from_str(text).map_err(|e| schema_error(text, &e))?;
        if raw.turns.is_empty() {
            return Err(ReplayError::invalid(
                None,
                "`turns` is empty; a script needs at least one turn",
            ));
        }
        let turns = raw
            .turns
            .into_iter()
            .enumerate()
            .map(|(i, t)| convert_turn(t).map_err(|m| ReplayError::invalid(Some(i + 1), m)))
            .collect::<Result<Vec<_>, _>>()?;
        let pricing = raw.pricing.map(RawPricing::check).transpose()?;
        if raw.summaries.iter().any(|t| t.trim().is_empty()) {
            return Err(ReplayError::invalid(
                None,
                "`summaries` holds an empty text",
            ));
        }
        let mut agents = std::collections::BTreeMap::new();
        for (name, turns) in raw.agents {
            let turns = turns
                .into_iter()
                .enumerate()
                .map(|(i, t)| {
                    convert_turn(t).map_err(|m| {
                        ReplayError::invalid(None, format!("agents.{name} turn {}: {m}", i + 1))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            agents.insert(name, turns);
        }
        Ok(ReplayScript {
            agents,
            summaries: raw.summaries,
            description: raw.description,
            model: raw.model.unwrap_or_else(|| DEFAULT_MODEL.to_string()),
            context_window: raw.context_window,
            pricing,
            turns,
        })
    }

    /// Read, parse and check a script file.
    pub fn from_file(path: &Path) -> Result<ReplayScript, ReplayError> {
        let text = std::fs::read_to_string(path).map_err(|source| ReplayError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        ReplayScript::parse(&text).map_err(|e| e.in_file(path))
    }
}

/// Turn a serde_json error on the whole script into a precise `ReplayError`,
/// naming the turn it lies in when there is one.
fn schema_error(text: &str, err: &serde_json::Error) -> ReplayError {
    let full = err.to_string();
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    let message = full.strip_suffix(&suffix).unwrap_or(&full).to_string();
    if !err.is_data() {
        return ReplayError::Json {
            path: None,
            line: err.line(),
            column: err.column(),
            message,
        };
    }
    ReplayError::Invalid {
        path: None,
        turn: locate_turn(text, &message),
        position: (err.line() > 0).then_some((err.line(), err.column())),
        message,
    }
}

/// The 1-based number of the first turn that fails with `message` on its own.
fn locate_turn(text: &str, message: &str) -> Option<usize> {
    let value: Value = serde_json::from_str(text).ok()?;
    let turns = value.get("turns")?.as_array()?;
    turns
        .iter()
        .position(|t| matches!(RawTurn::deserialize(t), Err(e) if e.to_string() == message))
        .map(|i| i + 1)
}

fn convert_turn(raw: RawTurn) -> Result<ReplayTurn, String> {
    let has_content = raw.text.is_some()
        || raw.reasoning.is_some()
        || raw.reasoning_signature.is_some()
        || !raw.tool_calls.is_empty()
        || raw.error.is_some();
    if !has_content {
        return Err(
            "the turn has nothing to play: give it `text`, `reasoning`, \
                    `reasoning_signature`, `tool_calls` or `error`"
                .to_string(),
        );
    }
    if raw.chunk_chars == Some(0) {
        return Err("`chunk_chars` must be at least 1".to_string());
    }
    let tool_calls = raw
        .tool_calls
        .into_iter()
        .enumerate()
        .map(|(n, call)| {
            let n = n + 1;
            if call.name.trim().is_empty() {
                return Err(format!("tool call {n} has an empty `name`"));
            }
            if call.id.as_deref() == Some("") {
                return Err(format!(
                    "tool call {n} has an empty `id` (leave `id` out for the default)"
                ));
            }
            let arguments = match call.arguments {
                None | Some(Value::Null) => "{}".to_string(),
                Some(Value::String(raw)) => raw,
                Some(other) => other.to_string(),
            };
            Ok(ReplayToolCall {
                id: call.id,
                name: call.name,
                arguments,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ReplayTurn {
        reasoning: raw.reasoning,
        reasoning_signature: raw.reasoning_signature,
        text: raw.text,
        tool_calls,
        usage: raw.usage.map(|u| Usage {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cached_input_tokens: u.cached_input_tokens,
            reasoning_tokens: u.reasoning_tokens,
        }),
        finish: raw.finish,
        chunk_chars: raw.chunk_chars,
        delay: Duration::from_millis(raw.delay_ms),
        error: raw.error.map(|e| ReplayFailure {
            kind: e.kind,
            message: e
                .message
                .unwrap_or_else(|| format!("replayed {} error", kind_name(e.kind))),
            status: e.status,
            retry_after: e.retry_after_ms.map(Duration::from_millis),
            after_text: e.after_text,
        }),
    })
}
