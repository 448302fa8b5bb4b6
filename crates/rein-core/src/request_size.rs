//! How big a request is, in one accounting: the compaction threshold, the
//! `token_update` event, the app's status line and `/context` all take
//! their figure from [`request_size`], so they cannot disagree.
//!
//! The best figure available wins:
//! 1. the provider counts the request itself (the local model renders its
//!    chat template and tokenizes it): exact;
//! 2. the provider reported the size of an earlier request of this
//!    conversation ([`Measured`]): that figure plus what was added since,
//!    counted message by message;
//! 3. otherwise an estimate: the fixed part plus every message, counted.
//!
//! A measurement holds only while the request continues the one it
//! measured: the same system prompt and tools (another mode shows other
//! tools), and the history it measured followed by more. After a
//! compaction, a rewind or a mode switch the figure is the estimate until
//! the provider reports again.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;

use crate::schema::{Message, ToolSpec};
use crate::tokens::{TokenCounter, count_message, message_text};

/// Where a request's size came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeBasis {
    /// Counted by the provider, chat template included: exact.
    Counted,
    /// The provider's report of an earlier request, plus what was added.
    Measured,
    /// Estimated part by part (no report yet in this conversation).
    Estimated,
}

/// A request's size in tokens, and how it was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestSize {
    pub tokens: u64,
    pub basis: SizeBasis,
}

/// What the provider said of one request: `input` tokens for a request
/// whose fixed part is `fixed` ([`fixed_id`]) and whose history had
/// `messages` messages, the last of them fingerprinted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measured {
    input: u64,
    fixed: u64,
    messages: usize,
    last: u64,
}

impl Measured {
    /// A report of `input` tokens for the request made of the fixed part
    /// `fixed` ([`fixed_id`]) and `messages`.
    pub fn new(input: u64, fixed: u64, messages: &[Message]) -> Measured {
        Measured {
            input,
            fixed,
            messages: messages.len(),
            last: fingerprint(messages.last()),
        }
    }

    /// The tokens the provider reported.
    pub fn input(&self) -> u64 {
        self.input
    }

    /// The size of a request of the fixed part `fixed` and `messages`
    /// from this report, when it continues the measured request.
    fn extend(&self, fixed: u64, messages: &[Message], counter: &dyn TokenCounter) -> Option<u64> {
        if fixed != self.fixed
            || messages.len() < self.messages
            || fingerprint(self.messages.checked_sub(1).map(|i| &messages[i])) != self.last
        {
            return None;
        }
        let added: u64 = messages[self.messages..]
            .iter()
            .map(|m| count_message(counter, m))
            .sum();
        Some(self.input.saturating_add(added))
    }
}

/// The fixed part of requests (system prompt and tools) a run sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fixed {
    /// Its identity ([`fixed_id`]).
    pub id: u64,
    /// Its estimated tokens.
    pub tokens: u64,
}

/// The identity of a fixed part: a hash of the system prompt and the tool
/// definitions.
pub fn fixed_id(system: &str, tools: &[ToolSpec]) -> u64 {
    let mut h = DefaultHasher::new();
    system.hash(&mut h);
    for t in tools {
        t.name.hash(&mut h);
        t.description.hash(&mut h);
        t.parameters.to_string().hash(&mut h);
    }
    h.finish()
}

/// The size of a request made of the fixed part `fixed` and `messages`
/// (estimated at `history` tokens in all): from `measured` when it still
/// applies, else estimated. (A provider that counts requests itself is
/// asked before this.)
pub fn request_size(
    measured: Option<&Measured>,
    fixed: Fixed,
    messages: &[Message],
    history: u64,
    counter: &dyn TokenCounter,
) -> RequestSize {
    if let Some(tokens) = measured.and_then(|m| m.extend(fixed.id, messages, counter)) {
        return RequestSize {
            tokens,
            basis: SizeBasis::Measured,
        };
    }
    RequestSize {
        tokens: fixed.tokens.saturating_add(history),
        basis: SizeBasis::Estimated,
    }
}

/// A message's identity for [`Measured`]: its kind, length and the ends
/// of its text (cheap on a long tool output; a collision only keeps a
/// figure that is an estimate anyway).
fn fingerprint(message: Option<&Message>) -> u64 {
    let mut h = DefaultHasher::new();
    let Some(m) = message else {
        return h.finish();
    };
    std::mem::discriminant(m).hash(&mut h);
    let hash_ends = |text: &str, h: &mut DefaultHasher| {
        let bytes = text.as_bytes();
        bytes.len().hash(h);
        bytes[..bytes.len().min(256)].hash(h);
        bytes[bytes.len().saturating_sub(256)..].hash(h);
    };
    match m {
        Message::System { content } => hash_ends(content, &mut h),
        Message::User { content, images } => {
            hash_ends(content, &mut h);
            images.len().hash(&mut h);
        }
        Message::Tool(r) => {
            r.call_id.hash(&mut h);
            hash_ends(&r.output, &mut h);
        }
        Message::Assistant(_) => hash_ends(&message_text(m), &mut h),
    }
    h.finish()
}

/// The latest report of each session's requests, kept by the engine so
/// that `/context` between runs uses the figure the last run measured.
#[derive(Default)]
pub(crate) struct Reports {
    by_session: Mutex<HashMap<String, Measured>>,
}

/// Sessions whose reports are kept; past it the oldest are forgotten
/// (a report only sharpens an estimate).
const KEPT: usize = 1024;

impl Reports {
    pub fn get(&self, session: &str) -> Option<Measured> {
        let map = self.by_session.lock().unwrap_or_else(|p| p.into_inner());
        map.get(session).copied()
    }

    pub fn put(&self, session: &str, measured: Measured) {
        let mut map = self.by_session.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(kept) = map.get_mut(session) {
            *kept = measured;
            return;
        }
        if map.len() >= KEPT {
            map.clear();
        }
        map.insert(session.to_string(), measured);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{AssistantMessage, ContentPart};

    struct Bytes;
    impl TokenCounter for Bytes {
        fn count(&self, text: &str) -> u64 {
            text.len() as u64
        }
        fn exact(&self) -> bool {
            true
        }
    }

    fn fixed(id: u64, tokens: u64) -> Fixed {
        Fixed { id, tokens }
    }

    fn user(text: &str) -> Message {
        Message::user(text)
    }

    fn reply(text: &str) -> Message {
        Message::Assistant(AssistantMessage {
            content: vec![ContentPart::Text { text: text.into() }],
            ..Default::default()
        })
    }

    #[test]
    fn a_report_plus_what_was_added_since_is_the_next_requests_size() {
        let sent = vec![user("hello")];
        let m = Measured::new(784, 1, &sent);
        let mut next = sent.clone();
        next.push(reply("0123456789"));
        let size = request_size(Some(&m), fixed(1, 100), &next, 0, &Bytes);
        let added = count_message(&Bytes, &next[1]);
        assert_eq!(size.tokens, 784 + added);
        assert_eq!(size.basis, SizeBasis::Measured);
        // Another system prompt or tool set (another mode): the estimate.
        let size = request_size(Some(&m), fixed(2, 100), &next, 30, &Bytes);
        assert_eq!(
            size,
            RequestSize {
                tokens: 130,
                basis: SizeBasis::Estimated
            }
        );
    }

    #[test]
    fn a_rewritten_history_falls_back_to_the_estimate() {
        let sent = vec![user("hello"), reply("one"), user("again")];
        let m = Measured::new(5000, 1, &sent);
        // Compacted: a summary in place of the history, then more.
        let compacted = vec![
            user("summary of it all"),
            reply("two"),
            user("and on"),
            reply("x"),
        ];
        let size = request_size(Some(&m), fixed(1, 100), &compacted, 77, &Bytes);
        assert_eq!(size.basis, SizeBasis::Estimated);
        assert_eq!(size.tokens, 100 + 77);
        // Rewound to fewer messages than were measured.
        let size = request_size(Some(&m), fixed(1, 100), &sent[..1], 77, &Bytes);
        assert_eq!(size.basis, SizeBasis::Estimated);
    }

    #[test]
    fn no_report_is_an_estimate_and_absurd_reports_saturate() {
        let msgs = vec![user("hi")];
        let size = request_size(None, fixed(1, 10), &msgs, 6, &Bytes);
        assert_eq!(size.basis, SizeBasis::Estimated);
        assert_eq!(size.tokens, 16);
        let m = Measured::new(u64::MAX, 1, &msgs);
        let mut more = msgs.clone();
        more.push(reply("y"));
        assert_eq!(
            request_size(Some(&m), fixed(1, 5), &more, 0, &Bytes).tokens,
            u64::MAX
        );
    }

    #[test]
    fn reports_are_kept_per_session_and_bounded() {
        let r = Reports::default();
        let m = Measured::new(1, 0, &[]);
        for i in 0..KEPT + 5 {
            r.put(&format!("s{i}"), m);
        }
        assert!(r.get(&format!("s{}", KEPT + 4)).is_some());
        assert!(r.by_session.lock().unwrap().len() <= KEPT);
    }
}
