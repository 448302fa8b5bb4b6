//! Checks tool arguments against the tool's JSON Schema before the tool
//! runs, so every tool (built-in or not) gets the same precise errors.
//!
//! Covers the subset tool schemas use: `type` (one or several), `properties`,
//! `required`, `additionalProperties: false`, `enum`, `const`, `items`,
//! `minimum`/`maximum`, `anyOf`/`oneOf`, and local `$ref`s into `$defs` or
//! `definitions`. Unknown keywords are ignored.

use serde_json::Value;

/// Why arguments break a schema: where (`arguments.todos[0].id`) and what
/// is wrong there.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{at}: {problem}")]
pub struct SchemaError {
    /// The path of the offending value, from `arguments`.
    pub at: String,
    /// Boxed: a result carrying it stays small on the path where all is well.
    pub problem: Box<SchemaProblem>,
}

/// What is wrong with one value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SchemaProblem {
    #[error("schema nests too deeply")]
    TooDeep,
    #[error("schema reference {0} cannot be resolved")]
    UnresolvedReference(String),
    #[error("expected {}, got {got}", .expected.join(" or "))]
    WrongType {
        expected: Vec<String>,
        got: &'static str,
    },
    #[error("must be one of {}, got {got}", joined(.allowed))]
    NotAllowed { allowed: Vec<Value>, got: Value },
    #[error("must be {expected}, got {got}")]
    NotConst { expected: Value, got: Value },
    #[error("matches no allowed form")]
    NoForm,
    #[error("must be at least {min}, got {got}")]
    BelowMinimum { min: f64, got: Value },
    #[error("must be at most {max}, got {got}")]
    AboveMaximum { max: f64, got: Value },
    #[error("missing required field `{0}`")]
    MissingField(String),
    #[error("unknown field `{field}` (expected one of: {})", .known.join(", "))]
    UnknownField { field: String, known: Vec<String> },
}

/// JSON values, comma-separated.
fn joined(values: &[Value]) -> String {
    let list: Vec<String> = values.iter().map(Value::to_string).collect();
    list.join(", ")
}

/// Check `value` against `schema`; the error names the offending path.
pub fn check(value: &Value, schema: &Value) -> Result<(), SchemaError> {
    check_at(value, schema, schema, "arguments", 0)
}

/// `problem` at `at`.
fn fail(at: &str, problem: SchemaProblem) -> Result<(), SchemaError> {
    Err(SchemaError {
        at: at.to_string(),
        problem: Box::new(problem),
    })
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_matches(v: &Value, ty: &str) -> bool {
    match ty {
        "number" => v.is_number(),
        "integer" => match v {
            Value::Number(n) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        },
        other => type_name(v) == other,
    }
}

fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    root.pointer(pointer)
}

fn check_at(
    value: &Value,
    schema: &Value,
    root: &Value,
    at: &str,
    depth: u32,
) -> Result<(), SchemaError> {
    if depth > 64 {
        return fail(at, SchemaProblem::TooDeep);
    }
    let Some(obj) = schema.as_object() else {
        return Ok(()); // `true` or an unusable schema accepts anything
    };
    if let Some(Value::String(reference)) = obj.get("$ref") {
        let Some(target) = resolve(root, reference) else {
            return fail(at, SchemaProblem::UnresolvedReference(reference.clone()));
        };
        check_at(value, target, root, at, depth + 1)?;
    }
    if let Some(types) = obj.get("type") {
        let allowed: Vec<&str> = match types {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !allowed.is_empty() && !allowed.iter().any(|t| type_matches(value, t)) {
            let expected = allowed.iter().map(|t| t.to_string()).collect();
            let got = type_name(value);
            return fail(at, SchemaProblem::WrongType { expected, got });
        }
    }
    if let Some(Value::Array(options)) = obj.get("enum")
        && !options.contains(value)
    {
        let (allowed, got) = (options.clone(), value.clone());
        return fail(at, SchemaProblem::NotAllowed { allowed, got });
    }
    if let Some(expected) = obj.get("const")
        && expected != value
    {
        let (expected, got) = (expected.clone(), value.clone());
        return fail(at, SchemaProblem::NotConst { expected, got });
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = obj.get(key) {
            let mut first_err = None;
            let ok = options
                .iter()
                .any(|s| match check_at(value, s, root, at, depth + 1) {
                    Ok(()) => true,
                    Err(e) => {
                        first_err.get_or_insert(e);
                        false
                    }
                });
            if !ok {
                return match first_err {
                    Some(e) => Err(e),
                    None => fail(at, SchemaProblem::NoForm),
                };
            }
        }
    }
    if let Some(n) = value.as_f64() {
        if let Some(min) = obj.get("minimum").and_then(Value::as_f64)
            && n < min
        {
            let got = value.clone();
            return fail(at, SchemaProblem::BelowMinimum { min, got });
        }
        if let Some(max) = obj.get("maximum").and_then(Value::as_f64)
            && n > max
        {
            let got = value.clone();
            return fail(at, SchemaProblem::AboveMaximum { max, got });
        }
    }
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(required)) = obj.get("required") {
                for name in required.iter().filter_map(Value::as_str) {
                    if !map.contains_key(name) {
                        return fail(at, SchemaProblem::MissingField(name.to_string()));
                    }
                }
            }
            let props = obj.get("properties").and_then(Value::as_object);
            for (key, v) in map {
                let sub = format!("{at}.{key}");
                match props.and_then(|p| p.get(key)) {
                    Some(s) => check_at(v, s, root, &sub, depth + 1)?,
                    None => match obj.get("additionalProperties") {
                        Some(Value::Bool(false)) => {
                            let known = props
                                .map(|p| p.keys().cloned().collect())
                                .unwrap_or_default();
                            let field = key.clone();
                            return fail(at, SchemaProblem::UnknownField { field, known });
                        }
                        Some(s @ Value::Object(_)) => check_at(v, s, root, &sub, depth + 1)?,
                        _ => {}
                    },
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = obj.get("items") {
                for (i, item) in items.iter().enumerate() {
                    check_at(item, item_schema, root, &format!("{at}[{i}]"), depth + 1)?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn todo_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "todos": {"type": "array", "items": {"$ref": "#/$defs/Todo"}},
                "limit": {"type": ["integer", "null"], "minimum": 1}
            },
            "required": ["todos"],
            "additionalProperties": false,
            "$defs": {"Todo": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "status": {"type": "string", "enum": ["pending", "completed"]}
                },
                "required": ["id", "status"]
            }}
        })
    }

    #[test]
    fn valid_arguments_pass() {
        let v = json!({"todos": [{"id": "1", "status": "pending"}], "limit": null});
        check(&v, &todo_schema()).unwrap();
    }

    #[test]
    fn errors_name_the_path_and_the_problem() {
        let s = todo_schema();
        let e = check(&json!({}), &s).unwrap_err();
        assert_eq!(
            e,
            SchemaError {
                at: "arguments".into(),
                problem: Box::new(SchemaProblem::MissingField("todos".into()))
            }
        );
        assert_eq!(e.to_string(), "arguments: missing required field `todos`");
        let e = check(&json!({"todos": [{"id": 1, "status": "pending"}]}), &s)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "arguments.todos[0].id: expected string, got integer");
        let e = check(&json!({"todos": [{"id": "1", "status": "done"}]}), &s)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("arguments.todos[0].status: must be one of"),
            "{e}"
        );
        let e = check(&json!({"todos": [], "extra": 1}), &s)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `extra`"), "{e}");
        let e = check(&json!({"todos": [], "limit": 0}), &s)
            .unwrap_err()
            .to_string();
        assert!(e.contains("at least 1"), "{e}");
        let e = check(&json!([1]), &s).unwrap_err().to_string();
        assert_eq!(e, "arguments: expected object, got array");
    }
}
