//! The sandbox shell commands run in.
//!
//! Two mechanisms, chosen once per process by [`available`]:
//!
//! - **Bubblewrap** (`bwrap`): the command runs in new mount, PID, IPC, UTS
//!   and (unless the policy allows it) network namespaces, with no
//!   capabilities. The whole filesystem is a read-only bind except the home
//!   folders, which are hidden ([`scope`]: `/home`, `/root` and the user's
//!   home, with the toolchain folders and `read_paths` bound back
//!   read-only); `/dev` holds only the harmless devices; `/tmp` and
//!   `/var/tmp` are private size-capped tmpfs; the workspace is bound
//!   writable (not in read-only mode) with `.rein`, `.git/hooks`,
//!   `.git/config` (and `.git/config.worktree`) and the policy's read-only
//!   paths bound read-only over it; hidden paths (credential folders,
//!   `$REIN_HOME`, container-runtime sockets) are covered with an empty
//!   tmpfs (folders) or `/dev/null` (files). When the command exits, its PID
//!   namespace and everything in it die. A bind needs an existing path, so
//!   a missing `.rein/` (and, in a repository, `.git/hooks/` and
//!   `.git/config`) is first created empty on the host, and removed again
//!   when no command needs it and nothing was put in it ([`made`]); when
//!   that fails the command does not run. With `.git/config` read-only, `git config`
//!   writes, `git remote add` and setting a branch's upstream fail inside
//!   the sandbox in the top repository: that is intended (the config names
//!   commands git runs on the host later).
//! - **Landlock**, when bubblewrap is missing or namespaces are forbidden:
//!   applied in the child just before `exec`. Reading and executing are
//!   allowed in the system folders, the workspace, the toolchain folders and
//!   `read_paths` only; writing only in the workspace (not in read-only
//!   mode), `/tmp` and a few devices; TCP is refused unless the network is
//!   allowed; signals and abstract sockets cannot reach outside; every
//!   capability is dropped. It cannot hide paths inside what it grants,
//!   make paths inside the workspace read-only, or give the command a
//!   private `/tmp` or PID namespace. So under Landlock a command CAN write
//!   `.rein/` (rules the next run loads); git metadata is guarded by the
//!   check after the command alone ([`gitmeta`]).
//!
//! In every mode with a writable workspace, git metadata at any depth is
//! recorded before the command and what it may not plant is undone after
//! it ([`gitmeta`]). Every command gets an allowlisted environment
//! ([`env`]), rlimits (address space, file size, CPU time, no core files)
//! and, where rein can make one, a cgroup capping its processes and memory;
//! at most `max_concurrent` commands run at once (the bash tool waits).
//!
//! Under bubblewrap, the bash tool runs its commands in the session's
//! sandbox, started once and kept running ([`server`], [`start_served`]),
//! with the same mounts and per-command guarantees; [`prepare`] makes one
//! bubblewrap per command (the fallback, and every other caller).
//!
//! `REIN_SANDBOX=bwrap|landlock|none` forces the choice (read once per
//! process; a forced kind that does not work here gives `None`, so the
//! permission gate asks before every command).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

use rein_core::{CommandLimits, SandboxMode, SandboxPolicy};
use tokio::process::Command;

mod bwrap;
mod cgroup;
pub mod env;
pub mod gitconfig;
pub mod gitmeta;
#[cfg(target_os = "linux")]
mod landlock;
#[cfg(not(target_os = "linux"))]
#[path = "sandbox/landlock_stub.rs"]
mod landlock;
mod made;
pub mod netbridge;
pub mod netproxy;
mod netroute;
mod rlimits;
pub mod scope;
pub mod server;

pub use bwrap::{BwrapEntry, bwrap_args, bwrap_args_with, ensure_protected};
pub use cgroup::available as cgroup_available;

/// The environment variable that forces a sandbox kind.
pub const FORCE_ENV: &str = "REIN_SANDBOX";

/// Which sandbox mechanism wraps shell commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxKind {
    Bubblewrap,
    Landlock,
    None,
}

/// What the machine offers, probed once.
struct Probe {
    /// The `bwrap` found on `PATH`, when a trivial sandbox actually ran.
    bwrap: Option<PathBuf>,
    /// Whether that bubblewrap can cap the size of `/tmp`.
    bwrap_size: bool,
    /// The kernel's Landlock ABI version (0 or less: none).
    landlock_abi: i32,
}

fn probe() -> &'static Probe {
    static PROBE: OnceLock<Probe> = OnceLock::new();
    PROBE.get_or_init(|| {
        let found = find_on_path("bwrap").map(|p| {
            let probed = bwrap::probe(&p);
            (p, probed)
        });
        Probe {
            bwrap_size: found.as_ref().is_some_and(|(_, p)| p.caps_tmp),
            bwrap: found.and_then(|(p, probed)| probed.usable.then_some(p)),
            landlock_abi: landlock::abi_version(),
        }
    })
}

/// The first executable `name` in an absolute folder of `PATH`.
pub(crate) fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p)
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}

/// Start finding out which sandbox works here on a thread of its own. The
/// probe runs a trivial command under bubblewrap (a process and its
/// namespaces, several milliseconds); started first, it overlaps the rest
/// of a front end's setup (config, provider, store), and whoever asks
/// [`available`] later waits only for what is left of it.
pub fn probe_in_background() {
    let _ = std::thread::Builder::new()
        .name("rein-sandbox-probe".into())
        .spawn(|| {
            available();
        });
}

/// Whether bubblewrap is installed and can create its namespaces here.
pub fn bubblewrap_usable() -> bool {
    probe().bwrap.is_some()
}

/// Whether bubblewrap works here and can cap the size of `/tmp` (0.5 and
/// later); an older one gives an uncapped private `/tmp`.
pub fn bubblewrap_caps_tmp() -> bool {
    probe().bwrap_size
}

/// Whether the kernel supports Landlock.
pub fn landlock_supported() -> bool {
    probe().landlock_abi >= 1
}

/// The kernel's Landlock ABI version (0 or less: no Landlock). TCP rules
/// need 4, signal and abstract-socket scoping 6.
pub fn landlock_abi_version() -> i32 {
    probe().landlock_abi
}

/// The best sandbox this machine offers (or the one `REIN_SANDBOX` forces),
/// probed once per process.
pub fn available() -> SandboxKind {
    static KIND: OnceLock<SandboxKind> = OnceLock::new();
    *KIND.get_or_init(|| {
        let forced = std::env::var(FORCE_ENV).unwrap_or_default();
        match forced.trim().to_ascii_lowercase().as_str() {
            "bwrap" | "bubblewrap" => usable_or_none(SandboxKind::Bubblewrap),
            "landlock" => usable_or_none(SandboxKind::Landlock),
            "none" | "off" => SandboxKind::None,
            _ if bubblewrap_usable() => SandboxKind::Bubblewrap,
            _ if landlock_supported() => SandboxKind::Landlock,
            _ => SandboxKind::None,
        }
    })
}

fn usable_or_none(kind: SandboxKind) -> SandboxKind {
    let ok = match kind {
        SandboxKind::Bubblewrap => bubblewrap_usable(),
        SandboxKind::Landlock => landlock_supported(),
        SandboxKind::None => true,
    };
    if ok { kind } else { SandboxKind::None }
}

/// A sentence for messages about a sandbox kind.
pub fn describe(kind: SandboxKind) -> &'static str {
    match kind {
        SandboxKind::Bubblewrap => {
            "bubblewrap: read-only filesystem except the workspace (where .rein, .git/hooks \
             and .git/config stay read-only, so `git config` cannot write), home folders hidden \
             except toolchain folders, private size-capped /tmp, no network unless allowed, and \
             no process outlives the command"
        }
        SandboxKind::Landlock => {
            "landlock: reads only in system folders, the workspace and toolchain folders, writes \
             only in the workspace and /tmp, no TCP unless allowed; it cannot protect paths \
             inside the workspace (commands can change .rein; planted git metadata is undone \
             after the command), give a private /tmp, or stop background processes from \
             outliving the command where no cgroup can be made"
        }
        SandboxKind::None => {
            "no sandbox: neither bubblewrap nor Landlock works here, so every shell command \
             needs approval"
        }
    }
}

/// Whether the sandbox `policy` requires can be applied here: always for
/// [`SandboxMode::Off`] (nothing is required), otherwise when bubblewrap
/// or Landlock works.
pub fn can_apply(policy: &SandboxPolicy) -> bool {
    policy.mode == SandboxMode::Off || available() != SandboxKind::None
}

/// Whether an environment variable's name looks like it holds a secret:
/// it contains KEY, SECRET, TOKEN, PASSWORD, PASSWD or CREDENTIAL, in any
/// case. (Commands get an allowlist anyway, see [`env`]; this names the
/// ones worth a warning when a user allows them.)
pub fn is_secret_name(name: &str) -> bool {
    const WORDS: [&str; 6] = ["KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL"];
    let upper = name.to_ascii_uppercase();
    WORDS.iter().any(|w| upper.contains(w))
}

/// Why a command could not be prepared (it did not run); the message is
/// for the model and the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrepareError {
    /// A path bubblewrap must keep read-only could not be made.
    #[error("{0}")]
    Protect(String),
    /// The Landlock sandbox could not be set up.
    #[error("{0}")]
    Landlock(String),
}

/// A command ready to start, and what must happen once it is over.
pub struct Prepared {
    /// The process to spawn.
    pub cmd: Command,
    /// Call [`After::finish`] when nothing of the command runs any more.
    pub after: After,
}

/// The work left for when a command is over: kill what is left in its
/// cgroup, undo git metadata it planted, and say which limits it hit.
pub struct After {
    cgroup: Option<cgroup::CommandCgroup>,
    /// The protected paths made for bubblewrap, held while it runs.
    made: Option<made::Hold>,
    git: Option<(PathBuf, gitmeta::GitMeta)>,
    /// The command's network proxy (kept alive as long as it runs).
    net: netroute::Route,
    limits: CommandLimits,
    cpu_secs: u64,
    tmp_capped: bool,
}

impl After {
    /// Lines for the observation (each one bracketed), after the command's
    /// processes are gone: `status` is its exit status when it exited,
    /// `output` what it printed (to recognise a full `/tmp`). Blocking: it
    /// walks the workspace.
    pub fn finish(mut self, status: Option<std::process::ExitStatus>, output: &str) -> Vec<String> {
        use std::os::unix::process::ExitStatusExt;
        let mut notes = Vec::new();
        if let Some(cg) = &self.cgroup {
            notes.extend(cg.report());
        }
        notes.extend(self.end());
        if let Some(made) = self.made.take() {
            made.release();
        }
        notes.extend(self.net.notes());
        if let Some(s) = status
            && let Some(line) = rlimits::explain(
                &rlimits::Ending {
                    code: s.code(),
                    signal: s.signal(),
                    output,
                },
                &self.limits,
                self.cpu_secs,
            )
        {
            notes.push(line);
        }
        if self.tmp_capped && output.contains("No space left on device") {
            notes.push(format!(
                "[/tmp and /var/tmp hold at most {} each in the sandbox; write big files in the \
                 workspace]",
                rein_core::human_bytes(self.limits.tmp_size)
            ));
        }
        notes
    }
}

impl After {
    /// One line per host the command's network proxy refused (so far).
    pub fn network_blocked(&self) -> Vec<String> {
        self.net
            .proxy
            .as_ref()
            .map(|p| p.blocked())
            .unwrap_or_default()
    }

    /// Kill what is left in the cgroup (and remove it), then undo planted
    /// git metadata; once.
    fn end(&mut self) -> Option<String> {
        drop(self.cgroup.take());
        let (ws, before) = self.git.take()?;
        gitmeta::restore(&ws, &before)
    }
}

impl Drop for After {
    /// A call dropped before [`After::finish`] (its future was abandoned)
    /// still gets its leftovers killed and its git metadata checked.
    fn drop(&mut self) {
        self.end();
    }
}

/// The process that runs `script` with `bash -c` under `policy`, wrapped by
/// `kind` (ignored when the policy's mode is [`SandboxMode::Off`]; `None`
/// runs it plainly), limited by the policy's limits, with a CPU time of
/// `timeout` on every core. Its working folder, standard streams and process group are
/// set, its environment is the allowlist of [`env`]. The child leads a new
/// process group, so killing that group stops everything (with bubblewrap,
/// the sandbox's PID namespace goes with it). In writable modes the
/// workspace's git metadata is recorded first (see [`gitmeta`]). Blocking:
/// it may walk the workspace.
pub fn prepare(
    kind: SandboxKind,
    policy: &SandboxPolicy,
    workspace: &Path,
    script: &str,
    timeout: std::time::Duration,
) -> Result<Prepared, PrepareError> {
    let kind = effective(kind, policy);
    let mut net = netroute::Route::default();
    let mut made = None;
    let mut cmd = match kind {
        SandboxKind::Bubblewrap => {
            if policy.mode != SandboxMode::ReadOnly {
                made = Some(made::hold(workspace).map_err(PrepareError::Protect)?);
            }
            let program = probe()
                .bwrap
                .clone()
                .unwrap_or_else(|| PathBuf::from("bwrap"));
            let mut cmd = Command::new(program);
            let mut args = if probe().bwrap_size {
                bwrap_args(policy, workspace, script)
            } else {
                // An old bubblewrap: /tmp stays private but uncapped.
                let mut uncapped = policy.clone();
                uncapped.limits.tmp_size = 0;
                bwrap_args(&uncapped, workspace, script)
            };
            net = netroute::route(kind, policy, Some(&mut args));
            cmd.args(args);
            cmd.process_group(0);
            cmd
        }
        SandboxKind::Landlock => {
            net = netroute::route(kind, policy, None);
            plain(script)
        }
        SandboxKind::None => {
            let mut cmd = plain(script);
            cmd.process_group(0);
            cmd
        }
    };
    // Recorded after `ensure_protected` made what it makes.
    let watch_git = policy.mode == SandboxMode::WorkspaceWrite;
    let git = watch_git.then(|| (workspace.to_path_buf(), gitmeta::scan(workspace)));
    // The child joins its cgroup and lowers its limits first, then (under
    // Landlock) confines itself.
    let cgroup = cgroup::CommandCgroup::create(&policy.limits);
    if let Some(cg) = &cgroup {
        cg.join_in_child(&mut cmd);
    }
    // A process's threads together can spend the timeout on every core:
    // the CPU limit stops only what would outlive the timeout's kill.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
    let cpu_secs = timeout.as_secs().max(1).saturating_mul(cores);
    rlimits::apply(&mut cmd, &policy.limits, cpu_secs, cgroup.is_none());
    if kind == SandboxKind::Landlock {
        // The child makes its own session (and so its own process group)
        // before it restricts itself.
        landlock::confine(&mut cmd, policy, workspace).map_err(PrepareError::Landlock)?;
    }
    cmd.current_dir(workspace)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    env::apply(
        &mut cmd,
        &policy.env_allow,
        &scope::homes(policy),
        kind != SandboxKind::None,
    );
    Ok(Prepared {
        cmd,
        after: After {
            cgroup,
            made,
            git,
            net,
            limits: policy.limits,
            cpu_secs,
            tmp_capped: kind == SandboxKind::Bubblewrap
                && probe().bwrap_size
                && policy.limits.tmp_size > 0,
        },
    })
}

/// A command started in a running sandbox ([`server`]), and what must
/// happen once it is over.
pub struct Served {
    pub running: server::Running,
    pub output: server::Output,
    /// Call [`After::finish`] once [`server::Running::wait`] returned.
    pub after: After,
}

/// Start `script` as [`prepare`] would run it under bubblewrap, with
/// `env`, but in the session's running sandbox; `Ok(None)` when it cannot
/// serve this command (another kind, the network a list of hosts, turned
/// off, or no server came up): then [`prepare`] it. Blocking: it may walk
/// the workspace and start the sandbox.
pub fn start_served(
    kind: SandboxKind,
    policy: &SandboxPolicy,
    workspace: &Path,
    script: &str,
    timeout: std::time::Duration,
    env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
) -> Result<Option<Served>, PrepareError> {
    if effective(kind, policy) != SandboxKind::Bubblewrap || !server::serves(policy) {
        return Ok(None);
    }
    let hold = if policy.mode != SandboxMode::ReadOnly {
        Some(made::hold(workspace).map_err(PrepareError::Protect)?)
    } else {
        None
    };
    let tmp_capped = probe().bwrap_size && policy.limits.tmp_size > 0;
    let mut args = if probe().bwrap_size {
        bwrap_args(policy, workspace, "")
    } else {
        let mut uncapped = policy.clone();
        uncapped.limits.tmp_size = 0;
        bwrap_args(&uncapped, workspace, "")
    };
    // Without its `-- bash -c SCRIPT` tail.
    args.truncate(args.len().saturating_sub(4));
    let git = (policy.mode == SandboxMode::WorkspaceWrite)
        .then(|| (workspace.to_path_buf(), gitmeta::scan(workspace)));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
    let cpu_secs = timeout.as_secs().max(1).saturating_mul(cores);
    let plan = rlimits::plan(&policy.limits, cpu_secs, !cgroup::available());
    let job = server::job(workspace, script, env, plan);
    let Some((running, output)) = server::start(&args, policy, hold, job) else {
        return Ok(None);
    };
    Ok(Some(Served {
        running,
        output,
        after: After {
            cgroup: None,
            made: None,
            git,
            net: netroute::Route::default(),
            limits: policy.limits,
            cpu_secs,
            tmp_capped,
        },
    }))
}

/// The sandbox a command gets from `kind` under `policy`: none when the
/// policy's mode is [`SandboxMode::Off`], else `kind`.
pub fn effective(kind: SandboxKind, policy: &SandboxPolicy) -> SandboxKind {
    if policy.mode == SandboxMode::Off {
        SandboxKind::None
    } else {
        kind
    }
}

fn plain(script: &str) -> Command {
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(script);
    cmd
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn secret_names_are_recognised_in_any_case() {
        for name in [
            "MY_API_KEY",
            "GITHUB_TOKEN",
            "aws_secret_access_key",
            "PGPASSWORD",
            "Ldap_Passwd",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "KEY",
            "npm_config__authToken",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "SSH_AUTH_SOCK",
            "LANG",
            "CARGO_HOME",
            "TERM",
            "PASS",
        ] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn off_needs_no_sandbox() {
        let policy = SandboxPolicy {
            mode: SandboxMode::Off,
            ..Default::default()
        };
        assert!(can_apply(&policy));
    }
}
