//! How much a run tells the model, and how much it helps it.
//!
//! A frontier model reads a long system prompt and detailed tool schemas
//! and uses them well. A small local model (0.5B–3B parameters) does not:
//! every token of the first request costs prompt-processing time on the
//! user's CPU (about 7.5 ms a token for the 0.5B model on two cores), and
//! long instructions dilute the few it follows. It also answers from
//! memory before looking, and shows a fix in a code block instead of
//! making it. The small profile answers both: a lean request (short
//! instructions, the first sentence of each tool's description, schemas
//! with only names, types and what is required) and the harness help of
//! [`crate::engine`]'s run: a tool call required on the first turn of a
//! task in a non-empty workspace, one nudge when the model describes a
//! change instead of applying it or answers about a file it has not read,
//! the task's own check run after a change (its failure handed back), and
//! answers to questions held to the run's tool output.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::schema::ToolSpec;

/// The request and help a run gives its model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Everything: the full system prompt, full tool descriptions and
    /// schemas, no forced calls, no nudges.
    #[default]
    Full,
    /// For small models: a lean request and harness help.
    Small,
}

impl Profile {
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Full => "full",
            Profile::Small => "small",
        }
    }

    /// Parse `full` or `small`.
    pub fn parse(text: &str) -> Option<Profile> {
        match text.trim().to_ascii_lowercase().as_str() {
            "full" => Some(Profile::Full),
            "small" => Some(Profile::Small),
            _ => None,
        }
    }

    /// Whether a run with this profile, and the levers in `without`
    /// switched off, gives `lever` (the small profile gives them all, the
    /// full one none).
    pub fn helps(self, lever: Lever, without: &[Lever]) -> bool {
        self == Profile::Small && !without.contains(&lever)
    }
}

/// One kind of help of the small profile, named so that it can be switched
/// off on its own (`rein exec --without LEVER`, `rein eval --without
/// LEVER`) to measure what it brings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Lever {
    /// Short instructions with the workspace's files listed, and compact
    /// tool schemas (`compact_spec`).
    Lean,
    /// Six tools (read, list, grep, edit, write, bash) instead of all of
    /// them (chosen by the front end that builds the tool set).
    Tools,
    /// The first model call of a run in a non-empty workspace must call a
    /// tool.
    FirstCall,
    /// One nudge per run when the model shows a change instead of making
    /// it, or answers about a file it never opened.
    Nudge,
    /// One tool call per answer.
    SingleCall,
    /// A file must be read before it is overwritten (a hook the front end
    /// adds).
    ReadFirst,
    /// The check the task or project names (a test command, a test file,
    /// a failing command the model ran) runs after the model's change,
    /// through the gate, and a failure goes back to the model.
    Check,
    /// When the check still fails after the model's rounds, a few
    /// alternative fixes are sampled, each tried in a scratch copy of the
    /// workspace; the first that passes the check is applied.
    Candidates,
    /// An answer to a question must come from the run's tool output: one
    /// nudge to look when its value appears in none.
    Evidence,
    /// Tools that say what a search that found nothing was near (file
    /// names the pattern matches, lines with its words in any case, the
    /// lines that name a missing file) and count matches per folder
    /// (chosen by the front end that builds the tool set; with the
    /// `tools` lever off there is nothing to hint with).
    Hints,
}

impl Lever {
    /// Every lever, in the order they are documented.
    pub const ALL: [Lever; 10] = [
        Lever::Lean,
        Lever::Tools,
        Lever::FirstCall,
        Lever::Nudge,
        Lever::SingleCall,
        Lever::ReadFirst,
        Lever::Check,
        Lever::Candidates,
        Lever::Evidence,
        Lever::Hints,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Lever::Lean => "lean",
            Lever::Tools => "tools",
            Lever::FirstCall => "first-call",
            Lever::Nudge => "nudge",
            Lever::SingleCall => "single-call",
            Lever::ReadFirst => "read-first",
            Lever::Check => "check",
            Lever::Candidates => "candidates",
            Lever::Evidence => "evidence",
            Lever::Hints => "hints",
        }
    }

    /// Parse a lever's name (as [`Lever::as_str`] writes it).
    pub fn parse(text: &str) -> Option<Lever> {
        let text = text.trim().to_ascii_lowercase();
        Lever::ALL.into_iter().find(|l| l.as_str() == text)
    }
}

impl std::fmt::Display for Lever {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `spec` as the small profile offers it: the first sentence of its
/// description, and a schema with only its required properties, their
/// names, types, enums, bounds, item types (no descriptions, defaults or
/// formats; `["integer", "null"]` becomes `"integer"`). The gate still
/// checks calls against the tool's own schema, which accepts them.
pub fn compact_spec(spec: &ToolSpec) -> ToolSpec {
    ToolSpec {
        name: spec.name.clone(),
        description: first_sentence(&spec.description),
        parameters: required_only(compact_schema(&spec.parameters)),
    }
}

/// The schema without its optional top-level properties but the yes-or-no
/// ones: measured with `rein eval`, the 0.5B model fills every property
/// it is shown (an `offset` of 1000000000, a `timeout_secs` of
/// 1000000000), while the defaults of the optional ones are what it
/// needs. A boolean has no absurd value, and a local model's grammar,
/// built from this schema, could not write one left out: told to set
/// `replace_all` to rename a name used twice in a file, the 1.5B model
/// sent the same failing edit three times.
fn required_only(mut schema: Value) -> Value {
    let required: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        props.retain(|name, prop| {
            required.contains(name) || prop.get("type").and_then(Value::as_str) == Some("boolean")
        });
    }
    schema
}

/// The text up to the end of its first sentence (a period, question or
/// exclamation mark followed by a space or the end), on one line.
fn first_sentence(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    let bytes = line.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if matches!(b, b'.' | b'?' | b'!') && bytes.get(i + 1).is_none_or(|n| *n == b' ') {
            return line[..=i].to_string();
        }
    }
    line.to_string()
}

/// Keys of a JSON schema kept by [`compact_schema`]: the structure and
/// every bound the gate checks (a bound left out only invites a call the
/// gate refuses; a local model's grammar is built from these schemas too).
const KEPT_KEYS: [&str; 9] = [
    "type",
    "properties",
    "required",
    "items",
    "enum",
    "minimum",
    "maximum",
    "$ref",
    "$defs",
];

fn compact_schema(schema: &Value) -> Value {
    let Value::Object(obj) = schema else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (key, value) in obj {
        if !KEPT_KEYS.contains(&key.as_str()) {
            continue;
        }
        let value = match key.as_str() {
            "type" => non_null_type(value),
            "properties" | "$defs" => match value {
                Value::Object(props) => Value::Object(
                    props
                        .iter()
                        .map(|(name, s)| (name.clone(), compact_schema(s)))
                        .collect(),
                ),
                other => other.clone(),
            },
            "items" => compact_schema(value),
            _ => value.clone(),
        };
        out.insert(key.clone(), value);
    }
    Value::Object(out)
}

/// `["integer", "null"]` → `"integer"`; anything else unchanged.
fn non_null_type(value: &Value) -> Value {
    match value {
        Value::Array(types) => {
            let kept: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
            match kept.as_slice() {
                [one] => (*one).clone(),
                _ => value.clone(),
            }
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_compact_spec_keeps_names_types_enums_and_required_only() {
        let spec = ToolSpec {
            name: "read_file".into(),
            description: "Read a text file, with line numbers. Long lines are cut.\nMore.".into(),
            parameters: json!({
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "path": {"type": "string", "description": "The file."},
                    "limit": {"type": ["integer", "null"], "format": "uint", "minimum": 1,
                              "default": null, "description": "Lines."},
                    "mode": {"enum": ["a", "b"], "description": "Which."},
                    "items": {"type": "array", "items": {"type": "string", "description": "x"}},
                    "all": {"type": ["boolean", "null"], "description": "Every one."}
                },
                "required": ["path"]
            }),
        };
        let small = compact_spec(&spec);
        assert_eq!(small.description, "Read a text file, with line numbers.");
        // Optional properties go, but a yes-or-no one.
        assert_eq!(
            small.parameters,
            json!({
                "type": "object",
                "properties": {"path": {"type": "string"}, "all": {"type": "boolean"}},
                "required": ["path"]
            })
        );
        let mut all_required = spec.clone();
        all_required.parameters["required"] = json!(["path", "limit", "mode", "items"]);
        assert_eq!(
            compact_spec(&all_required).parameters["properties"],
            json!({
                "all": {"type": "boolean"},
                "path": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1},
                "mode": {"enum": ["a", "b"]},
                "items": {"type": "array", "items": {"type": "string"}}
            })
        );
    }

    #[test]
    fn a_first_sentence_ends_at_a_stop_followed_by_a_space_not_inside_a_name() {
        assert_eq!(
            first_sentence("Run `bash -c` in a.txt. Then more."),
            "Run `bash -c` in a.txt."
        );
        assert_eq!(first_sentence("No stop at all"), "No stop at all");
        assert_eq!(first_sentence("Ends here."), "Ends here.");
    }

    #[test]
    fn profiles_parse_from_their_names_only() {
        assert_eq!(Profile::parse("Small"), Some(Profile::Small));
        assert_eq!(Profile::parse("full"), Some(Profile::Full));
        assert_eq!(Profile::parse("tiny"), None);
    }
}
