//! `OpenSpan`: a span being recorded, with random ids and wall-clock
//! times taken when its events arrive.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::proto::KeyValue;
use crate::proto::trace::{Span, SpanKind, Status, StatusCode};
use crate::semconv;

/// A W3C trace id: 16 random bytes, never all zero (zero means invalid).
pub(crate) fn new_trace_id() -> [u8; 16] {
    fastrand::u128(1..).to_be_bytes()
}

/// A span id: 8 random bytes, never all zero.
pub(crate) fn new_span_id() -> [u8; 8] {
    fastrand::u64(1..).to_be_bytes()
}

/// Now, in nanoseconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn now_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The W3C "sampled" flag: every span rein records is exported.
const SAMPLED: u32 = 1;

/// A span that has started and not yet ended.
#[derive(Debug)]
pub(crate) struct OpenSpan {
    span: Span,
}

impl OpenSpan {
    /// Start now, under `parent` (or as a root).
    pub fn start(
        trace_id: [u8; 16],
        parent: Option<[u8; 8]>,
        name: String,
        kind: SpanKind,
    ) -> Self {
        OpenSpan {
            span: Span {
                trace_id: trace_id.to_vec(),
                span_id: new_span_id().to_vec(),
                parent_span_id: parent.map(|p| p.to_vec()).unwrap_or_default(),
                name,
                kind: kind as i32,
                start_time_unix_nano: now_nanos(),
                flags: SAMPLED,
                ..Default::default()
            },
        }
    }

    pub fn id(&self) -> [u8; 8] {
        let mut id = [0; 8];
        if self.span.span_id.len() == 8 {
            id.copy_from_slice(&self.span.span_id);
        }
        id
    }

    /// Set an attribute, replacing one of the same key.
    pub fn set(&mut self, kv: KeyValue) {
        match self.span.attributes.iter_mut().find(|a| a.key == kv.key) {
            Some(slot) => *slot = kv,
            None => self.span.attributes.push(kv),
        }
    }

    /// Mark it failed: `error.type` (a short, low-cardinality class) and an
    /// ERROR status with `message`.
    pub fn fail(&mut self, error_type: &str, message: impl Into<String>) {
        self.set(KeyValue::string(semconv::ERROR_TYPE, error_type));
        self.span.status = Some(Status {
            message: message.into(),
            code: StatusCode::Error as i32,
        });
    }

    /// The `error.type` it was failed with, if any.
    pub fn error_type(&self) -> Option<String> {
        crate::proto::find(&self.span.attributes, semconv::ERROR_TYPE)
            .and_then(|kv| kv.as_str())
            .map(str::to_string)
    }

    /// Seconds since it started.
    pub fn elapsed_seconds(&self) -> f64 {
        now_nanos().saturating_sub(self.span.start_time_unix_nano) as f64 / 1e9
    }

    /// End it now. A clock that stepped back never gives an end before the
    /// start.
    pub fn end(mut self) -> Span {
        self.span.end_time_unix_nano = now_nanos().max(self.span.start_time_unix_nano);
        self.span
    }
}
