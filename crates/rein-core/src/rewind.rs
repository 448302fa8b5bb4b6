//! Checkpoints of the workspace, for rewind: the engine says when to take
//! them (before each prompt of the user, and when a run whose calls may
//! have changed files ends, so edits made through the shell are covered)
//! and what the run wrote; how they are kept and restored is the front
//! end's business (rein keeps them in a private git repository, see
//! `rein rewind`).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::gate::CallEffects;
use crate::tool::ToolAccess;

/// Takes the workspace's checkpoints for a session.
#[async_trait::async_trait]
pub trait Checkpointer: Send + Sync {
    /// Snapshot the workspace before `prompt` is stored after message
    /// `seq` (the number of messages the session had) of `session_id`.
    async fn before_prompt(
        &self,
        session_id: &str,
        seq: u64,
        prompt: &str,
    ) -> Result<(), CheckpointFailure>;

    /// Note the workspace as rein left it at the end of a run whose calls
    /// may have changed files (what rewind compares with to find changes
    /// made outside rein). `writes` says what the run wrote since the
    /// checkpoint before it: a file changed meanwhile that the run did not
    /// write was changed outside rein, and rewind must ask before it
    /// overwrites it.
    async fn after_changes(
        &self,
        session_id: &str,
        writes: RunWrites,
    ) -> Result<(), CheckpointFailure>;
}

/// Why a checkpoint could not be taken (the run goes on; the user is
/// told).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct CheckpointFailure(pub String);

/// File times can trail the clock: by a tick of the kernel's coarse
/// clock, or by the second or two a file system rounds them to. A window
/// in which commands ran starts this much earlier for them.
pub const FILE_TIME_SLACK: Duration = Duration::from_secs(2);

/// What a run wrote since its last checkpoint: the files its calls wrote
/// and when its commands ran (a command may write anything, so what
/// changed while one ran counts as written by it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunWrites {
    /// Files the calls wrote (absolute), as the gate found them.
    pub paths: Vec<PathBuf>,
    /// For each round of calls with a command (or another call that runs
    /// programs): from when the first of them could start to when the
    /// round ended.
    pub exec_windows: Vec<ExecWindow>,
}

/// A stretch of wall-clock time in which a run's commands ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecWindow {
    pub start: SystemTime,
    pub end: SystemTime,
}

impl ExecWindow {
    /// Whether a file last changed at `at` may have been changed by a
    /// command of this window.
    pub fn covers(&self, at: SystemTime) -> bool {
        let start = self
            .start
            .checked_sub(FILE_TIME_SLACK)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        start <= at && at <= self.end
    }
}

impl RunWrites {
    /// What a round of finished calls that started at `started` and
    /// ended now wrote; None when none of them may have changed files
    /// (none writes files or runs programs). Time spent waiting for the
    /// user's approval is not part of the window: a command starts after
    /// its approval.
    pub fn of_round<'a>(
        effects: impl IntoIterator<Item = &'a CallEffects>,
        started: SystemTime,
    ) -> Option<RunWrites> {
        let mut round = RunWrites::default();
        let mut changed = false;
        let mut first_exec: Option<Duration> = None;
        for e in effects {
            match e.access {
                Some(ToolAccess::Write) => changed = true,
                Some(ToolAccess::Execute) => {
                    changed = true;
                    first_exec = Some(first_exec.map_or(e.waited, |w| w.min(e.waited)));
                }
                Some(ToolAccess::Read) | None => {}
            }
            round.paths.extend(e.writes.iter().cloned());
        }
        if let Some(waited) = first_exec {
            round.exec_windows.push(ExecWindow {
                start: started + waited,
                end: SystemTime::now(),
            });
        }
        changed.then_some(round)
    }

    /// Add what a later round wrote.
    pub fn add(&mut self, later: RunWrites) {
        self.paths.extend(later.paths);
        self.exec_windows.extend(later.exec_windows);
    }

    /// Whether the run may have written `path` (absolute, spelled as in
    /// [`RunWrites::paths`]), a file last changed at `changed_at`: a call
    /// wrote it, or it changed while commands ran. A file the run changed
    /// that this says no to was changed by someone else meanwhile.
    pub fn may_have_written(&self, path: &Path, changed_at: Option<SystemTime>) -> bool {
        self.paths.iter().any(|p| p == path)
            || changed_at.is_some_and(|at| self.exec_windows.iter().any(|w| w.covers(at)))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + secs)
    }

    fn effects(access: ToolAccess, writes: &[&str], waited: u64) -> CallEffects {
        CallEffects {
            access: Some(access),
            writes: writes.iter().map(PathBuf::from).collect(),
            waited: Duration::from_secs(waited),
            ..CallEffects::default()
        }
    }

    fn run(windows: &[(u64, u64)]) -> RunWrites {
        RunWrites {
            paths: vec![PathBuf::from("/ws/written.rs")],
            exec_windows: windows
                .iter()
                .map(|&(s, e)| ExecWindow {
                    start: at(s),
                    end: at(e),
                })
                .collect(),
        }
    }

    #[test]
    fn a_file_a_call_wrote_is_the_runs_whenever_it_changed() {
        let writes = run(&[]);
        assert!(writes.may_have_written(Path::new("/ws/written.rs"), Some(at(500))));
        assert!(writes.may_have_written(Path::new("/ws/written.rs"), None));
    }

    #[test]
    fn a_file_no_call_wrote_is_the_runs_only_if_it_changed_while_commands_ran() {
        let writes = run(&[(100, 110), (200, 230)]);
        let other = Path::new("/ws/user.txt");
        assert!(writes.may_have_written(other, Some(at(105))));
        assert!(writes.may_have_written(other, Some(at(230))));
        // File times may trail the clock a little.
        assert!(writes.may_have_written(other, Some(at(199))));
        // Between rounds, while the model thought, or after: not the run's.
        assert!(!writes.may_have_written(other, Some(at(150))));
        assert!(!writes.may_have_written(other, Some(at(231))));
        assert!(!writes.may_have_written(other, Some(at(50))));
        assert!(!writes.may_have_written(other, None));
        // Without commands, only what the calls wrote is the run's.
        assert!(!run(&[]).may_have_written(other, Some(at(105))));
    }

    #[test]
    fn a_round_notes_what_its_calls_wrote_and_a_window_only_when_a_command_ran() {
        let started = SystemTime::now();
        let read = CallEffects {
            access: Some(ToolAccess::Read),
            ..CallEffects::default()
        };
        // Reads and calls that reached no tool change nothing.
        assert_eq!(
            RunWrites::of_round([&read, &CallEffects::default()], started),
            None
        );
        let edit = effects(ToolAccess::Write, &["/ws/a.rs"], 0);
        let mut writes = RunWrites::of_round([&edit], started).unwrap();
        assert_eq!(writes.paths, [PathBuf::from("/ws/a.rs")]);
        assert!(writes.exec_windows.is_empty());
        // Two commands, one approved after 30 s, one at once: the window
        // starts when the first could run.
        let slow = effects(ToolAccess::Execute, &[], 30);
        let quick = effects(ToolAccess::Execute, &["/ws/out.txt"], 0);
        writes.add(RunWrites::of_round([&slow, &quick, &read], started).unwrap());
        assert_eq!(writes.exec_windows.len(), 1);
        let window = writes.exec_windows[0];
        assert_eq!(window.start, started);
        assert!(window.end >= started);
        assert_eq!(writes.paths.len(), 2);
        // A lone command that waited for its approval starts after it.
        let lone = RunWrites::of_round([&slow], started).unwrap();
        assert_eq!(
            lone.exec_windows[0].start,
            started + Duration::from_secs(30)
        );
        // A write tool that names no file still counts as a change.
        let unnamed = effects(ToolAccess::Write, &[], 0);
        assert_eq!(
            RunWrites::of_round([&unnamed], started),
            Some(RunWrites::default())
        );
    }
}
