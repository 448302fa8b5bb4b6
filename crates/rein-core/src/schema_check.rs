//! Checks tool arguments against the tool's JSON Schema before the tool
//! runs, so every tool (built-in or not) gets the same precise errors.
//!
//! Covers the subset tool schemas use: `type` (one or several), `properties`,
//! `required`, `additionalProperties: false`, `enum`, `const`, `items`,
//! `minimum`/`maximum`, `anyOf`/`oneOf`, and local `$ref`s into `$defs` or
//! `definitions`. Unknown keywords are ignored.

use serde_json::Value;

/// Check `value` against `schema`; the error names the offending path.
pub fn check(value: &Value, schema: &Value) -> Result<(), String> {
    check_at(value, schema, schema, "arguments", 0)
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
) -> Result<(), String> {
    if depth > 64 {
        return Err(format!("{at}: schema nests too deeply"));
    }
    let Some(obj) = schema.as_object() else {
        return Ok(()); // `true` or an unusable schema accepts anything
    };
    if let Some(Value::String(reference)) = obj.get("$ref") {
        let target = resolve(root, reference)
            .ok_or_else(|| format!("{at}: schema reference {reference} cannot be resolved"))?;
        check_at(value, target, root, at, depth + 1)?;
    }
    if let Some(types) = obj.get("type") {
        let allowed: Vec<&str> = match types {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !allowed.is_empty() && !allowed.iter().any(|t| type_matches(value, t)) {
            return Err(format!(
                "{at}: expected {}, got {}",
                allowed.join(" or "),
                type_name(value)
            ));
        }
    }
    if let Some(Value::Array(options)) = obj.get("enum")
        && !options.contains(value)
    {
        let list: Vec<String> = options.iter().map(Value::to_string).collect();
        return Err(format!(
            "{at}: must be one of {}, got {value}",
            list.join(", ")
        ));
    }
    if let Some(expected) = obj.get("const")
        && expected != value
    {
        return Err(format!("{at}: must be {expected}, got {value}"));
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
                return Err(first_err.unwrap_or_else(|| format!("{at}: matches no allowed form")));
            }
        }
    }
    if let Some(n) = value.as_f64() {
        if let Some(min) = obj.get("minimum").and_then(Value::as_f64)
            && n < min
        {
            return Err(format!("{at}: must be at least {min}, got {value}"));
        }
        if let Some(max) = obj.get("maximum").and_then(Value::as_f64)
            && n > max
        {
            return Err(format!("{at}: must be at most {max}, got {value}"));
        }
    }
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(required)) = obj.get("required") {
                for name in required.iter().filter_map(Value::as_str) {
                    if !map.contains_key(name) {
                        return Err(format!("{at}: missing required field `{name}`"));
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
                            let known: Vec<&str> = props
                                .map(|p| p.keys().map(String::as_str).collect())
                                .unwrap_or_default();
                            return Err(format!(
                                "{at}: unknown field `{key}` (expected one of: {})",
                                known.join(", ")
                            ));
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
        assert_eq!(e, "arguments: missing required field `todos`");
        let e = check(&json!({"todos": [{"id": 1, "status": "pending"}]}), &s).unwrap_err();
        assert_eq!(e, "arguments.todos[0].id: expected string, got integer");
        let e = check(&json!({"todos": [{"id": "1", "status": "done"}]}), &s).unwrap_err();
        assert!(
            e.starts_with("arguments.todos[0].status: must be one of"),
            "{e}"
        );
        let e = check(&json!({"todos": [], "extra": 1}), &s).unwrap_err();
        assert!(e.contains("unknown field `extra`"), "{e}");
        let e = check(&json!({"todos": [], "limit": 0}), &s).unwrap_err();
        assert!(e.contains("at least 1"), "{e}");
        let e = check(&json!([1]), &s).unwrap_err();
        assert_eq!(e, "arguments: expected object, got array");
    }
}
