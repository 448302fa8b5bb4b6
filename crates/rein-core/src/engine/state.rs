//! What one run keeps as it goes: the conversation with its token counts,
//! and the facts the task ledger and the loop guard need.

use std::collections::HashSet;
use std::path::Path;

use crate::compaction::TaskLedger;
use crate::engine::guard::LoopGuard;
use crate::engine::run::Finished;
use crate::schema::{AssistantMessage, ContentPart, Message};
use crate::text::truncate_middle;
use crate::tokens::{TokenCounter, count_message, message_text};
use crate::tool::ToolAccess;

/// Sequence numbers for repaired messages: kept messages keep theirs,
/// results made up by the repair have the one they were just stored with
/// (`stored`, by index) or none.
pub(crate) fn realign_seqs(
    repaired: &crate::history::Repaired,
    seqs: Vec<Option<u64>>,
    stored: &std::collections::HashMap<usize, u64>,
) -> Vec<Option<u64>> {
    if repaired.added.is_empty() {
        return seqs;
    }
    let added: std::collections::HashSet<usize> = repaired.added.iter().map(|(i, _)| *i).collect();
    let mut kept = seqs.into_iter();
    (0..repaired.messages.len())
        .map(|i| {
            if added.contains(&i) {
                stored.get(&i).copied()
            } else {
                kept.next().flatten()
            }
        })
        .collect()
}

/// An id like `id` (or `call` when it is empty) that is not `taken`, of
/// the characters every provider accepts in an id.
fn fresh_id(id: &str, taken: impl Fn(&str) -> bool) -> String {
    let base: String = id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
        .take(48)
        .collect();
    let base = if base.is_empty() {
        "call".to_string()
    } else {
        base
    };
    (2u64..)
        .map(|n| format!("{base}_{n}"))
        .find(|candidate| !taken(candidate))
        .unwrap_or(base)
}

/// A session as it was opened.
pub(crate) struct Opened {
    pub id: String,
    pub messages: Vec<Message>,
    /// Store sequence number of each message (None: not stored as is).
    pub seqs: Vec<Option<u64>>,
    pub resumed: bool,
    /// The user's requests stored before this run.
    pub earlier_requests: Vec<String>,
}

/// The messages the model sees, each counted once when it arrives, so
/// a turn costs work proportional to what is new.
pub(crate) struct Conversation {
    pub messages: Vec<Message>,
    pub seqs: Vec<Option<u64>>,
    counts: Vec<u64>,
    total: u64,
    chars: u64,
    /// The ids of every call in the messages, kept as they arrive, so
    /// making a new answer's ids unique costs what the answer holds.
    call_ids: HashSet<String>,
}

impl Conversation {
    /// The store's number of the last stored message (0: none yet).
    pub fn last_seq(&self) -> u64 {
        self.seqs.iter().flatten().max().copied().unwrap_or(0)
    }

    pub fn new(messages: Vec<Message>, seqs: Vec<Option<u64>>, counter: &dyn TokenCounter) -> Self {
        let mut c = Conversation {
            messages: Vec::with_capacity(messages.len()),
            seqs: Vec::with_capacity(messages.len()),
            counts: Vec::new(),
            total: 0,
            chars: 0,
            call_ids: HashSet::new(),
        };
        let mut seqs = seqs.into_iter();
        for m in messages {
            c.push(m, seqs.next().flatten(), counter);
        }
        c
    }

    pub fn push(&mut self, m: Message, seq: Option<u64>, counter: &dyn TokenCounter) {
        let n = count_message(counter, &m);
        self.total = self.total.saturating_add(n);
        self.chars = self.chars.saturating_add(message_text(&m).len() as u64);
        self.counts.push(n);
        if let Message::Assistant(a) = &m {
            self.call_ids.extend(a.tool_calls().map(|c| c.id.clone()));
        }
        self.messages.push(m);
        self.seqs.push(seq);
    }

    /// `answer` with every call id unique in the conversation: an id that
    /// is empty, or that an earlier call (in the conversation or in this
    /// answer) already has, is replaced by a fresh one (`call_1` a small
    /// model repeats each turn becomes `call_1_2`). Committed so, the
    /// history, a resume, the hooks and the telemetry all pair each
    /// result with its call.
    pub fn unique_call_ids(&self, answer: &mut AssistantMessage) {
        // This answer's own ids so far, besides the conversation's.
        let mut own: HashSet<String> = HashSet::new();
        for part in &mut answer.content {
            let ContentPart::ToolCall(call) = part else {
                continue;
            };
            let taken = |id: &str| self.call_ids.contains(id) || own.contains(id);
            if call.id.is_empty() || taken(&call.id) {
                call.id = fresh_id(&call.id, taken);
            }
            own.insert(call.id.clone());
        }
    }

    /// Replace everything (after a compaction), recounting.
    pub fn replace(
        &mut self,
        messages: Vec<Message>,
        seqs: Vec<Option<u64>>,
        counter: &dyn TokenCounter,
    ) {
        *self = Conversation::new(messages, seqs, counter);
    }

    /// Estimated tokens of the messages.
    pub fn tokens(&self) -> u64 {
        self.total
    }

    /// Characters of the messages' text (for calibrating estimates).
    pub fn chars(&self) -> u64 {
        self.chars
    }
}

/// Facts kept for the task ledger and the loop guard.
pub(crate) struct Tracker {
    pub ledger: TaskLedger,
    pub guard: LoopGuard,
}

impl Tracker {
    /// Note what a turn's calls did, from what the gate says they touched;
    /// true when a call that changes files succeeded.
    pub fn observe(&mut self, finished: &[Finished], turn: u32, workspace: &Path) -> bool {
        let mut wrote = false;
        for Finished {
            result, effects, ..
        } in finished
        {
            if result.is_error {
                continue;
            }
            if effects.access == Some(ToolAccess::Write) {
                wrote = true;
                let first = result.output.lines().next().unwrap_or("").trim();
                for path in &effects.writes {
                    let shown = path.strip_prefix(workspace).unwrap_or(path);
                    self.ledger.files.insert(
                        shown.display().to_string(),
                        format!(
                            "{} at turn {turn}: {}",
                            result.name,
                            truncate_middle(first, 160)
                        ),
                    );
                }
            }
            if let Some(cmd) = &effects.test_command {
                self.ledger.last_test = Some(format!(
                    "`{}` (turn {turn}):\n{}",
                    truncate_middle(cmd, 200),
                    tail(&result.output, 800)
                ));
            }
        }
        wrote
    }
}

/// The last `max` bytes of `text`, on a character boundary.
fn tail(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    &text[crate::text::ceil_boundary(text, text.len() - max)..]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::guard::LoopGuardConfig;
    use crate::gate::CallEffects;
    use crate::schema::ToolResult;
    use crate::tool::ToolAccess;
    use std::path::PathBuf;

    fn finished(name: &str, output: &str, is_error: bool, effects: CallEffects) -> Finished {
        Finished {
            result: ToolResult {
                images: Vec::new(),
                call_id: name.into(),
                name: name.into(),
                output: output.into(),
                is_error,
            },
            seq: None,
            effects,
        }
    }

    #[test]
    fn the_ledger_keeps_files_written_and_the_last_test_from_call_effects_not_failed_calls() {
        let mut t = Tracker {
            ledger: TaskLedger::default(),
            guard: LoopGuard::new(LoopGuardConfig::default()),
        };
        let ws = Path::new("/ws");
        let write = |path: &str| CallEffects {
            halt: None,
            access: Some(ToolAccess::Write),
            writes: vec![PathBuf::from(path)],
            test_command: None,
            ..Default::default()
        };
        let test_run = CallEffects {
            halt: None,
            access: Some(ToolAccess::Execute),
            writes: Vec::new(),
            test_command: Some("cargo test".into()),
            ..Default::default()
        };
        let wrote = t.observe(
            &[
                finished("write_file", "wrote 3 lines", false, write("/ws/src/a.rs")),
                finished("write_file", "error: denied", true, write("/ws/b.rs")),
                finished("bash", "test result: ok", false, test_run),
            ],
            4,
            ws,
        );
        assert!(wrote);
        let files: Vec<&String> = t.ledger.files.keys().collect();
        assert_eq!(files, ["src/a.rs"]);
        assert_eq!(
            t.ledger.files["src/a.rs"],
            "write_file at turn 4: wrote 3 lines"
        );
        assert_eq!(
            t.ledger.last_test.as_deref(),
            Some("`cargo test` (turn 4):\ntest result: ok")
        );
        // A turn of reads changes nothing and writes nothing.
        let read = CallEffects {
            halt: None,
            access: Some(ToolAccess::Read),
            ..CallEffects::default()
        };
        assert!(!t.observe(&[finished("grep", "x", false, read)], 5, ws));
    }
}
