//! Limits of each command, for real: fork bombs end (the process cap stops
//! the forking, the timeout and the PID namespace or cgroup end the rest),
//! a write past the file size limit fails with a clear line, the private
//! `/tmp` fills only to its cap, and no more commands run at once than the
//! cap allows (counted with marker files, not timed). Limits are kept
//! small here so the tests stay cheap and the machine stays up.

use std::path::PathBuf;
use std::sync::Arc;

use rein_core::{
    CancellationToken, CommandLimits, InMemorySessionStore, NewSession, SandboxMode, SandboxPolicy,
    SessionStore, Tool, ToolContext,
};
use rein_tools::Bash;
use rein_tools::sandbox::{self, SandboxKind};
use serde_json::json;
use tempfile::TempDir;

use super::harness::{exit_code, sandbox_kind};
use super::have;

const MIB: u64 = 1024 * 1024;

/// A workspace under the target folder and the context to run bash in.
pub(super) struct Lim {
    _dir: TempDir,
    pub(super) ws: PathBuf,
    store: Arc<InMemorySessionStore>,
    session: String,
}

impl Lim {
    pub(super) async fn new() -> Lim {
        let dir = tempfile::Builder::new()
            .prefix("limits-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap();
        let ws = std::fs::canonicalize(dir.path()).unwrap();
        let store = Arc::new(InMemorySessionStore::new());
        let session = store
            .create_session(NewSession::default())
            .await
            .unwrap()
            .id;
        Lim {
            _dir: dir,
            ws,
            store,
            session,
        }
    }

    fn ctx(&self, limits: CommandLimits, cancel: CancellationToken) -> ToolContext {
        ToolContext {
            workspace: self.ws.clone(),
            session_id: self.session.clone(),
            call_id: "limits".into(),
            cancel,
            session: rein_core::SessionHandle::new(self.store.clone(), self.session.clone()),
            sandbox: SandboxPolicy {
                mode: SandboxMode::WorkspaceWrite,
                limits,
                ..Default::default()
            },
            read_roots: Vec::new(),
            events: None,
        }
    }

    /// Run `command` with `limits` and `timeout_secs`; the observation.
    pub(super) async fn run(
        &self,
        limits: CommandLimits,
        command: &str,
        timeout_secs: u64,
    ) -> String {
        let _machine = crate::common::machine_shared().await;
        self.run_holding_the_machine(limits, command, timeout_secs)
            .await
    }

    /// [`Lim::run`] for a caller that holds a share of the machine or all
    /// of it.
    async fn run_holding_the_machine(
        &self,
        limits: CommandLimits,
        command: &str,
        timeout_secs: u64,
    ) -> String {
        let tool = Bash::with_sandbox(sandbox::available());
        let out = tool
            .call(
                json!({ "command": command, "timeout_secs": timeout_secs }),
                self.ctx(limits, CancellationToken::new()),
            )
            .await
            .unwrap();
        eprintln!("`{command}` ->\n{}", folded(&out.content));
        out.content
    }
}

fn small(processes: u64) -> CommandLimits {
    CommandLimits {
        processes,
        ..CommandLimits::default()
    }
}

/// Live processes whose command line contains `needle` and that started
/// at or after `since` (clock ticks after boot, as `/proc/PID/stat` counts
/// them), each as its `/proc/PID/stat` line. Zombies, already dead and
/// waiting to be reaped, are not counted; neither is a process that was
/// running before the test began (another program on a CI machine may
/// have a bomb's words in its command line).
fn processes(needle: &str, since: u64) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| {
            std::fs::read(e.path().join("cmdline")).is_ok_and(|c| {
                String::from_utf8_lossy(&c)
                    .replace('\0', " ")
                    .contains(needle)
            })
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            // The fields after the command name in parentheses: the state
            // is field 3 and the start time field 22.
            let Some((_, rest)) = stat.rsplit_once(") ") else {
                return false;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let live = !matches!(fields.first(), Some(&("Z" | "X")));
            let started = fields.get(19).and_then(|t| t.parse::<u64>().ok());
            live && started.is_none_or(|t| t >= since)
        })
        .collect()
}

/// Clock ticks since boot now, in the unit of `/proc/PID/stat`'s start
/// time: read as the start time of a child started this instant.
fn ticks_now() -> u64 {
    let out = std::process::Command::new("cat")
        .arg("/proc/self/stat")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    out.rsplit_once(") ")
        .and_then(|(_, rest)| rest.split_whitespace().nth(19)?.parse().ok())
        .unwrap_or(0)
}

/// Live processes matching `needle` once the machine has had up to ten
/// seconds to tear down what was killed (a SIGKILLed process on a loaded
/// machine takes a moment to disappear; one still running after that is
/// left behind).
fn left_behind(needle: &str, since: u64) -> Vec<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let left = processes(needle, since);
        if left.is_empty() || std::time::Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// `out` with each run of identical lines folded into one line and a
/// count, so a bomb's thousands of `fork: retry` lines do not push the
/// failure message out of a CI log.
fn folded(out: &str) -> String {
    let mut lines: Vec<(String, usize)> = Vec::new();
    for line in out.lines() {
        match lines.last_mut() {
            Some((last, n)) if last == line => *n += 1,
            _ => lines.push((line.to_string(), 1)),
        }
    }
    lines
        .into_iter()
        .map(|(l, n)| if n > 1 { format!("{l}  (x{n})") } else { l })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What stops a fork bomb here: a cgroup per command; without one (and as
/// root, exempt from `RLIMIT_NPROC`) nothing but the timeout would, so the
/// bombs are not set off.
fn bombs_are_safe_here() -> bool {
    let cgroup = rein_test_support::cgroup_usable();
    assert_eq!(
        sandbox::cgroup_available(),
        cgroup,
        "rein's probe disagrees"
    );
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    eprintln!("cgroup per command: {cgroup}; root: {root}");
    if !cgroup && root {
        rein_test_support::skip(
            rein_test_support::Component::Cgroup,
            "no cgroup can be made and root ignores RLIMIT_NPROC",
        );
        return false;
    }
    true
}

#[tokio::test]
async fn fork_bombs_end_within_the_timeout_and_leave_nothing_behind() {
    if sandbox_kind().is_none() || !bombs_are_safe_here() {
        return;
    }
    let lim = Lim::new().await;
    // Only processes started from here on can be the bombs'.
    let since = ticks_now();
    // No other test's command runs while a bomb floods the machine.
    let _machine = crate::common::machine_alone().await;
    let mut bombs = vec![(
        "bash",
        // The top shell stays until the timeout: with a bare `wait` it could
        // end (exit 0) before a loaded machine let the bomb reach the limit.
        "bomb_rein_bash() { bomb_rein_bash | bomb_rein_bash & }; bomb_rein_bash; sleep 30"
            .to_string(),
    )];
    if have("python3", &["-c", "pass"]) {
        bombs.push((
            "python",
            "python3 -c \"import os  # bomb_rein_python\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\"".into(),
        ));
    }
    if have("perl", &["-e", "1"]) {
        bombs.push(("perl", "perl -e 'fork while 1; # bomb_rein_perl'".into()));
    }
    for (name, bomb) in bombs {
        let started = std::time::Instant::now();
        let out = lim.run_holding_the_machine(small(64), &bomb, 4).await;
        let took = started.elapsed();
        let shown = folded(&out);
        // Ended by the timeout (4 s plus the kill), not by the machine.
        assert!(took.as_secs() < 30, "{name}: took {took:?}\n{shown}");
        assert!(
            out.contains("timed out") || exit_code(&out).is_some(),
            "{name}: neither timed out nor exited:\n{shown}"
        );
        if rein_test_support::cgroup_usable() {
            assert!(
                out.contains("process limit (64) reached"),
                "{name}: the observation does not name the process limit:\n{shown}"
            );
        }
        for needle in ["bomb_rein_bash", "bomb_rein_python", "bomb_rein_perl"] {
            let left = left_behind(needle, since);
            assert!(
                left.is_empty(),
                "{name}: `{needle}` processes left: {left:#?}"
            );
        }
    }
}

#[tokio::test]
async fn a_write_past_the_file_size_limit_fails_clearly() {
    if sandbox_kind().is_none() {
        return;
    }
    let lim = Lim::new().await;
    let limits = CommandLimits {
        file_size: MIB,
        ..CommandLimits::default()
    };
    let out = lim.run(limits, "head -c 3M /dev/zero > big", 30).await;
    assert_ne!(exit_code(&out), Some(0), "{out}");
    assert!(out.contains("file size limit (1 MiB) reached"), "{out}");
    let len = std::fs::metadata(lim.ws.join("big")).unwrap().len();
    assert!(len <= MIB, "the file grew to {len} bytes");
    // Python ignores SIGXFSZ and reports the write error instead.
    if have("python3", &["-c", "pass"]) {
        let py = lim
            .run(
                limits,
                "python3 -c \"open('big2', 'wb').write(b'0' * 3 * 1024 * 1024)\"",
                30,
            )
            .await;
        assert_ne!(exit_code(&py), Some(0), "{py}");
        assert!(py.contains("file size limit (1 MiB) reached"), "{py}");
    }
    // Below the limit, writing works.
    let ok = lim.run(limits, "head -c 512K /dev/zero > small", 30).await;
    assert_eq!(exit_code(&ok), Some(0), "{ok}");
}

#[tokio::test]
async fn the_private_tmp_fills_only_to_its_cap() {
    if sandbox_kind() != Some(SandboxKind::Bubblewrap) {
        rein_test_support::skip(
            rein_test_support::Component::Bubblewrap,
            "only bubblewrap gives a private /tmp",
        );
        return;
    }
    assert!(
        sandbox::bubblewrap_caps_tmp(),
        "this bubblewrap cannot cap /tmp (--size needs 0.5 or later)"
    );
    let lim = Lim::new().await;
    let limits = CommandLimits {
        tmp_size: 4 * MIB,
        ..CommandLimits::default()
    };
    let out = lim
        .run(
            limits,
            "head -c 16M /dev/zero > /tmp/fill; r=$?; echo size=$(stat -c %s /tmp/fill); exit $r",
            30,
        )
        .await;
    assert_ne!(exit_code(&out), Some(0), "{out}");
    let size: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("size="))
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(u64::MAX);
    assert!(size <= 4 * MIB, "/tmp took {size} bytes: {out}");
    assert!(
        out.contains("/tmp and /var/tmp hold at most 4 MiB"),
        "{out}"
    );
}

#[tokio::test]
async fn no_more_commands_run_at_once_than_the_cap() {
    if sandbox_kind().is_none() {
        return;
    }
    let lim = Arc::new(Lim::new().await);
    std::fs::create_dir(lim.ws.join("running")).unwrap();
    let cap = 3;
    let limits = CommandLimits {
        max_concurrent: cap,
        ..CommandLimits::default()
    };
    // Each command marks itself running, counts the marks, and leaves.
    let command = "m=$(mktemp running/m.XXXXXX) && ls running | wc -l >> counts && \
                   sleep 0.3 && ls running | wc -l >> counts && rm $m";
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..24 {
        let lim = lim.clone();
        set.spawn(async move { lim.run(limits, command, 120).await });
    }
    while let Some(out) = set.join_next().await {
        let out = out.unwrap();
        assert_eq!(exit_code(&out), Some(0), "{out}");
    }
    let counts: Vec<usize> = std::fs::read_to_string(lim.ws.join("counts"))
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(counts.len(), 48, "every command ran: {counts:?}");
    let max = counts.iter().copied().max().unwrap();
    assert!(
        max <= cap,
        "{max} commands ran at once, cap {cap}: {counts:?}"
    );
}

#[tokio::test]
async fn a_call_waiting_for_a_slot_can_be_cancelled() {
    if sandbox_kind().is_none() {
        return;
    }
    let lim = Arc::new(Lim::new().await);
    // A cap no other test uses: its one slot is this test's alone.
    let limits = CommandLimits {
        max_concurrent: 1,
        ..CommandLimits::default()
    };
    let hold = CancellationToken::new();
    let holder = {
        let lim = lim.clone();
        let hold = hold.clone();
        tokio::spawn(async move {
            let tool = Bash::with_sandbox(sandbox::available());
            tool.call(
                json!({"command": "touch held; sleep 60", "timeout_secs": 120}),
                lim.ctx(limits, hold),
            )
            .await
            .unwrap()
        })
    };
    // Wait until the first command really runs (its marker file exists).
    for _ in 0..600 {
        if lim.ws.join("held").exists() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        lim.ws.join("held").exists(),
        "the first command never started"
    );
    let waiting = CancellationToken::new();
    let second = {
        let lim = lim.clone();
        let waiting = waiting.clone();
        tokio::spawn(async move {
            let tool = Bash::with_sandbox(sandbox::available());
            tool.call(
                json!({"command": "touch second", "timeout_secs": 120}),
                lim.ctx(limits, waiting),
            )
            .await
            .unwrap()
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    waiting.cancel();
    let out = second.await.unwrap();
    assert!(out.is_error, "{}", out.content);
    assert!(
        out.content.contains("cancelled while waiting"),
        "{}",
        out.content
    );
    assert!(!lim.ws.join("second").exists(), "the cancelled call ran");
    hold.cancel();
    let first = holder.await.unwrap();
    assert!(first.content.contains("cancelled"), "{}", first.content);
}

#[tokio::test]
async fn a_command_past_the_memory_cap_is_killed_and_told_so() {
    if sandbox_kind().is_none() || !rein_test_support::cgroup_usable() {
        rein_test_support::skip(
            rein_test_support::Component::Cgroup,
            "no cgroup per command here",
        );
        return;
    }
    if !have("python3", &["-c", "pass"]) {
        rein_test_support::skip(
            rein_test_support::Component::Python3,
            "python3 does not run here",
        );
        return;
    }
    let lim = Lim::new().await;
    let limits = CommandLimits {
        memory: 64 * MIB,
        ..CommandLimits::default()
    };
    let out = lim
        .run(
            limits,
            "python3 -c \"b = bytearray(256 * 1024 * 1024); print('allocated', len(b))\"",
            60,
        )
        .await;
    assert!(!out.contains("allocated"), "{out}");
    assert!(out.contains("memory limit (64 MiB) reached"), "{out}");
}
