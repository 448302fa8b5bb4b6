//! Faults a model service shows in the wild, as scripted responses of the
//! mock server: what a fault soak throws at the HTTP provider and the
//! engine's retries.

use std::time::Duration;

use super::{HangUp, MockResponse, Part};

/// One way a request to a model service goes wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// 429 with a `retry-after` header.
    RateLimited,
    /// A 5xx or 529 status with a JSON error body.
    Status(u16),
    /// The connection is closed as soon as it is accepted.
    Refused,
    /// The request is read, then the connection closed before any header.
    DropBeforeHeaders,
    /// The body ends cleanly in the middle of an event (a proxy's cut).
    EndMidEvent,
    /// The connection breaks in the middle of an event.
    DropMidEvent,
    /// The connection breaks between two whole events.
    DropBetweenEvents,
    /// One event, then silence (the client's idle timeout must be short).
    Idle,
    /// A whole event whose data is not JSON, among good ones.
    Malformed,
}

impl Fault {
    /// Every kind, the 5xx statuses included.
    pub const ALL: [Fault; 12] = [
        Fault::RateLimited,
        Fault::Status(500),
        Fault::Status(502),
        Fault::Status(503),
        Fault::Status(529),
        Fault::Refused,
        Fault::DropBeforeHeaders,
        Fault::EndMidEvent,
        Fault::DropMidEvent,
        Fault::DropBetweenEvents,
        Fault::Idle,
        Fault::Malformed,
    ];

    /// The faulty response standing in for `good`, a whole SSE body of at
    /// least two events (the faults that cut a stream cut this one).
    pub fn response(self, good: &[u8]) -> MockResponse {
        let first_end = event_ends(good).next().unwrap_or(good.len());
        match self {
            Fault::RateLimited => error(429).with_header("retry-after", "0"),
            Fault::Status(status) => error(status),
            Fault::Refused => hang_up(HangUp::OnAccept),
            Fault::DropBeforeHeaders => hang_up(HangUp::AfterRequest),
            Fault::EndMidEvent => MockResponse::sse_parts(vec![Part::Bytes(
                good[..mid_event(good, first_end)].to_vec(),
            )]),
            Fault::DropMidEvent => MockResponse::sse_parts(vec![
                Part::Bytes(good[..mid_event(good, first_end)].to_vec()),
                Part::Drop,
            ]),
            Fault::DropBetweenEvents => {
                MockResponse::sse_parts(vec![Part::Bytes(good[..first_end].to_vec()), Part::Drop])
            }
            Fault::Idle => MockResponse::sse_parts(vec![
                Part::Bytes(good[..first_end].to_vec()),
                Part::Pause(Duration::from_secs(30)),
            ]),
            Fault::Malformed => {
                let mut body = good[..first_end].to_vec();
                body.extend_from_slice(b"data: {\"choices\": [{\"delta\": oops}\n\n");
                body.extend_from_slice(&good[first_end..]);
                MockResponse::sse(body)
            }
        }
    }
}

/// Byte offsets just past each blank line that ends an event.
fn event_ends(body: &[u8]) -> impl Iterator<Item = usize> + '_ {
    body.windows(2)
        .enumerate()
        .filter(|(_, w)| w == b"\n\n")
        .map(|(i, _)| i + 2)
}

/// An offset inside the event after `from`: past its `data:` and before
/// its blank line.
fn mid_event(body: &[u8], from: usize) -> usize {
    let next_end = event_ends(body).find(|&e| e > from).unwrap_or(body.len());
    (from + (next_end - from) / 2).clamp(from + 1, next_end.saturating_sub(3).max(from + 1))
}

fn error(status: u16) -> MockResponse {
    MockResponse::json(
        status,
        &serde_json::json!({"error": {"type": "overloaded_error", "message": format!("mock fault {status}")}}),
    )
}

fn hang_up(how: HangUp) -> MockResponse {
    MockResponse {
        status: 0,
        headers: Vec::new(),
        parts: Vec::new(),
        hang_up: Some(how),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mid_event_cut_falls_inside_the_second_event() {
        let body = b"data: {\"a\": 1}\n\ndata: {\"b\": 2}\n\n";
        let first = event_ends(body).next().unwrap();
        assert_eq!(first, 16);
        let cut = mid_event(body, first);
        assert!(cut > first && cut < body.len() - 2, "{cut}");
        assert!(!body[..cut].ends_with(b"\n\n"));
    }
}
