//! Server-sent events: one decoder for every provider.
//!
//! Follows the WHATWG event-stream rules: lines end in LF, CRLF or CR (a CR
//! at the end of one network read and an LF at the start of the next are one
//! line end); lines starting with `:` are comments; `data:` lines of one
//! event are joined with `\n`; a blank line dispatches the event. Bytes are
//! only decoded as UTF-8 once a whole line is in, so a character split
//! across reads is never damaged. As the spec says, an event that the
//! stream did not close with a blank line before it ended is discarded: a
//! connection cut in the middle of `data: {"delta": "par` must not be read
//! as an event. Whether the answer as a whole was complete is for the wire
//! parser to judge (each protocol has its own end marker).

/// One decoded event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field; empty when the server sent none.
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The last `id:` field seen, if any.
    pub id: Option<String>,
}

/// Incremental decoder: feed it bytes as they arrive.
#[derive(Debug, Default)]
pub struct SseDecoder {
    buf: Vec<u8>,
    /// Where to resume looking for a line end in `buf`.
    scan: usize,
    /// The previous read ended in CR: an LF starting this one is part of it.
    after_cr: bool,
    started: bool,
    event: String,
    data: String,
    has_data: bool,
    id: Option<String>,
}

/// Largest line kept (a misbehaving server cannot make rein buffer forever).
const MAX_LINE: usize = 16 * 1024 * 1024;

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Decode `bytes`, returning the events they complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        let mut bytes = bytes;
        if self.after_cr && !bytes.is_empty() {
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
            self.after_cr = false;
        }
        self.buf.extend_from_slice(bytes);
        let mut start = 0;
        let mut i = self.scan;
        while i < self.buf.len() {
            let b = self.buf[i];
            if b == b'\n' || b == b'\r' {
                let line_end = i;
                let mut next = i + 1;
                if b == b'\r' {
                    if next < self.buf.len() {
                        if self.buf[next] == b'\n' {
                            next += 1;
                        }
                    } else {
                        self.after_cr = true;
                    }
                }
                let line = self.buf[start..line_end].to_vec();
                self.line(&line, &mut out);
                start = next;
                i = next;
            } else {
                i += 1;
            }
        }
        self.buf.drain(..start);
        self.scan = self.buf.len();
        if self.buf.len() > MAX_LINE {
            // Drop an absurdly long unterminated line rather than grow forever.
            self.buf.clear();
            self.scan = 0;
        }
        out
    }

    /// The stream ended. An event that was not closed by a blank line is
    /// discarded (WHATWG: "if the file ends in the middle of an event, before
    /// the final empty line, the incomplete event is not dispatched").
    /// Returns whether anything was discarded.
    pub fn finish(&mut self) -> bool {
        let discarded = self.has_data || self.buf.iter().any(|b| !b.is_ascii_whitespace());
        self.buf.clear();
        self.scan = 0;
        self.after_cr = false;
        self.event.clear();
        self.data.clear();
        self.has_data = false;
        discarded
    }

    fn line(&mut self, raw: &[u8], out: &mut Vec<SseEvent>) {
        let mut raw = raw;
        if !self.started {
            self.started = true;
            raw = raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw);
        }
        if raw.is_empty() {
            if self.has_data {
                out.push(SseEvent {
                    event: std::mem::take(&mut self.event),
                    data: std::mem::take(&mut self.data),
                    id: self.id.clone(),
                });
            }
            self.event.clear();
            self.data.clear();
            self.has_data = false;
            return;
        }
        if raw[0] == b':' {
            return;
        }
        let line = String::from_utf8_lossy(raw);
        let (field, value) = match line.find(':') {
            Some(p) => {
                let v = &line[p + 1..];
                (&line[..p], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (&line[..], ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "id" if !value.contains('\0') => self.id = Some(value.to_string()),
            _ => {}
        }
    }
}

/// Decode a whole body at once (for tests and recorded streams); an
/// unterminated last event is discarded as in a live stream.
pub fn decode_all(body: &[u8]) -> Vec<SseEvent> {
    let mut d = SseDecoder::new();
    let events = d.feed(body);
    d.finish();
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
            id: None,
        }
    }

    #[test]
    fn lf_crlf_and_cr_line_ends_decode_the_same() {
        let lf = "event: a\ndata: 1\n\ndata: 2\n\n";
        let expected = vec![ev("a", "1"), ev("", "2")];
        assert_eq!(decode_all(lf.as_bytes()), expected);
        assert_eq!(decode_all(lf.replace('\n', "\r\n").as_bytes()), expected);
        assert_eq!(decode_all(lf.replace('\n', "\r").as_bytes()), expected);
    }

    #[test]
    fn comments_are_skipped_and_multi_line_data_is_joined() {
        let body = ": keep-alive\n\ndata: {\"a\":\ndata:  1}\n: ping\n\n";
        assert_eq!(decode_all(body.as_bytes()), vec![ev("", "{\"a\":\n 1}")]);
    }

    #[test]
    fn an_event_cut_off_before_its_blank_line_is_discarded() {
        assert!(decode_all(b"data: {\"delta\": \"par").is_empty());
        assert!(decode_all(b"data: last\n").is_empty());
        let mut d = SseDecoder::new();
        assert_eq!(d.feed(b"data: 1\n\ndata: {\"par"), vec![ev("", "1")]);
        assert!(d.finish(), "the cut event is reported as discarded");
        let mut d = SseDecoder::new();
        assert_eq!(d.feed(b"data: 1\n\n: comment\n"), vec![ev("", "1")]);
        assert!(!d.finish(), "nothing pending, nothing discarded");
    }

    #[test]
    fn every_split_of_the_input_gives_the_same_events() {
        let body = "\u{feff}event: x\r\ndata: h\u{e9}llo \u{1f600}\r\n\r\ndata: [DONE]\r\r";
        let whole = decode_all(body.as_bytes());
        assert_eq!(whole.len(), 2);
        assert_eq!(whole[0].data, "h\u{e9}llo \u{1f600}");
        let bytes = body.as_bytes();
        for cut in 0..=bytes.len() {
            let mut d = SseDecoder::new();
            let mut got = d.feed(&bytes[..cut]);
            got.extend(d.feed(&bytes[cut..]));
            d.finish();
            assert_eq!(got, whole, "cut at {cut}");
        }
        let mut d = SseDecoder::new();
        let mut got = Vec::new();
        for b in bytes {
            got.extend(d.feed(std::slice::from_ref(b)));
        }
        d.finish();
        assert_eq!(got, whole, "byte by byte");
    }

    #[test]
    fn fields_without_colon_or_space_and_ids_follow_the_spec() {
        let body = "data\ndata:x\nid: 7\nretry: 10\nunknown: y\n\n";
        let got = decode_all(body.as_bytes());
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].data, "\nx");
        assert_eq!(got[0].id.as_deref(), Some("7"));
    }

    #[test]
    fn events_without_data_are_not_dispatched() {
        assert!(decode_all(b"event: ping\n\n\n\n").is_empty());
    }
}
