//! Errors of the Chat Completions API: HTTP error bodies, errors inside a
//! stream or a 200 body, and how each maps to a retry decision.

use rein_core::{ProviderError, ProviderErrorKind};
use serde_json::Value;

use super::count;

pub(super) fn protocol_error(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ProviderErrorKind::Protocol, message)
}

/// An error the service put in a chunk or a 200 body: `Unavailable` when
/// its code says rate limit or overload (so it is retried), otherwise
/// `Stream` (or `ContextLengthExceeded`).
pub(super) fn in_band_error(err: &Value) -> ProviderError {
    let info = ErrorInfo::from_error(err);
    let kind = if info.is_transient() {
        ProviderErrorKind::Unavailable
    } else if info.is_context_length() {
        ProviderErrorKind::ContextLengthExceeded
    } else {
        ProviderErrorKind::Stream
    };
    ProviderError::new(kind, info.render())
}

/// What an OpenAI-style error object says.
#[derive(Debug, Default)]
pub(super) struct ErrorInfo {
    message: String,
    code: Option<String>,
    kind: Option<String>,
    param: Option<String>,
    /// OpenRouter: the upstream provider and its own words.
    upstream: Option<(Option<String>, String)>,
    /// Groq: the output that failed validation.
    failed_generation: Option<String>,
    /// A numeric code or `status_code` in the object.
    numeric: Option<u64>,
}

impl ErrorInfo {
    /// The error of a response body: `{"error": {...}}`, `{"error": "..."}`,
    /// a flat `{"message": ...}` (vLLM), `{"detail": ...}` (FastAPI
    /// servers), or the first element of an array of those.
    pub(super) fn from_body(v: &Value) -> Option<ErrorInfo> {
        match v {
            Value::Array(items) => items.first().and_then(ErrorInfo::from_body),
            Value::Object(obj) => {
                if let Some(err) = obj.get("error").filter(|e| !e.is_null()) {
                    let mut info = ErrorInfo::from_error(err);
                    if err.is_string() {
                        // `{"error": "...", "code": ...}`: details beside it.
                        let outer = ErrorInfo::from_error(v);
                        info.code = outer.code;
                        info.numeric = outer.numeric;
                        info.kind = outer.kind;
                    }
                    return Some(info);
                }
                if obj.get("message").is_some_and(Value::is_string) {
                    return Some(ErrorInfo::from_error(v));
                }
                match obj.get("detail") {
                    Some(Value::String(s)) => Some(ErrorInfo {
                        message: s.clone(),
                        ..Default::default()
                    }),
                    Some(other) if !other.is_null() => Some(ErrorInfo {
                        message: first_chars(&other.to_string(), 300).to_string(),
                        ..Default::default()
                    }),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// One error object (or a bare string).
    pub(super) fn from_error(err: &Value) -> ErrorInfo {
        if let Some(s) = err.as_str() {
            return ErrorInfo {
                message: s.to_string(),
                ..Default::default()
            };
        }
        let text = |key: &str| -> Option<String> {
            match err.get(key)? {
                Value::String(s) if !s.is_empty() => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            }
        };
        let message = text("message").unwrap_or_else(|| {
            if err.is_object() {
                first_chars(&err.to_string(), 300).to_string()
            } else {
                String::new()
            }
        });
        let numeric = count(err.get("code"))
            .or_else(|| count(err.get("status_code")))
            .or_else(|| text("code").and_then(|c| c.parse().ok()));
        let upstream = err.pointer("/metadata/raw").and_then(|raw| {
            let raw = match raw {
                Value::String(s) => s.trim().to_string(),
                Value::Null => return None,
                other => other.to_string(),
            };
            (!raw.is_empty()).then(|| {
                (
                    err.pointer("/metadata/provider_name")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    first_chars(&raw, 500).to_string(),
                )
            })
        });
        ErrorInfo {
            message,
            code: text("code"),
            kind: text("type"),
            param: text("param"),
            upstream,
            failed_generation: text("failed_generation").map(|s| first_chars(&s, 300).to_string()),
            numeric,
        }
    }

    /// `message (code: c, param: p); upstream X: raw; failed generation: g`.
    pub(super) fn render(&self) -> String {
        let mut out = if self.message.is_empty() {
            "the service gave no message".to_string()
        } else {
            self.message.clone()
        };
        let mut details = Vec::new();
        if let Some(code) = &self.code {
            details.push(format!("code: {code}"));
        } else if let Some(kind) = &self.kind {
            details.push(format!("type: {kind}"));
        }
        if let Some(param) = &self.param {
            details.push(format!("param: {param}"));
        }
        if !details.is_empty() {
            out.push_str(&format!(" ({})", details.join(", ")));
        }
        if let Some((provider, raw)) = &self.upstream {
            match provider {
                Some(p) => out.push_str(&format!("; upstream {p}: {raw}")),
                None => out.push_str(&format!("; upstream: {raw}")),
            }
        }
        if let Some(generation) = &self.failed_generation {
            out.push_str(&format!("; failed generation: {generation}"));
        }
        out
    }

    pub(super) fn codes(&self) -> impl Iterator<Item = String> + '_ {
        [&self.code, &self.kind]
            .into_iter()
            .flatten()
            .map(|s| s.to_ascii_lowercase())
    }

    pub(super) fn is_quota(&self) -> bool {
        self.codes().any(|c| c == "insufficient_quota")
    }

    pub(super) fn is_context_length(&self) -> bool {
        self.codes().any(|c| c.contains("context_length")) || mentions_context_length(&self.message)
    }

    /// Rate limited or overloaded: worth a retry.
    pub(super) fn is_transient(&self) -> bool {
        matches!(self.numeric, Some(408 | 429 | 500 | 502 | 503 | 504 | 529))
            || self.codes().any(|c| {
                c.contains("rate_limit")
                    || c.contains("overload")
                    || c.contains("unavailable")
                    || c == "server_error"
            })
    }
}

pub(super) fn mentions_context_length(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "context_length_exceeded",
        "maximum context length",
        "context length",
        "context window",
        "context size",
        "prompt is too long",
    ]
    .iter()
    .any(|p| m.contains(p))
}

/// At most `n` characters of `s`.
pub(super) fn first_chars(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((at, _)) => &s[..at],
        None => s,
    }
}

pub(super) fn reason_phrase(status: u16) -> Option<&'static str> {
    Some(match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => return None,
    })
}
