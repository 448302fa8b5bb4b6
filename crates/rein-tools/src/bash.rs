//! `bash`: run a shell command in the workspace, in its own process group,
//! with bounded output and a timeout that kills every process it started.

use std::ffi::OsString;
use std::process::ExitStatus;
use std::time::Duration;

use async_trait::async_trait;
use rein_core::{
    Assessment, PathLock, SandboxPolicy, Tool, ToolAccess, ToolContext, ToolError, ToolOutput,
    ToolSpec,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::sandbox::{self, SandboxKind};

mod admission;
mod attached;
mod captured;
mod observe;
mod running;
pub use admission::{Admission, Admitted, admit};
pub use attached::{Attached, AttachedError, run_attached};
use captured::Captured;
pub use observe::{Ending, bounded, observation};
pub use running::kill_running_commands;

/// Timeout when none is asked for, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 120;
/// Largest timeout allowed; larger requests are lowered to it.
pub const MAX_TIMEOUT_SECS: u64 = 600;
/// Bytes kept from the start of the output.
pub const HEAD_BYTES: usize = 16 * 1024;
/// Bytes kept from the end of the output.
pub const TAIL_BYTES: usize = 16 * 1024;
/// How long the output is still read after the command itself exited,
/// while background processes keep the pipes open.
const EXIT_GRACE: Duration = Duration::from_millis(200);
/// How long the last output is collected after the group was killed.
const DRAIN_AFTER_KILL: Duration = Duration::from_millis(300);
/// Extra time the gate gives the call beyond the command's own timeout.
pub const GATE_MARGIN: Duration = Duration::from_secs(5);
/// Variables every command gets besides the allowlist: nothing is paged,
/// and git never waits for a password.
pub const QUIET_ENV: [(&str, &str); 3] = [
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("GIT_TERMINAL_PROMPT", "0"),
];

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The command line, run with `bash -c` in the workspace folder.
    command: String,
    /// Seconds before the command is killed. Defaults to 120; at most 600 (larger values are lowered to 600).
    #[schemars(range(min = 1))]
    timeout_secs: Option<u64>,
}

/// Runs shell commands, in the sandbox [`sandbox::available`] finds.
#[derive(Debug, Clone, Copy, Default)]
pub struct Bash;

impl Bash {
    /// The same tool with the sandbox mechanism chosen by the caller rather
    /// than probed (tests force Landlock this way, without touching the
    /// environment). The context's policy still decides whether and how
    /// much to sandbox.
    pub fn with_sandbox(kind: SandboxKind) -> BashIn {
        BashIn { kind }
    }
}

/// [`Bash`] with a chosen sandbox mechanism (see [`Bash::with_sandbox`]);
/// everything but the mechanism is `Bash`'s.
#[derive(Debug, Clone, Copy)]
pub struct BashIn {
    kind: SandboxKind,
}

#[async_trait]
impl Tool for BashIn {
    fn spec(&self) -> ToolSpec {
        Bash.spec()
    }

    fn access(&self) -> ToolAccess {
        Bash.access()
    }

    fn locks(&self, args: &Value, ctx: &ToolContext) -> Result<Vec<PathLock>, ToolError> {
        Bash.locks(args, ctx)
    }

    fn assess(&self, args: &Value, ctx: &ToolContext) -> Assessment {
        Bash.assess(args, ctx)
    }

    fn timeout(&self, args: &Value) -> Option<Duration> {
        Bash.timeout(args)
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        call_bash(args, ctx, self.kind).await
    }
}

#[async_trait]
impl Tool for Bash {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "bash".into(),
            description: format!(
                "Run a command with `bash -c` in the workspace folder, with no stdin; stdout and \
                 stderr come back merged, followed by the exit code. Long output keeps its first \
                 and last {} KiB. Timeout {DEFAULT_TIMEOUT_SECS} s by default, at most \
                 {MAX_TIMEOUT_SECS} s; on timeout the command and all its child processes are \
                 killed. Unless the user turned it off, commands run in a sandbox: only the workspace and a private /tmp are \
                 writable, the home folder is hidden (toolchain folders stay readable), only \
                 basic environment variables are passed, the network may be off, processes, \
                 memory and file sizes are limited, and no process outlives the call (start \
                 servers and the commands that use them in the same call). Git hooks, \
                 `.git` files and config keys that run programs cannot be added.",
                HEAD_BYTES / 1024
            ),
            parameters: crate::schema_of::<Args>(),
        }
    }

    fn access(&self) -> ToolAccess {
        ToolAccess::Execute
    }

    fn timeout(&self, args: &Value) -> Option<Duration> {
        let secs = args.get("timeout_secs").and_then(Value::as_u64);
        Some(command_timeout(secs) + GATE_MARGIN)
    }

    fn assess(&self, args: &Value, ctx: &ToolContext) -> Assessment {
        let command = crate::str_arg(args, "command");
        assess_command(command, &ctx.workspace, &ctx.sandbox)
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        call_bash(args, ctx, sandbox::available()).await
    }
}

/// The permission facts of a command line: rules match each simple command
/// of the PARSED line and each command it runs through a wrapper or shell
/// code (see [`crate::shell::rule_subjects`]; every one must be allowed,
/// and a deny rule denies the line when it matches any), the classifier
/// gives the risk, and a line that does not parse is opaque (only a bare
/// `bash` rule covers it).
pub fn assess_command(
    command: &str,
    workspace: &std::path::Path,
    policy: &SandboxPolicy,
) -> Assessment {
    let mut a = Assessment {
        kind: rein_core::SubjectKind::Command,
        summary: command.trim().to_string(),
        unsandboxed: !bash_is_sandboxed(policy),
        in_sandbox: bash_is_sandboxed(policy) && policy.mode != rein_core::SandboxMode::Off,
        ..Assessment::default()
    };
    match crate::shell::parse(command) {
        Ok(parsed) => {
            a.subjects = crate::shell::rule_subjects(&parsed);
            if a.subjects.iter().any(|s| runs_tests(s)) {
                a.test_command = Some(command.trim().to_string());
            }
            if a.subjects.is_empty() {
                a.subjects.push(command.trim().to_string());
            }
            a.opaque = parsed.opaque;
            let danger = crate::shell::classify(&parsed, workspace, workspace);
            if danger.risk == crate::shell::Risk::High {
                a.risk = rein_core::Risk::High;
            }
            a.reasons = danger.reasons;
        }
        Err(e) => {
            a.opaque = true;
            a.subjects.push(command.trim().to_string());
            a.reasons
                .push(format!("the command line cannot be analysed: {e}"));
        }
    }
    a
}

/// Whether one simple command runs tests: a test runner (`pytest`,
/// `./run_tests.sh`), or a build tool asked to test or check (`cargo test`,
/// `npm run test:unit`, `go test ./...`, `make check`, `python -m pytest`).
/// The shell's own `test` builtin is not one.
fn runs_tests(simple_command: &str) -> bool {
    const RUNNERS: [&str; 9] = [
        "pytest", "jest", "vitest", "mocha", "rspec", "ctest", "tox", "nox", "phpunit",
    ];
    const VERBS: [&str; 6] = ["test", "tests", "check", "pytest", "unittest", "spec"];
    let mut words = simple_command.split_whitespace();
    let Some(program) = words.next() else {
        return false;
    };
    let program = program.rsplit('/').next().unwrap_or(program);
    if program == "test" || program == "[" {
        return false;
    }
    RUNNERS.contains(&program)
        || program.contains("test")
        || words
            .filter(|w| !w.starts_with('-'))
            .any(|w| VERBS.contains(&w) || w.starts_with("test:"))
}

async fn call_bash(
    args: Value,
    ctx: ToolContext,
    kind: SandboxKind,
) -> Result<ToolOutput, ToolError> {
    match admit(args, &ctx).await? {
        Admission::Admitted(admitted) => run_admitted(admitted, &ctx, kind).await,
        Admission::Stopped(output) => Ok(output),
    }
}

/// Run an admitted command here, in the `kind` of sandbox the context's
/// policy asks for, its output captured: what the bash tool does once a
/// call holds its slot (`rein acp` falls back to it when the editor's
/// terminal cannot be used).
pub async fn run_admitted(
    admitted: Admitted,
    ctx: &ToolContext,
    kind: SandboxKind,
) -> Result<ToolOutput, ToolError> {
    let started = start(admitted.command.clone(), ctx, kind, admitted.limit).await?;
    running::run(
        started,
        admitted.deadline,
        admitted.limit,
        ctx.cancel.clone(),
        ctx.events.clone(),
    )
    .await
}

/// The whole environment a command gets from this process under `policy`
/// when run in `kind` of sandbox: exactly what the bash tool hands it.
pub fn command_env(kind: SandboxKind, policy: &SandboxPolicy) -> Vec<(OsString, OsString)> {
    let sandboxed = sandbox::effective(kind, policy) != SandboxKind::None;
    let homes = sandbox::scope::homes(policy);
    let mut vars = sandbox::env::vars(&policy.env_allow, &homes, sandboxed);
    for (name, value) in QUIET_ENV {
        vars.retain(|(n, _)| n != name);
        vars.push((name.into(), value.into()));
    }
    vars
}

/// Whether the sandbox `policy` asks for can be applied to shell commands
/// on this machine: always when its mode is `Off` (nothing is required),
/// otherwise when bubblewrap or Landlock works (Landlock is enough for
/// read-only mode too). When this is false, commands run unsandboxed, so
/// the permission gate must ask before every one. Landlock counts although
/// it cannot keep `.rein`, `.git/hooks` and `.git/config` read-only (see
/// the [`sandbox`] module); bubblewrap creates the missing ones itself
/// before each command, and refuses the command when it cannot.
pub fn bash_is_sandboxed(policy: &SandboxPolicy) -> bool {
    sandbox::can_apply(policy)
}

/// The timeout a request gets: the default, clamped to 1..=600 s.
fn command_timeout(secs: Option<u64>) -> Duration {
    Duration::from_secs(
        secs.unwrap_or(DEFAULT_TIMEOUT_SECS)
            .clamp(1, MAX_TIMEOUT_SECS),
    )
}

/// Start `command`: the one place that decides how a command is run.
/// `bash -c` in the workspace, leading its own process group (or
/// session), with the allowlisted environment ([`command_env`]) and the
/// limits of the policy, in the `kind` of sandbox the context's policy
/// asks for (none when its mode is `Off`, or when `kind` is `None`: the
/// gate then asks before every command): in the session's running
/// sandbox when one can serve it ([`sandbox::server`]), else wrapped in
/// a sandbox of its own. Preparing walks the workspace (git metadata), so
/// it runs on a blocking thread.
async fn start(
    command: String,
    ctx: &ToolContext,
    kind: SandboxKind,
    limit: Duration,
) -> Result<running::Started, ToolError> {
    let policy = ctx.sandbox.clone();
    let workspace = ctx.workspace.clone();
    let env = command_env(kind, &policy);
    let prepared = tokio::task::spawn_blocking(move || {
        match sandbox::start_served(kind, &policy, &workspace, &command, limit, env) {
            Ok(Some(served)) => Ok(Err(served)),
            Ok(None) => sandbox::prepare(kind, &policy, &workspace, &command, limit).map(Ok),
            Err(e) => Err(e),
        }
    })
    .await
    .map_err(|e| ToolError::new(format!("could not prepare the command: {e}")))?
    .map_err(|e| ToolError::new(e.to_string()))?;
    match prepared {
        Ok(mut prepared) => {
            prepared.cmd.envs(QUIET_ENV);
            running::Started::spawn(prepared)
        }
        Err(served) => running::Started::served(served),
    }
}

/// Run the work left after a command on a blocking thread: its notes.
async fn after_notes(
    after: sandbox::After,
    status: Option<ExitStatus>,
    output: String,
) -> Vec<String> {
    tokio::task::spawn_blocking(move || after.finish(status, &output))
        .await
        .unwrap_or_else(|e| vec![format!("[could not check the command's aftermath: {e}]")])
}

#[cfg(test)]
mod test_runs {
    use super::runs_tests;

    #[test]
    fn test_runners_and_test_verbs_count_and_the_test_builtin_does_not() {
        for yes in [
            "cargo test --all",
            "pytest -q tests/",
            "python3 -m pytest",
            "npm run test:unit",
            "go test ./...",
            "make check",
            "./run_tests.sh",
            "/usr/bin/jest",
        ] {
            assert!(runs_tests(yes), "{yes}");
        }
        for no in [
            "test -f x",
            "[ -d src ]",
            "ls tests-data",
            "cat test.txt",
            "echo hi",
        ] {
            assert!(!runs_tests(no), "{no}");
        }
    }

    #[test]
    fn the_assessment_of_a_line_that_runs_tests_names_it_for_the_task_ledger() {
        let ws = std::path::Path::new("/ws");
        let policy = rein_core::SandboxPolicy::default();
        let a = super::assess_command("cd src && cargo test -q", ws, &policy);
        assert_eq!(a.test_command.as_deref(), Some("cd src && cargo test -q"));
        let plain = super::assess_command("ls -la", ws, &policy);
        assert_eq!(plain.test_command, None);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn timeouts_are_clamped() {
        assert_eq!(command_timeout(None), Duration::from_secs(120));
        assert_eq!(command_timeout(Some(0)), Duration::from_secs(1));
        assert_eq!(command_timeout(Some(9999)), Duration::from_secs(600));
        let gate = Bash.timeout(&serde_json::json!({"command": "x", "timeout_secs": 10}));
        assert_eq!(gate, Some(Duration::from_secs(15)));
    }
}
