//! Landlock, applied by the child between `fork` and `exec`.
//!
//! Reads are granted, not denied: the system folders, the workspace, the
//! toolchain folders and `read_paths` (the same scope bubblewrap shows),
//! so home folders stay unreadable. `$REIN_HOME` is unreadable when it lies
//! outside those (the default `~/.rein` does); Landlock cannot take it away
//! inside the workspace or a system folder. The same holds for the
//! credential stores of the never-read list (`~/.git-credentials`,
//! `~/.config/gh`, ...): unreadable unless the workspace holds them (a home
//! workspace), where only bubblewrap can hide them. The file tools refuse
//! them either way.
//!
//! The ruleset is built (paths opened, rules added) in the parent; the
//! child only makes system calls: `setsid`, `capset`, `prctl` and
//! `landlock_restrict_self`. Nothing there allocates or takes a lock.

use std::io;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr,
    RulesetError, RulesetStatus, Scope, path_beneath_rules,
};
use rein_core::{SandboxMode, SandboxPolicy};
use tokio::process::Command;

use super::scope::{TOOLCHAIN_SECRETS, homes, toolchain_paths};

/// The newest Landlock ABI whose rights this module asks for; older kernels
/// get what they support (best effort), newer ones nothing untested.
const TARGET: ABI = ABI::V6;

/// Devices commands may write to (and use ioctls on).
const DEVICES: [&str; 4] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// Temporary folders that stay writable (shared with the host: Landlock
/// cannot give a private one).
const TEMP: [&str; 2] = ["/tmp", "/var/tmp"];

/// The kernel's Landlock ABI version; 0 or less when it has none.
pub(super) fn abi_version() -> i32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag,
    // landlock_create_ruleset only returns the ABI version (or -1); it
    // creates nothing and touches no memory of ours.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    i32::try_from(v).unwrap_or(-1)
}

/// System folders commands may read and execute from. Not `/home`,
/// `/root`, `/mnt`, `/media` or anything else: Landlock grants, it cannot
/// hide, so the read scope is this list plus the workspace, the toolchain
/// folders and `read_paths`.
const SYSTEM: [&str; 17] = [
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc",
    "/sys", "/dev", "/run", "/var", "/nix", "/snap", "/tmp",
];

/// Everything commands may read: [`SYSTEM`], the workspace, the toolchain
/// folders and `read_paths`; a folder holding a credential file of
/// [`TOOLCHAIN_SECRETS`] is granted entry by entry, without it.
fn readable(policy: &SandboxPolicy, workspace: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = SYSTEM.iter().map(PathBuf::from).collect();
    paths.push(workspace.to_path_buf());
    let wanted = toolchain_paths(&homes(policy))
        .into_iter()
        .chain(policy.read_paths.iter().cloned());
    for path in wanted {
        let Ok(real) = std::fs::canonicalize(&path) else {
            continue;
        };
        let has_secret = TOOLCHAIN_SECRETS
            .iter()
            .any(|s| std::fs::symlink_metadata(real.join(s)).is_ok());
        if !has_secret {
            paths.push(real);
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&real) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            if !TOOLCHAIN_SECRETS.iter().any(|s| name == *s) {
                paths.push(e.path());
            }
        }
    }
    paths
}

fn ruleset(policy: &SandboxPolicy, workspace: &Path) -> Result<RulesetCreated, RulesetError> {
    let all = AccessFs::from_all(TARGET);
    let read = AccessFs::from_read(TARGET);
    // Device nodes made in the workspace would give a root command the
    // raw disks.
    let write = all & !(AccessFs::MakeChar | AccessFs::MakeBlock);
    let device = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::IoctlDev;

    let mut rules = Ruleset::default()
        .handle_access(all)?
        .scope(Scope::AbstractUnixSocket | Scope::Signal)?;
    if policy.network != rein_core::NetworkAccess::On {
        // Handled with no rule: every TCP bind and connect is refused.
        rules = rules.handle_access(AccessNet::from_all(TARGET))?;
    }
    let writable = policy.mode != SandboxMode::ReadOnly;
    let mut created = rules
        .create()?
        .add_rules(path_beneath_rules(readable(policy, workspace), read))?
        .add_rules(path_beneath_rules(DEVICES, device))?;
    if writable {
        created = created.add_rules(path_beneath_rules([workspace], write))?;
    }
    for tmp in TEMP {
        let tmp = std::fs::canonicalize(tmp).unwrap_or_else(|_| tmp.into());
        // In read-only mode a workspace under /tmp must not become
        // writable through it.
        if writable || !workspace.starts_with(&tmp) {
            created = created.add_rules(path_beneath_rules([tmp], write))?;
        }
    }
    Ok(created)
}

/// Make `cmd`'s child confine itself before `exec`: a new session (and so
/// its own process group, away from rein's terminal), no capabilities, then
/// the Landlock ruleset (which also sets no_new_privs, so nothing it
/// executes gains privileges back).
pub(super) fn confine(
    cmd: &mut Command,
    policy: &SandboxPolicy,
    workspace: &Path,
) -> Result<(), String> {
    if abi_version() < 1 {
        return Err("Landlock is not supported by this kernel".into());
    }
    let ruleset = ruleset(policy, workspace)
        .map_err(|e| format!("could not prepare the Landlock sandbox: {e}"))?;
    let mut ruleset = Some(ruleset);
    // SAFETY: the closure runs in the forked child, where only
    // async-signal-safe work is allowed: it makes plain system calls and
    // moves an already built ruleset (an fd and flags) into
    // `restrict_self`, which neither allocates nor locks.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() == -1 {
                return Err(io::Error::last_os_error());
            }
            drop_capabilities()?;
            let Some(ruleset) = ruleset.take() else {
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            };
            match ruleset.restrict_self() {
                Ok(status) if status.ruleset != RulesetStatus::NotEnforced => Ok(()),
                _ => Err(io::Error::from_raw_os_error(libc::EPERM)),
            }
        });
    }
    Ok(())
}

/// Drop every capability of the calling process and, when allowed, stop
/// uid 0 from regaining them at `exec`. Only system calls.
fn drop_capabilities() -> io::Result<()> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    const SECBIT_NOROOT: libc::c_ulong = 1;
    const SECBIT_NOROOT_LOCKED: libc::c_ulong = 2;
    let header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let data = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: prctl and capset only read the values passed; `header` and
    // `data` (two elements, as version 3 requires) outlive the calls.
    unsafe {
        // Needs CAP_SETPCAP; without it there is nothing to regain anyway.
        libc::prctl(
            libc::PR_SET_SECUREBITS,
            SECBIT_NOROOT | SECBIT_NOROOT_LOCKED,
        );
        if libc::syscall(libc::SYS_capset, &header as *const Header, data.as_ptr()) == -1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
