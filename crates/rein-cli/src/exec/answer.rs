//! What `rein exec` does with the final answer besides printing it:
//! `--output-schema FILE` (the answer must be JSON valid under the
//! schema; the model is told once what is wrong and asked again) and
//! `-o/--output-last-message FILE` (the answer is also written there).

use std::path::Path;

use anyhow::{Context, anyhow};
use serde_json::Value;

use crate::exit::Failure;

/// The largest schema file read.
const MAX_SCHEMA: u64 = 1024 * 1024;

/// A JSON Schema the answer must meet.
#[derive(Debug, Clone)]
pub struct AnswerSchema {
    pub schema: Value,
}

impl AnswerSchema {
    /// Read the schema at `path`: a JSON object, at most 1 MiB.
    pub fn read(path: &Path) -> Result<AnswerSchema, Failure> {
        let bad =
            |why: String| Failure::usage(anyhow!("--output-schema {}: {why}", path.display()));
        let meta = std::fs::metadata(path).map_err(|e| bad(e.to_string()))?;
        if !meta.is_file() || meta.len() > MAX_SCHEMA {
            return Err(bad("not a file of at most 1 MiB".into()));
        }
        let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        let schema: Value =
            serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
        if !schema.is_object() {
            return Err(bad("a JSON Schema is an object".into()));
        }
        Ok(AnswerSchema { schema })
    }

    /// The answer's JSON when it meets the schema, or what is wrong (one
    /// line). A single fenced block around the JSON is allowed.
    pub fn check(&self, answer: &str) -> Result<Value, String> {
        let text = unfence(answer);
        let value: Value =
            serde_json::from_str(text).map_err(|e| format!("the answer is not JSON ({e})"))?;
        rein_core::schema_check::check(&value, &self.schema)
            .map_err(|e| format!("the answer does not match the schema: {e}"))?;
        Ok(value)
    }

    /// What the model is told after an answer that did not fit.
    pub fn correction(&self, problem: &str) -> String {
        format!(
            "Your final answer must be only a JSON value valid under this JSON Schema, with no \
             other text: {problem}. Answer again with the JSON alone.\n\nSchema:\n{}",
            serde_json::to_string_pretty(&self.schema).unwrap_or_default()
        )
    }
}

/// The JSON inside one ```` ``` ```` fence, or the text as it is.
fn unfence(answer: &str) -> &str {
    let t = answer.trim();
    let Some(rest) = t.strip_prefix("```") else {
        return t;
    };
    let body = rest.split_once('\n').map_or("", |(_, b)| b);
    body.trim_end().strip_suffix("```").map_or(t, str::trim)
}

/// Write the answer to `path` (`-o`).
pub fn write_last_message(path: &Path, answer: &str) -> Result<(), Failure> {
    std::fs::write(path, answer)
        .with_context(|| format!("cannot write the answer to {}", path.display()))
        .map_err(Failure::harness)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> AnswerSchema {
        AnswerSchema {
            schema: serde_json::json!({
                "type": "object",
                "properties": {"verdict": {"enum": ["pass", "fail"]}, "count": {"type": "integer"}},
                "required": ["verdict"],
                "additionalProperties": false
            }),
        }
    }

    #[test]
    fn an_answer_fits_as_json_or_in_one_fence_and_misfits_are_said() {
        let s = schema();
        assert!(s.check("{\"verdict\": \"pass\", \"count\": 2}").is_ok());
        assert!(s.check("```json\n{\"verdict\": \"fail\"}\n```").is_ok());
        assert!(
            s.check("The verdict is pass.")
                .unwrap_err()
                .contains("not JSON")
        );
        let e = s.check("{\"verdict\": \"maybe\"}").unwrap_err();
        assert!(e.contains("does not match"), "{e}");
        let e = s
            .check("{\"verdict\": \"pass\", \"extra\": 1}")
            .unwrap_err();
        assert!(e.contains("does not match"), "{e}");
        assert!(s.correction(&e).contains("\"verdict\""));
    }
}
