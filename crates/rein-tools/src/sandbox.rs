//! The sandbox shell commands run in.
//!
//! Two mechanisms, chosen once per process by [`available`]:
//!
//! - **Bubblewrap** (`bwrap`): the command runs in new mount, PID, IPC, UTS
//!   and (unless the policy allows it) network namespaces, with no
//!   capabilities. The whole filesystem is a read-only bind, `/dev` holds
//!   only the harmless devices, `/tmp` and `/var/tmp` are private tmpfs, the
//!   workspace is bound writable (not in read-only mode) with `.rein`,
//!   `.git/hooks`, `.git/config` (and `.git/config.worktree`) and the
//!   policy's read-only paths bound read-only over it, and hidden paths
//!   (plus container-runtime sockets) are covered with an empty tmpfs
//!   (folders) or `/dev/null` (files). When the command exits, its PID
//!   namespace and everything in it die. A bind needs an existing path, so
//!   a missing `.rein/` (and, in a repository, `.git/hooks/` and
//!   `.git/config`) is first created empty on the host; when that fails the
//!   command does not run. With `.git/config` read-only, `git config`
//!   writes, `git remote add` and setting a branch's upstream fail inside
//!   the sandbox: that is intended (the config names commands git runs on
//!   the host later: `core.hooksPath`, `core.fsmonitor`, aliases, filters).
//! - **Landlock**, when bubblewrap is missing or namespaces are forbidden:
//!   applied in the child just before `exec`. Reading and executing stay
//!   allowed everywhere, writing only in the workspace (not in read-only
//!   mode), `/tmp` and a few devices; TCP is refused unless the network is
//!   allowed; signals and abstract sockets cannot reach outside; every
//!   capability is dropped. It cannot hide paths, make paths inside the
//!   workspace read-only, or give the command a private `/tmp` or PID
//!   namespace. So under Landlock a command CAN write `.rein/` (rules the
//!   next run loads), `.git/hooks/` and `.git/config` (code git runs on the
//!   host later): only the classifier stands in the way (a `git config` that
//!   sets a command is high risk; `echo … >> .git/config` is not seen), as
//!   the protected paths of the permission gate bind file tools only. That
//!   is a known limit, not a reason to refuse: Landlock still counts as a
//!   sandbox for the permission gate.
//!
//! Environment variables whose names look secret are removed in every mode
//! ([`scrub_env`]), also without a sandbox.
//!
//! `REIN_SANDBOX=bwrap|landlock|none` forces the choice (read once per
//! process; a forced kind that does not work here gives `None`, so the
//! permission gate asks before every command).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

use rein_core::{SandboxMode, SandboxPolicy};
use tokio::process::Command;

mod bwrap;
#[cfg(target_os = "linux")]
mod landlock;
#[cfg(not(target_os = "linux"))]
#[path = "sandbox/landlock_stub.rs"]
mod landlock;

pub use bwrap::{BwrapEntry, bwrap_args, bwrap_args_with, ensure_protected};

/// The environment variable that forces a sandbox kind.
pub const FORCE_ENV: &str = "REIN_SANDBOX";

/// Which sandbox mechanism wraps shell commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SandboxKind {
    Bubblewrap,
    Landlock,
    None,
}

/// What the machine offers, probed once.
struct Probe {
    /// The `bwrap` found on `PATH`, when a trivial sandbox actually ran.
    bwrap: Option<PathBuf>,
    /// The kernel's Landlock ABI version (0 or less: none).
    landlock_abi: i32,
}

fn probe() -> &'static Probe {
    static PROBE: OnceLock<Probe> = OnceLock::new();
    PROBE.get_or_init(|| Probe {
        bwrap: find_on_path("bwrap").filter(|p| bwrap::probe(p)),
        landlock_abi: landlock::abi_version(),
    })
}

fn find_on_path(name: &str) -> Option<PathBuf> {
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

/// Whether bubblewrap is installed and can create its namespaces here.
pub fn bubblewrap_usable() -> bool {
    probe().bwrap.is_some()
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
             and .git/config stay read-only, so `git config` cannot write), private /tmp, \
             hidden credential folders, no network unless allowed, and no process outlives the \
             command"
        }
        SandboxKind::Landlock => {
            "landlock: writes only in the workspace and /tmp, no TCP unless allowed; it cannot \
             hide folders, protect paths inside the workspace (commands can change .rein, \
             .git/hooks and .git/config), give a private /tmp, or stop background processes \
             from outliving the command"
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
/// case.
pub fn is_secret_name(name: &str) -> bool {
    const WORDS: [&str; 6] = ["KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL"];
    let upper = name.to_ascii_uppercase();
    WORDS.iter().any(|w| upper.contains(w))
}

/// Remove from `cmd`'s environment every inherited variable whose name
/// looks secret, except those named exactly in `allow`.
pub fn scrub_env(cmd: &mut Command, allow: &[String]) {
    for (name, _) in std::env::vars_os() {
        if secret_and_not_allowed(&name, allow) {
            cmd.env_remove(&name);
        }
    }
}

fn secret_and_not_allowed(name: &OsStr, allow: &[String]) -> bool {
    let lossy = name.to_string_lossy();
    is_secret_name(&lossy) && !allow.iter().any(|a| OsStr::new(a) == name)
}

/// The process that runs `script` with `bash -c` under `policy`, wrapped by
/// `kind` (ignored when the policy's mode is [`SandboxMode::Off`]; `None`
/// runs it plainly). Its working folder, standard streams and process group
/// are set; the caller adds environment variables. The child leads a new
/// process group, so killing that group stops everything (with bubblewrap,
/// the sandbox's PID namespace goes with it).
pub fn command(
    kind: SandboxKind,
    policy: &SandboxPolicy,
    workspace: &Path,
    script: &str,
) -> Result<Command, String> {
    let kind = if policy.mode == SandboxMode::Off {
        SandboxKind::None
    } else {
        kind
    };
    let mut cmd = match kind {
        SandboxKind::Bubblewrap => {
            if policy.mode != SandboxMode::ReadOnly {
                bwrap::ensure_protected(workspace)?;
            }
            let program = probe()
                .bwrap
                .clone()
                .unwrap_or_else(|| PathBuf::from("bwrap"));
            let mut cmd = Command::new(program);
            cmd.args(bwrap_args(policy, workspace, script));
            cmd.process_group(0);
            cmd
        }
        SandboxKind::Landlock => {
            let mut cmd = plain(script);
            // The child makes its own session (and so its own process
            // group) before it restricts itself.
            landlock::confine(&mut cmd, policy, workspace)?;
            cmd
        }
        SandboxKind::None => {
            let mut cmd = plain(script);
            cmd.process_group(0);
            cmd
        }
    };
    cmd.current_dir(workspace)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    scrub_env(&mut cmd, &policy.env_allow);
    Ok(cmd)
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
    fn allowed_names_must_match_exactly() {
        let allow = vec!["GITHUB_TOKEN".to_string()];
        assert!(!secret_and_not_allowed(OsStr::new("GITHUB_TOKEN"), &allow));
        assert!(secret_and_not_allowed(OsStr::new("github_token"), &allow));
        assert!(secret_and_not_allowed(OsStr::new("GITHUB_TOKEN_2"), &allow));
        assert!(!secret_and_not_allowed(OsStr::new("PATH"), &allow));
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
