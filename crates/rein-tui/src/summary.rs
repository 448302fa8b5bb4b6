//! The short description of a tool call, the one every front end shows:
//! the app's transcript, `rein exec`'s progress lines and `rein mcp-serve`'s
//! progress notes.
//!
//! Steps:
//! 1. Parse the arguments (model output: anything at all).
//! 2. A built-in tool shows its one telling field: the command, the path,
//!    the pattern.
//! 3. Any other tool (an MCP server's, a plugin's, a sub-agent's) shows its
//!    arguments as `key=value` pairs: strings shortened and quoted when
//!    they hold spaces, nested values as short JSON, the whole cut to a
//!    line.
//! 4. Every character that could drive a terminal is escaped (`\n`,
//!    `\u{1b}`) or shown as a marker, so nothing the model wrote reaches
//!    the terminal as a control sequence.

use serde_json::Value;

/// At most this many characters of one value.
const VALUE_CHARS: usize = 40;
/// At most this many characters of one key.
const KEY_CHARS: usize = 24;
/// At most this many characters in all (front ends cut further to fit).
const TOTAL_CHARS: usize = 160;

/// The short description of a call: the command, the path or the pattern
/// of a built-in tool; `key=value` pairs for any other. One line, safe for
/// a terminal.
pub fn call_summary(name: &str, arguments: &str) -> String {
    let Ok(args) = serde_json::from_str::<Value>(arguments) else {
        // Not JSON: the text itself, escaped and cut.
        return shorten(&escape(arguments.trim()), TOTAL_CHARS);
    };
    if let Some(picked) = builtin_field(name, &args) {
        return crate::cells::one_line(&picked);
    }
    match &args {
        Value::Object(fields) => pairs(fields),
        Value::Null => String::new(),
        other => shorten(&value_text(other), TOTAL_CHARS),
    }
}

/// The one field a built-in tool is known by, if `name` is one.
fn builtin_field(name: &str, args: &Value) -> Option<String> {
    let get = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_string);
    match name {
        "bash" => get("command"),
        "read_file" | "write_file" | "edit_file" => get("path"),
        "grep" => get("pattern").map(|p| match get("path") {
            Some(path) => format!("{p} in {path}"),
            None => p,
        }),
        "glob" => get("pattern"),
        "web_fetch" => get("url"),
        "web_search" | "tool_search" | "memory_search" => get("query"),
        "skill" => get("name"),
        "todo_write" => args
            .get("todos")
            .and_then(Value::as_array)
            .map(|t| format!("{} items", t.len())),
        _ => None,
    }
}

/// `key=value key2="two words"`, cut at [`TOTAL_CHARS`].
fn pairs(fields: &serde_json::Map<String, Value>) -> String {
    let mut out = String::new();
    for (key, value) in fields {
        let pair = format!(
            "{}={}",
            shorten(&escape(key), KEY_CHARS),
            shorten(&value_text(value), VALUE_CHARS)
        );
        let room = TOTAL_CHARS.saturating_sub(out.chars().count() + 1);
        if !out.is_empty() {
            out.push(' ');
        }
        if pair.chars().count() > room {
            out.push('…');
            break;
        }
        out.push_str(&pair);
    }
    out
}

/// A value as shown: a string escaped (quoted when it has spaces or is
/// empty), anything else as compact JSON, escaped too (JSON leaves some
/// control characters as they are).
fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => {
            let text = escape(s);
            if text.is_empty() || text.contains(char::is_whitespace) || text.contains('"') {
                format!("\"{}\"", text.replace('"', "\\\""))
            } else {
                text
            }
        }
        other => escape(&other.to_string()),
    }
}

/// Control characters as escapes (`\n`, `\t`, `\u{1b}`), then bidi and
/// invisible formatting characters as visible markers.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    crate::cells::sanitize(&out).into_owned()
}

/// At most `max` characters, with an ellipsis when cut.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_calls_show_their_telling_field() {
        assert_eq!(call_summary("bash", r#"{"command":"ls -la"}"#), "ls -la");
        assert_eq!(
            call_summary("grep", r#"{"pattern":"fn main","path":"src"}"#),
            "fn main in src"
        );
        assert_eq!(call_summary("read_file", r#"{"path":"a.txt"}"#), "a.txt");
        assert_eq!(
            call_summary("todo_write", r#"{"todos":[{},{}]}"#),
            "2 items"
        );
    }

    #[test]
    fn other_calls_show_key_value_pairs_not_json() {
        assert_eq!(
            call_summary("mcp__calc__add", r#"{"a":1,"b":2.5}"#),
            "a=1 b=2.5"
        );
        assert_eq!(
            call_summary(
                "mcp__fs__search",
                r#"{"query":"two words","flags":["i","w"],"deep":true,"empty":""}"#
            ),
            r#"deep=true empty="" flags=["i","w"] query="two words""#
        );
        assert_eq!(call_summary("mcp__x__ping", "{}"), "");
    }

    #[test]
    fn hostile_arguments_reach_no_terminal_as_control_sequences() {
        let args = serde_json::json!({
            "clear": "\u{1b}[2J\u{1b}]0;owned\u{7}",
            "csi": "\u{9b}31m",
            "lines": "one\ntwo\rthree",
            "bidi": "admin\u{202E}txt",
            "nested": {"k": "\u{1b}[31m\u{9b}"},
            "evil\u{1b}[1mkey": 1,
        });
        let shown = call_summary("mcp__evil__tool", &args.to_string());
        assert!(
            !shown.chars().any(|c| c.is_control()),
            "a control character got through: {shown:?}"
        );
        assert!(
            shown.contains(r"clear=\u{1b}[2J\u{1b}]0;owned\u{7}"),
            "{shown}"
        );
        assert!(shown.contains(r"csi=\u{9b}31m"), "{shown}");
        assert!(shown.contains(r"lines=one\ntwo\rthree"), "{shown}");
        assert!(shown.contains("admin<U+202E>txt"), "{shown}");
        assert!(shown.contains(r"evil\u{1b}[1mkey=1"), "{shown}");
        // Not JSON at all: the text, escaped.
        let raw = call_summary("mcp__evil__tool", "{\"a\": \u{1b}[2J\n");
        assert!(!raw.chars().any(|c| c.is_control()), "{raw:?}");
        assert!(raw.contains(r"\u{1b}[2J"), "{raw}");
    }

    #[test]
    fn huge_arguments_are_cut_to_one_short_line() {
        let huge = "x".repeat(100_000);
        let many: serde_json::Map<String, Value> = (0..500)
            .map(|i| (format!("key{i}"), Value::String(huge.clone())))
            .collect();
        let shown = call_summary("mcp__big__tool", &Value::Object(many).to_string());
        assert!(shown.chars().count() <= TOTAL_CHARS, "{}", shown.len());
        assert!(shown.starts_with(&format!("key0={}…", "x".repeat(VALUE_CHARS - 1))));
        assert!(shown.ends_with('…'), "{shown}");
        let one = call_summary(
            "mcp__big__tool",
            &serde_json::json!({ "a": huge }).to_string(),
        );
        assert_eq!(one.chars().count(), "a=".len() + VALUE_CHARS);
        let not_json = call_summary("mcp__big__tool", &huge);
        assert_eq!(not_json.chars().count(), TOTAL_CHARS);
    }
}
