//! A prepared command run with the caller's standard output and error (a
//! terminal shows what it prints as it prints it), for `rein sandbox-run`:
//! the bash tool's process group, timeout and kill, nothing captured.

use std::process::Stdio;
use std::time::Duration;

use tokio::time::Instant;

use super::running::{GroupGuard, reap_local};
use super::{Ending, after_notes};
use crate::sandbox::Prepared;

/// How an attached command went.
#[derive(Debug)]
pub struct Attached {
    pub ending: Ending,
    /// The lines to show after it: the timeout's, then what
    /// [`crate::sandbox::After::finish`] found (limits hit, git metadata
    /// undone).
    pub notes: Vec<String>,
}

/// Why an attached command could not be run to its end.
#[derive(Debug, thiserror::Error)]
pub enum AttachedError {
    #[error("could not start bash: {0}")]
    Spawn(std::io::Error),
    #[error("lost track of the command: {0}")]
    Wait(std::io::Error),
}

/// Run `prepared` with this process's stdout and stderr until it exits or
/// `limit` passes; then kill what is left of its process group (nothing of
/// a command outlives it) and do the work left after it. Its stdin stays
/// the null device `prepare` gave it.
pub async fn run_attached(prepared: Prepared, limit: Duration) -> Result<Attached, AttachedError> {
    let Prepared { mut cmd, after } = prepared;
    // 1. Start it, its output going where ours goes.
    cmd.stdout(Stdio::inherit()).stderr(Stdio::inherit());
    let mut child = cmd.spawn().map_err(AttachedError::Spawn)?;
    drop(cmd);
    // 2. Its process group dies with this call, however the call ends.
    let mut guard = GroupGuard::new(child.id().and_then(|id| i32::try_from(id).ok()), None);
    // 3. Wait for it, or for the timeout.
    let deadline = Instant::now() + limit;
    let waited = tokio::select! {
        status = child.wait() => Some(status),
        _ = tokio::time::sleep_until(deadline) => None,
    };
    guard.kill();
    let ending = match waited {
        Some(Ok(status)) => Ending::Exited(Some(status)),
        Some(Err(e)) => {
            guard.disarm();
            after_notes(after, None, String::new()).await;
            return Err(AttachedError::Wait(e));
        }
        None => {
            reap_local(&mut child).await;
            Ending::TimedOut(limit)
        }
    };
    guard.disarm();
    // 4. The cgroup's leftovers, the git metadata check, the limits hit.
    let status = match ending {
        Ending::Exited(status) => status,
        _ => None,
    };
    let mut notes: Vec<String> = ending.note().into_iter().collect();
    notes.extend(after_notes(after, status, String::new()).await);
    Ok(Attached { ending, notes })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use std::collections::BTreeMap;
    use std::ffi::OsString;

    use rein_core::{SandboxMode, SandboxPolicy};

    use super::super::{QUIET_ENV, command_env};
    use crate::sandbox::{self, SandboxKind};

    /// The environment a prepared command gets, as the bash tool runs it.
    fn prepared_env(kind: SandboxKind, policy: &SandboxPolicy) -> BTreeMap<OsString, OsString> {
        let ws = tempfile::tempdir().unwrap();
        let limit = std::time::Duration::from_secs(1);
        let mut prepared = sandbox::prepare(kind, policy, ws.path(), "true", limit).unwrap();
        prepared.cmd.envs(QUIET_ENV);
        prepared
            .cmd
            .as_std()
            .get_envs()
            .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned())))
            .collect()
    }

    #[test]
    fn command_env_is_exactly_the_environment_the_bash_tool_gives_a_command() {
        let off = SandboxPolicy {
            mode: SandboxMode::Off,
            ..Default::default()
        };
        let cases = [
            (SandboxKind::Bubblewrap, SandboxPolicy::default()),
            (SandboxKind::None, SandboxPolicy::default()),
            (SandboxKind::Bubblewrap, off),
        ];
        for (kind, policy) in cases {
            let want: BTreeMap<OsString, OsString> =
                command_env(kind, &policy).into_iter().collect();
            assert_eq!(
                prepared_env(kind, &policy),
                want,
                "{kind:?} {:?}",
                policy.mode
            );
        }
    }
}
