//! An MCP server's form (elicitation) in the app. Steps:
//!
//! 1. The requested schema becomes fields: strings, numbers, integers,
//!    booleans and enums (single choice), each with its title, whether it
//!    is required, and its default pre-filled.
//! 2. Keys: Up/Down (or Tab) move between fields, typing edits a text or
//!    number field, Space or Left/Right change a boolean or an enum;
//!    Enter accepts (when every required field is filled and every number
//!    reads), Ctrl+D declines, Esc cancels.
//! 3. The answer goes back to the server that asked.

use serde_json::{Map, Value};
use tokio::sync::oneshot;

/// The user's answer to a form.
#[derive(Debug, Clone, PartialEq)]
pub enum FormAnswer {
    Accept(Map<String, Value>),
    Decline,
    Cancel,
}

/// A form a server sends, with where its answer goes.
#[derive(Debug)]
pub struct FormRequest {
    pub server: String,
    pub message: String,
    /// The MCP requested schema, as JSON.
    pub schema: Value,
    pub reply: oneshot::Sender<FormAnswer>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    Text,
    Number,
    Integer,
    Boolean,
    /// One of these values.
    Choice(Vec<String>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub title: String,
    pub kind: FieldKind,
    pub required: bool,
    /// What is typed, `true`/`false`, or the chosen value ("" for none).
    pub value: String,
}

/// A form on screen.
#[derive(Debug)]
pub struct Form {
    pub server: String,
    pub message: String,
    pub fields: Vec<Field>,
    pub selected: usize,
    /// Why Enter did not accept, when it did not.
    pub problem: Option<String>,
    reply: Option<oneshot::Sender<FormAnswer>>,
}

/// The field of one schema property.
fn field(name: &str, property: &Value, required: bool) -> Field {
    let default = property.get("default");
    let choices: Option<Vec<String>> = property.get("enum").and_then(Value::as_array).map(|v| {
        v.iter()
            .filter_map(|c| c.as_str().map(str::to_string))
            .collect()
    });
    let kind = match (choices, property.get("type").and_then(Value::as_str)) {
        (Some(choices), _) => FieldKind::Choice(choices),
        (None, Some("number")) => FieldKind::Number,
        (None, Some("integer")) => FieldKind::Integer,
        (None, Some("boolean")) => FieldKind::Boolean,
        _ => FieldKind::Text,
    };
    let value = match (default, &kind) {
        (Some(Value::String(s)), _) => s.clone(),
        (Some(Value::Bool(b)), _) => b.to_string(),
        (Some(Value::Number(n)), _) => n.to_string(),
        (None, FieldKind::Boolean) => "false".into(),
        _ => String::new(),
    };
    let title = property
        .get("title")
        .and_then(Value::as_str)
        .unwrap_or(name)
        .to_string();
    Field {
        name: name.to_string(),
        title,
        kind,
        required,
        value,
    }
}

impl Form {
    pub fn new(request: FormRequest) -> Form {
        let required: Vec<&str> = request
            .schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let fields: Vec<Field> = request
            .schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .iter()
                    .map(|(name, p)| field(name, p, required.contains(&name.as_str())))
                    .collect()
            })
            .unwrap_or_default();
        // The cursor starts on the first field the user must fill.
        let selected = fields
            .iter()
            .position(|f| f.required && f.value.is_empty())
            .unwrap_or(0);
        Form {
            server: request.server,
            message: request.message,
            fields,
            selected,
            problem: None,
            reply: Some(request.reply),
        }
    }

    /// Send `answer` to the server (once).
    pub fn answer(&mut self, answer: FormAnswer) {
        if let Some(reply) = self.reply.take() {
            let _ = reply.send(answer);
        }
    }

    pub fn next(&mut self) {
        if !self.fields.is_empty() {
            self.selected = (self.selected + 1) % self.fields.len();
        }
    }

    pub fn previous(&mut self) {
        if !self.fields.is_empty() {
            self.selected = (self.selected + self.fields.len() - 1) % self.fields.len();
        }
    }

    /// Type `c` into the selected field (a boolean or choice: Space
    /// changes it).
    pub fn type_char(&mut self, c: char) {
        let Some(f) = self.fields.get_mut(self.selected) else {
            return;
        };
        match &f.kind {
            FieldKind::Boolean | FieldKind::Choice(_) if c == ' ' => self.cycle(1),
            FieldKind::Boolean | FieldKind::Choice(_) => {}
            _ => f.value.push(c),
        }
    }

    pub fn backspace(&mut self) {
        if let Some(f) = self.fields.get_mut(self.selected)
            && matches!(
                f.kind,
                FieldKind::Text | FieldKind::Number | FieldKind::Integer
            )
        {
            f.value.pop();
        }
    }

    /// Change a boolean or move a choice by `step`.
    pub fn cycle(&mut self, step: isize) {
        let Some(f) = self.fields.get_mut(self.selected) else {
            return;
        };
        match &f.kind {
            FieldKind::Boolean => f.value = (f.value != "true").to_string(),
            FieldKind::Choice(choices) if !choices.is_empty() => {
                let at = choices.iter().position(|c| *c == f.value);
                let n = choices.len() as isize;
                let next = match at {
                    Some(i) => (i as isize + step).rem_euclid(n),
                    None => 0,
                };
                f.value = choices[next as usize].clone();
            }
            _ => {}
        }
    }

    /// The content to accept with, or what is missing or wrong.
    pub fn content(&self) -> Result<Map<String, Value>, String> {
        let mut content = Map::new();
        for f in &self.fields {
            if f.value.is_empty() {
                if f.required {
                    return Err(format!("`{}` is required", f.title));
                }
                continue;
            }
            let value = match f.kind {
                FieldKind::Text | FieldKind::Choice(_) => Value::String(f.value.clone()),
                FieldKind::Boolean => Value::Bool(f.value == "true"),
                FieldKind::Integer => f
                    .value
                    .trim()
                    .parse::<i64>()
                    .map(Value::from)
                    .map_err(|_| format!("`{}` must be a whole number", f.title))?,
                FieldKind::Number => f
                    .value
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64)
                    .map(Value::Number)
                    .ok_or_else(|| format!("`{}` must be a number", f.title))?,
            };
            content.insert(f.name.clone(), value);
        }
        Ok(content)
    }
}

impl Drop for Form {
    /// A form closed without an answer (the app quit) cancels.
    fn drop(&mut self) {
        self.answer(FormAnswer::Cancel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form(schema: Value) -> (Form, oneshot::Receiver<FormAnswer>) {
        let (reply, rx) = oneshot::channel();
        let request = FormRequest {
            server: "s".into(),
            message: "m".into(),
            schema,
            reply,
        };
        (Form::new(request), rx)
    }

    #[test]
    fn defaults_are_prefilled_and_edits_are_typed_back() {
        let (mut f, _rx) = form(
            json!({"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string", "default": "Ada"},
                "age": {"type": "integer", "default": 36},
                "score": {"type": "number"},
                "ok": {"type": "boolean", "default": true},
                "pet": {"type": "string", "enum": ["cat", "dog"], "default": "dog"},
            }}),
        );
        let names: Vec<&str> = f.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["age", "name", "ok", "pet", "score"]);
        // Every required field has a value: the cursor starts at the top.
        assert_eq!(f.selected, 0);
        assert_eq!(
            f.content().unwrap(),
            *json!({"name": "Ada", "age": 36, "ok": true, "pet": "dog"})
                .as_object()
                .unwrap()
        );
        f.selected = 2;
        f.type_char(' ');
        f.selected = 3;
        f.cycle(1);
        f.selected = 4;
        f.type_char('x');
        assert_eq!(f.content().unwrap_err(), "`score` must be a number");
        f.backspace();
        for c in "9.5".chars() {
            f.type_char(c);
        }
        let content = f.content().unwrap();
        assert_eq!(content["ok"], false);
        assert_eq!(content["pet"], "cat");
        assert_eq!(content["score"], 9.5);
        f.selected = 1;
        for _ in 0..3 {
            f.backspace();
        }
        assert_eq!(f.content().unwrap_err(), "`name` is required");
        let (f, _rx) = form(json!({"type": "object", "required": ["b"], "properties": {
            "a": {"type": "string"}, "b": {"type": "string"},
        }}));
        assert_eq!(f.selected, 1, "the cursor starts on the required field");
    }

    #[test]
    fn a_form_closed_without_an_answer_cancels() {
        let (f, mut rx) = form(json!({"type": "object", "properties": {}}));
        drop(f);
        assert_eq!(rx.try_recv().unwrap(), FormAnswer::Cancel);
    }
}
