//! What rein exports, read by a decoder nobody here wrote: the
//! OpenTelemetry project's Python classes (opentelemetry-proto, installed by
//! `.ci/run` into ~/.cache/rein/pyotel), with the GenAI names checked
//! against its published semantic conventions. Steps:
//!
//! 1. Run the scenario into the HTTP receiver, keeping each body as sent.
//! 2. Hand the bodies to `tests/otlp_check.py`, which decodes them with the
//!    official classes, lists every field its schema does not declare (a
//!    misnumbered field lands there) and every `gen_ai.*` name the
//!    conventions lack.
//! 3. Compare its view of every span and metric with rein's own types'.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rein_telemetry::proto::metrics::Data;
use rein_telemetry::proto::{AnyValue, KeyValue, Value as Any};
use serde_json::{Value, json};

use crate::spans::exported;

/// Where `.ci/run` installs the Python packages, if it did.
fn pyotel() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("HOME")?).join(".cache/rein/pyotel");
    if dir.join("opentelemetry/proto").is_dir() && dir.join("opentelemetry/semconv").is_dir() {
        return Some(dir);
    }
    rein_test_support::skip(
        rein_test_support::Component::PythonOtelProto,
        format!("not installed ({})", dir.display()),
    );
    None
}

/// The checker's JSON for the bodies in `folder`.
fn decode(pyotel: &Path, folder: &Path) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/otlp_check.py");
    let out = std::process::Command::new("python3")
        .arg(&script)
        .arg(folder)
        .env("PYTHONPATH", pyotel)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the official decoder refused: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn write_bodies(bodies: &[(String, bytes::Bytes)], folder: &Path) {
    for (i, (path, body)) in bodies.iter().enumerate() {
        let kind = path.trim_start_matches("/v1/");
        std::fs::write(folder.join(format!("{kind}-{i:03}.bin")), body).unwrap();
    }
}

fn plain(value: &Option<AnyValue>) -> Value {
    match value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(Any::StringValue(s)) => json!(s),
        Some(Any::BoolValue(b)) => json!(b),
        Some(Any::IntValue(i)) => json!(i),
        Some(Any::DoubleValue(d)) => json!(d),
        Some(Any::ArrayValue(a)) => a.values.iter().map(|v| plain(&Some(v.clone()))).collect(),
        None => Value::Null,
    }
}

fn attrs(kvs: &[KeyValue]) -> Value {
    let map: serde_json::Map<String, Value> = kvs
        .iter()
        .map(|kv| (kv.key.clone(), plain(&kv.value)))
        .collect();
    Value::Object(map)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Spans by id, as the checker prints them.
fn by_id(spans: &[Value]) -> BTreeMap<String, Value> {
    spans
        .iter()
        .map(|s| (s["span_id"].as_str().unwrap().to_string(), s.clone()))
        .collect()
}

#[tokio::test]
async fn the_official_decoder_reads_every_span_and_metric_and_genai_names_are_published() {
    let Some(pyotel) = pyotel() else { return };
    let receiver = exported(true).await;
    let folder = tempfile::tempdir().unwrap();
    write_bodies(&receiver.bodies(), folder.path());
    let theirs = decode(&pyotel, folder.path());
    assert_eq!(theirs["unknown_fields"], json!([]), "{theirs}");
    assert_eq!(theirs["not_in_semconv"], json!([]), "{theirs}");
    // Every span reads the same to the official classes as to rein's own.
    let ours: Vec<Value> = receiver
        .spans()
        .iter()
        .map(|s| {
            json!({
                "name": s.name, "trace_id": hex(&s.trace_id), "span_id": hex(&s.span_id),
                "parent_span_id": hex(&s.parent_span_id), "kind": s.kind,
                "status": s.status.as_ref().map_or(0, |st| st.code),
                "attributes": attrs(&s.attributes),
            })
        })
        .collect();
    assert_eq!(ours.len(), 11);
    assert_eq!(
        by_id(theirs["spans"].as_array().unwrap()),
        by_id(&ours),
        "the official decoding differs"
    );
    let genai = ours
        .iter()
        .flat_map(|s| s["attributes"].as_object().unwrap().keys())
        .filter(|k| k.starts_with("gen_ai."))
        .count();
    assert!(genai > 20, "only {genai} gen_ai attributes were compared");
    // Every metric of every export, with its points.
    let received = receiver.received.lock().unwrap();
    let metrics: Vec<Value> = received
        .metrics
        .iter()
        .flat_map(|m| &m.resource_metrics)
        .flat_map(|rm| &rm.scope_metrics)
        .flat_map(|sm| &sm.metrics)
        .map(|m| match &m.data {
            Some(Data::Sum(s)) => {
                json!({"name": m.name, "kind": "sum", "points": s.data_points.len()})
            }
            Some(Data::Histogram(h)) => {
                json!({"name": m.name, "kind": "histogram", "points": h.data_points.len()})
            }
            None => json!({"name": m.name, "kind": null, "points": 0}),
        })
        .collect();
    assert!(!metrics.is_empty());
    assert_eq!(theirs["metrics"], json!(metrics));
}

/// The check is able to fail: the same export with `resource_spans` sent
/// as field 2 instead of 1 (one byte: the key 0x0a becomes 0x12, lengths
/// unchanged) decodes to no span and an undeclared field.
#[tokio::test]
async fn a_misnumbered_field_is_caught_by_the_official_decoder() {
    let Some(pyotel) = pyotel() else { return };
    let receiver = exported(false).await;
    let mut bodies: Vec<(String, bytes::Bytes)> = receiver
        .bodies()
        .into_iter()
        .filter(|(path, _)| path == "/v1/traces")
        .collect();
    let (_, first) = &mut bodies[0];
    assert_eq!(
        first[0], 0x0a,
        "resource_spans (field 1, length-delimited) first"
    );
    let mut wrong = first.to_vec();
    wrong[0] = 0x12;
    *first = wrong.into();
    let folder = tempfile::tempdir().unwrap();
    write_bodies(&bodies[..1], folder.path());
    let theirs = decode(&pyotel, folder.path());
    assert_eq!(
        theirs["unknown_fields"],
        json!(["traces-000.bin"]),
        "{theirs}"
    );
    assert_eq!(theirs["spans"], json!([]));
}
