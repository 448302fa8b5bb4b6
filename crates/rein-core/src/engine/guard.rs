//! The loop guard: the same calls over and over, the same paragraph of
//! text written again turn after turn, or turns that change nothing and
//! learn nothing, first get a reminder, then stop the run.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};

use crate::schema::{ToolCall, ToolResult};

/// Loop guard settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopGuardConfig {
    /// The same calls (names and arguments) this many turns in a row get a
    /// reminder; one more stops the run (default 3; 0 turns the check off).
    pub repeat_limit: u32,
    /// Tool turns in a row with no write and no new output that get a
    /// reminder; two more stop the run (default 10; None turns it off).
    pub no_progress_turns: Option<u32>,
}

impl Default for LoopGuardConfig {
    fn default() -> Self {
        LoopGuardConfig {
            repeat_limit: 3,
            no_progress_turns: Some(10),
        }
    }
}

/// What the guard says about a turn's calls before they run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Run,
    /// Run them, with this reminder added to each observation.
    Remind(String),
    /// Do not run them: the run stops for repetition.
    Stop(String),
}

#[derive(Debug, Default)]
pub struct LoopGuard {
    config: LoopGuardConfig,
    last: Option<Vec<String>>,
    repeats: u32,
    seen: HashSet<u64>,
    idle: u32,
    /// Paragraphs of the run's earlier answers (hashes).
    said: HashSet<u64>,
    /// Turns in a row whose text repeated an earlier paragraph.
    retold: u32,
}

/// Shortest paragraph compared by [`LoopGuard::text`]: short lines ("Done.",
/// "Let me check.") repeat legitimately.
const PARAGRAPH: usize = 80;

/// A call as the guard compares it: arguments as a JSON value (parsed
/// once by the engine), so spacing and key order do not make two identical
/// calls look different; the raw text when they did not parse.
fn signature(call: &ToolCall, args: Option<&serde_json::Value>) -> String {
    let args = match args {
        Some(v) => v.to_string(),
        None => call.arguments.trim().to_string(),
    };
    format!("{}\u{0}{args}", call.name)
}

fn hash(text: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

impl LoopGuard {
    pub fn new(config: LoopGuardConfig) -> Self {
        LoopGuard {
            config,
            ..Default::default()
        }
    }

    /// Check a turn's calls (with their parsed arguments, None where they
    /// did not parse) and the text that came with them, before they run:
    /// the stronger of the two verdicts.
    pub fn before(
        &mut self,
        calls: &[ToolCall],
        args: &[Option<serde_json::Value>],
        text: &str,
    ) -> Verdict {
        let said = self.text(text);
        let done = self.calls(calls, args);
        match (said, done) {
            (stop @ Verdict::Stop(_), _) | (_, stop @ Verdict::Stop(_)) => stop,
            (remind @ Verdict::Remind(_), _) | (_, remind @ Verdict::Remind(_)) => remind,
            _ => Verdict::Run,
        }
    }

    /// The calls' part of [`LoopGuard::before`].
    fn calls(&mut self, calls: &[ToolCall], args: &[Option<serde_json::Value>]) -> Verdict {
        let mut sigs: Vec<String> = calls
            .iter()
            .enumerate()
            .map(|(i, c)| signature(c, args.get(i).and_then(Option::as_ref)))
            .collect();
        sigs.sort();
        if self.last.as_ref() == Some(&sigs) {
            self.repeats += 1;
        } else {
            self.repeats = 1;
            self.last = Some(sigs);
        }
        let limit = self.config.repeat_limit;
        if limit > 0 && self.repeats > limit {
            return Verdict::Stop(format!(
                "the same tool call was made {} times in a row, after a reminder",
                self.repeats
            ));
        }
        if limit > 0 && self.repeats == limit {
            return Verdict::Remind(format!(
                "[rein: you have made this exact call {limit} times in a row. Repeating it will \
                 not give a different result; change your approach, or answer if you are done. \
                 The next identical call stops the run.]"
            ));
        }
        if let Some(n) = self.config.no_progress_turns
            && self.idle >= n
        {
            if self.idle >= n + 2 {
                return Verdict::Stop(format!(
                    "{} tool turns in a row changed nothing and found nothing new",
                    self.idle
                ));
            }
            return Verdict::Remind(format!(
                "[rein: the last {} tool turns changed no file and returned nothing new. Step \
                 back: state what is blocking you and try a different approach, or answer. The \
                 run stops if this goes on.]",
                self.idle
            ));
        }
        Verdict::Run
    }

    /// Check the text that came with a turn's calls: a turn that writes a
    /// paragraph (at least [`PARAGRAPH`] bytes) of an earlier turn again
    /// counts toward the same limit as repeated calls (measured: the 0.5B
    /// model wrote one paragraph over several turns, 2,111 tokens).
    fn text(&mut self, text: &str) -> Verdict {
        let mut repeated = false;
        for paragraph in text
            .split("\n\n")
            .map(str::trim)
            .filter(|p| p.len() >= PARAGRAPH)
        {
            if !self.said.insert(hash(paragraph)) {
                repeated = true;
            }
        }
        self.retold = if repeated { self.retold + 1 } else { 0 };
        let limit = self.config.repeat_limit;
        if limit > 0 && self.retold > limit {
            return Verdict::Stop(format!(
                "the same text was written {} turns in a row, after a reminder",
                self.retold + 1
            ));
        }
        if limit > 0 && self.retold == limit {
            return Verdict::Remind(
                "[rein: you have written the same text several turns in a row. Do not repeat \
                 it: take the next step, or answer. Writing it again stops the run.]"
                    .to_string(),
            );
        }
        Verdict::Run
    }

    /// Record a turn's results: `wrote` says whether a call that changes
    /// files succeeded.
    pub fn after<'a>(&mut self, results: impl IntoIterator<Item = &'a ToolResult>, wrote: bool) {
        let mut new_info = false;
        for r in results {
            if self.seen.insert(hash(&r.output)) {
                new_info = true;
            }
        }
        if wrote || new_info {
            self.idle = 0;
        } else {
            self.idle += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(args: &str) -> ToolCall {
        ToolCall {
            id: "x".into(),
            name: "bash".into(),
            arguments: args.into(),
        }
    }

    /// The guard's check, with the arguments parsed as the engine does.
    fn before(g: &mut LoopGuard, calls: &[ToolCall]) -> Verdict {
        let args: Vec<_> = calls
            .iter()
            .map(|c| serde_json::from_str(&c.arguments).ok())
            .collect();
        g.before(calls, &args, "")
    }

    fn out(text: &str) -> ToolResult {
        ToolResult {
            images: Vec::new(),
            call_id: "x".into(),
            name: "bash".into(),
            output: text.into(),
            is_error: false,
        }
    }

    #[test]
    fn a_paragraph_written_again_turn_after_turn_is_reminded_then_stopped() {
        let mut g = LoopGuard::new(LoopGuardConfig::default());
        let para = "I will now look at the file to understand the structure of the project and then decide.";
        assert_eq!(g.text(para), Verdict::Run);
        assert_eq!(
            g.text("Short. Repeated lines like this are fine."),
            Verdict::Run
        );
        assert_eq!(g.text(para), Verdict::Run);
        assert_eq!(g.text(para), Verdict::Run);
        assert!(matches!(g.text(para), Verdict::Remind(_)));
        assert!(matches!(g.text(para), Verdict::Stop(_)));
        // Something new resets the count.
        let mut g = LoopGuard::new(LoopGuardConfig::default());
        g.text(para);
        g.text(para);
        assert_eq!(
            g.text("A different paragraph that is long enough to be compared by the guard here."),
            Verdict::Run
        );
        assert_eq!(g.text(para), Verdict::Run);
    }

    #[test]
    fn the_third_identical_call_gets_a_reminder_and_the_fourth_stops() {
        let mut g = LoopGuard::new(LoopGuardConfig::default());
        assert_eq!(
            before(&mut g, &[call(r#"{"command": "ls"}"#)]),
            Verdict::Run
        );
        // Spacing and key order do not hide a repeat.
        assert_eq!(before(&mut g, &[call(r#"{"command":"ls"}"#)]), Verdict::Run);
        assert!(matches!(
            before(&mut g, &[call(r#"{ "command" : "ls" }"#)]),
            Verdict::Remind(_)
        ));
        assert!(matches!(
            before(&mut g, &[call(r#"{"command": "ls"}"#)]),
            Verdict::Stop(_)
        ));
    }

    #[test]
    fn a_different_call_resets_the_count() {
        let mut g = LoopGuard::new(LoopGuardConfig::default());
        for _ in 0..2 {
            assert_eq!(
                before(&mut g, &[call(r#"{"command": "ls"}"#)]),
                Verdict::Run
            );
        }
        assert_eq!(
            before(&mut g, &[call(r#"{"command": "pwd"}"#)]),
            Verdict::Run
        );
        assert_eq!(
            before(&mut g, &[call(r#"{"command": "ls"}"#)]),
            Verdict::Run
        );
    }

    #[test]
    fn turns_without_writes_or_new_output_are_flagged_then_stopped() {
        let mut g = LoopGuard::new(LoopGuardConfig {
            repeat_limit: 0,
            no_progress_turns: Some(2),
        });
        before(&mut g, &[call("1")]);
        g.after(&[out("same")], false); // new output: progress
        before(&mut g, &[call("2")]);
        g.after(&[out("same")], false);
        before(&mut g, &[call("3")]);
        g.after(&[out("same")], false);
        assert!(matches!(before(&mut g, &[call("4")]), Verdict::Remind(_)));
        g.after(&[out("same")], false);
        before(&mut g, &[call("5")]);
        g.after(&[out("same")], false);
        assert!(matches!(before(&mut g, &[call("6")]), Verdict::Stop(_)));
        // A write is progress.
        g.after(&[out("same")], true);
        assert_eq!(before(&mut g, &[call("7")]), Verdict::Run);
    }
}
