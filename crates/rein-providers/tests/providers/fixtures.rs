//! Loads the recorded provider traffic in `../shared/fixtures/providers`
//! (see its SOURCES.md for the formats), makes the SSE variants every parser
//! must read identically, and runs a protocol's parser over a stream.

use std::path::{Path, PathBuf};

use rein_core::{AssistantAssembler, AssistantMessage, ProviderError, StreamChunk};
use rein_providers::protocol::WireProtocol;
use rein_providers::sse::SseDecoder;
use serde_json::Value;

/// The fixture folder: `$REIN_FIXTURES`, or `../shared/fixtures/providers`
/// beside the checkout.
pub fn dir() -> PathBuf {
    let dir = match std::env::var_os("REIN_FIXTURES") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/providers"),
    };
    assert!(
        dir.join("SOURCES.md").is_file(),
        "provider fixtures not found at {}: the `shared` folder must sit beside the checkout, or set REIN_FIXTURES",
        dir.display()
    );
    dir
}

/// Every fixture file under `sub` (relative to the fixture folder), sorted.
pub fn list(sub: &str) -> Vec<String> {
    let mut out = Vec::new();
    let root = dir();
    let mut stack = vec![root.join(sub)];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(&root).unwrap().display().to_string();
                if rel != "SOURCES.md" {
                    out.push(rel);
                }
            }
        }
    }
    out.sort();
    out
}

/// A recorded response body.
#[derive(Debug, Clone)]
pub enum Body {
    /// A `text/event-stream` body, as bytes on the wire.
    Sse(Vec<u8>),
    /// A JSON body (non-streaming answer or error).
    Json(Value),
    /// Anything else, verbatim.
    Text(String),
}

/// One recorded request/response pair.
#[derive(Debug, Clone)]
pub struct Interaction {
    /// HTTP status; 200 when the recording does not say.
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Body,
    /// The request body, when recorded (as JSON).
    pub request: Option<Value>,
}

fn classify(text: &str, content_type: Option<&str>) -> Body {
    let trimmed = text.trim_start();
    let is_sse = content_type.is_some_and(|c| c.contains("event-stream"))
        || trimmed.starts_with("data:")
        || trimmed.starts_with("event:")
        || trimmed.starts_with(':');
    if is_sse {
        return Body::Sse(text.as_bytes().to_vec());
    }
    match serde_json::from_str(text) {
        Ok(v) => Body::Json(v),
        Err(_) => Body::Text(text.to_string()),
    }
}

fn yaml_to_json(v: &serde_yaml::Value) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

fn header_pairs(v: Option<&serde_yaml::Value>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(serde_yaml::Value::Mapping(m)) = v {
        for (k, vals) in m {
            let k = k.as_str().unwrap_or_default().to_ascii_lowercase();
            match vals {
                serde_yaml::Value::Sequence(list) => {
                    for val in list {
                        out.push((k.clone(), val.as_str().unwrap_or_default().to_string()));
                    }
                }
                other => out.push((k.clone(), other.as_str().unwrap_or_default().to_string())),
            }
        }
    }
    out
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// The status a file name states (`openai_429_insufficient-quota.body.json`).
fn status_from_name(name: &str) -> Option<u16> {
    name.split(['_', '.'])
        .find(|p| p.len() == 3 && p.chars().all(|c| c.is_ascii_digit()))
        .and_then(|p| p.parse().ok())
}

/// Wrap `.data.jsonl` payloads back into SSE; `with_event_names` adds an
/// `event:` line from each payload's `type` (Anthropic, Responses).
pub fn jsonl_to_sse(text: &str, with_event_names: bool) -> Vec<u8> {
    let mut out = String::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if with_event_names
            && let Ok(v) = serde_json::from_str::<Value>(line)
            && let Some(t) = v.get("type").and_then(Value::as_str)
        {
            out.push_str(&format!("event: {t}\n"));
        }
        out.push_str(&format!("data: {line}\n\n"));
    }
    out.into_bytes()
}

/// Load a fixture by its path relative to the fixture folder.
pub fn load(rel: &str) -> Vec<Interaction> {
    let path = dir().join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{rel}: {e}"));
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let named_status = status_from_name(&name);
    if name.ends_with(".sse") {
        return vec![Interaction {
            status: 200,
            headers: Vec::new(),
            body: Body::Sse(text.into_bytes()),
            request: None,
        }];
    }
    if name.ends_with(".data.jsonl") {
        let named = rel.starts_with("anthropic") || rel.contains("responses");
        return vec![Interaction {
            status: 200,
            headers: Vec::new(),
            body: Body::Sse(jsonl_to_sse(&text, named)),
            request: None,
        }];
    }
    if name.ends_with(".nock.json") {
        let list: Vec<Value> = serde_json::from_str(&text).unwrap();
        return list
            .into_iter()
            .map(|rec| {
                let body = match &rec["response"] {
                    Value::String(s) => classify(s, None),
                    other => Body::Json(other.clone()),
                };
                Interaction {
                    status: rec["status"].as_u64().unwrap_or(200) as u16,
                    headers: Vec::new(),
                    body,
                    request: Some(rec["body"].clone()),
                }
            })
            .collect();
    }
    if name.ends_with(".vcr.yaml") {
        let doc: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
        let mut out = Vec::new();
        for it in doc["interactions"].as_sequence().unwrap() {
            let resp = &it["response"];
            let headers = header_pairs(resp.get("headers"));
            let status = resp["code"]
                .as_u64()
                .or_else(|| resp["status"]["code"].as_u64())
                .unwrap_or(200) as u16;
            let body = if let Some(s) = resp["body"].as_str() {
                classify(s, header(&headers, "content-type"))
            } else if let Some(s) = resp["body"]["string"].as_str() {
                classify(s, header(&headers, "content-type"))
            } else {
                Body::Json(yaml_to_json(&resp["parsed_body"]))
            };
            let req = &it["request"];
            let request = if let Some(s) = req["body"].as_str() {
                serde_json::from_str(s).ok()
            } else if req.get("parsed_body").is_some() {
                Some(yaml_to_json(&req["parsed_body"]))
            } else {
                None
            };
            out.push(Interaction {
                status,
                headers,
                body,
                request,
            });
        }
        return out;
    }
    if name.ends_with(".json") {
        return vec![Interaction {
            status: named_status.unwrap_or(200),
            headers: Vec::new(),
            body: Body::Json(serde_json::from_str(&text).unwrap()),
            request: None,
        }];
    }
    panic!("unknown fixture format: {rel}");
}

/// The same stream as differently shaped byte chunks: every variant must
/// decode to the same answer as the original.
pub fn variants(sse: &[u8]) -> Vec<(&'static str, Vec<Vec<u8>>)> {
    let text = String::from_utf8_lossy(sse).into_owned();
    let crlf = text.replace('\n', "\r\n").into_bytes();
    let cr = text.replace('\n', "\r").into_bytes();
    let mut commented = String::from(": connected\n\n");
    let mut multiline = String::new();
    for line in text.split_inclusive('\n') {
        if line == "\n" {
            commented.push_str("\n: keep-alive\n");
        } else {
            commented.push_str(line);
        }
        match line
            .strip_prefix("data: ")
            .map(|p| p.trim_end_matches('\n'))
        {
            Some(payload) if serde_json::from_str::<Value>(payload).is_ok() => {
                let v: Value = serde_json::from_str(payload).unwrap();
                for l in serde_json::to_string_pretty(&v).unwrap().lines() {
                    multiline.push_str(&format!("data: {l}\n"));
                }
            }
            _ => multiline.push_str(line),
        }
    }
    let bytes = sse.to_vec();
    let split = |b: &[u8], n: usize| b.chunks(n).map(<[u8]>::to_vec).collect::<Vec<_>>();
    // Pseudo-random chunk sizes from a fixed seed, so failures reproduce.
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut random = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let n = 1 + (seed % 97) as usize;
        let end = (at + n).min(bytes.len());
        random.push(bytes[at..end].to_vec());
        at = end;
    }
    vec![
        ("lf", vec![bytes.clone()]),
        ("crlf", vec![crlf.clone()]),
        ("cr", vec![cr]),
        ("comments", vec![commented.into_bytes()]),
        ("multi-line data", vec![multiline.into_bytes()]),
        ("byte by byte", split(&bytes, 1)),
        ("crlf in 2-byte chunks", split(&crlf, 2)),
        ("random chunks", random),
    ]
}

/// What a parser made of a stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub chunks: Vec<StreamChunk>,
    pub message: AssistantMessage,
}

/// Decode `chunks` as SSE and run `protocol`'s parser over the events, as
/// the HTTP provider does. Err is the first error the parser returned.
pub fn parse_stream(
    protocol: &dyn WireProtocol,
    chunks: &[Vec<u8>],
) -> Result<Parsed, ProviderError> {
    let mut decoder = SseDecoder::new();
    let mut parser = protocol.parser();
    let mut out = Vec::new();
    let mut done = false;
    let mut events = Vec::new();
    for c in chunks {
        events.extend(decoder.feed(c));
    }
    decoder.finish();
    for ev in &events {
        if done {
            break;
        }
        for chunk in parser.on_event(ev)? {
            done |= matches!(chunk, StreamChunk::Done(_));
            out.push(chunk);
        }
    }
    if !done {
        out.extend(parser.finish()?);
    }
    let mut asm = AssistantAssembler::default();
    for c in &out {
        if asm.push(c.clone()) {
            break;
        }
    }
    Ok(Parsed {
        chunks: out,
        message: asm.finish(),
    })
}

/// The raw SSE bytes of a fixture's first streaming interaction.
pub fn sse_of(rel: &str) -> Vec<u8> {
    load(rel)
        .into_iter()
        .find_map(|i| match i.body {
            Body::Sse(b) => Some(b),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{rel} has no streaming body"))
}
