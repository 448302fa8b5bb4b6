//! The shell sandbox, for real: bubblewrap, and Landlock forced per call.
//!
//! Every test prints which sandbox ran. A machine with no sandbox at all
//! fails these tests unless `REIN_ALLOW_NO_SANDBOX=1` is set: CI installs
//! bubblewrap, and a silent skip would hide a broken setup.
//!
//! The workspace and the "outside" folder both live under the target
//! folder (not /tmp, which is private under bubblewrap and writable under
//! Landlock), on one filesystem, so hard links between them are possible.
//!
//! This module holds the fixture (`Sbx`) and its helpers; the checks every
//! sandbox must pass, and the tests of each sandbox, live in submodules.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use rein_core::{CancellationToken, SandboxMode, SandboxPolicy, Tool, ToolContext, ToolOutput};
use rein_tools::Bash;
use rein_tools::sandbox::{self, SandboxKind};
use serde_json::json;
use tempfile::TempDir;

use crate::common::Env;

#[path = "sandbox/bubblewrap.rs"]
mod bubblewrap;
#[path = "sandbox/checks.rs"]
mod checks;
#[path = "sandbox/every_mode.rs"]
mod every_mode;
#[path = "sandbox/landlock.rs"]
mod landlock;

const ALLOW_NONE: &str = "REIN_ALLOW_NO_SANDBOX";

fn none_allowed() -> bool {
    std::env::var(ALLOW_NONE).is_ok_and(|v| v == "1")
}

/// The bash tool forced onto bubblewrap, or `None` (after saying so) on a
/// machine without any sandbox where that is explicitly allowed.
fn bwrap() -> Option<impl Tool> {
    if sandbox::bubblewrap_usable() {
        eprintln!("sandbox: bubblewrap");
        return Some(Bash::with_sandbox(SandboxKind::Bubblewrap));
    }
    assert!(
        none_allowed(),
        "bubblewrap is not usable here (missing, or namespaces are forbidden); install \
         bubblewrap, or set {ALLOW_NONE}=1 to skip the sandbox tests knowingly"
    );
    rein_test_support::skip(
        rein_test_support::Component::Bubblewrap,
        format!("bubblewrap not usable; {ALLOW_NONE}=1"),
    );
    None
}

/// The bash tool forced onto Landlock, or `None` when the kernel lacks it
/// (then the bubblewrap tests must have run).
fn landlock() -> Option<impl Tool> {
    if sandbox::landlock_supported() {
        eprintln!(
            "sandbox: landlock (kernel ABI {})",
            sandbox::landlock_abi_version()
        );
        return Some(Bash::with_sandbox(SandboxKind::Landlock));
    }
    assert!(
        sandbox::bubblewrap_usable() || none_allowed(),
        "neither Landlock nor bubblewrap works here; set {ALLOW_NONE}=1 to skip knowingly"
    );
    rein_test_support::skip(
        rein_test_support::Component::Landlock,
        "not supported by this kernel",
    );
    None
}

fn policy(mode: SandboxMode) -> SandboxPolicy {
    SandboxPolicy {
        mode,
        ..Default::default()
    }
}

/// A workspace, an "outside" folder holding a file, and the context to
/// call tools with.
struct Sbx {
    env: Env,
    _ws: TempDir,
    ws: PathBuf,
    _out: TempDir,
    out: PathBuf,
}

impl Sbx {
    async fn new() -> Sbx {
        Sbx::with_workspace_in(Path::new(env!("CARGO_TARGET_TMPDIR"))).await
    }

    /// With the workspace under `parent` (the outside folder stays under
    /// the target folder).
    async fn with_workspace_in(parent: &Path) -> Sbx {
        let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let ws_dir = tempfile::Builder::new()
            .prefix("sbx-ws-")
            .tempdir_in(parent)
            .unwrap();
        let out_dir = tempfile::Builder::new()
            .prefix("sbx-out-")
            .tempdir_in(base)
            .unwrap();
        let ws = std::fs::canonicalize(ws_dir.path()).unwrap();
        let out = std::fs::canonicalize(out_dir.path()).unwrap();
        std::fs::write(out.join("existing"), "orig\n").unwrap();
        std::fs::create_dir(out.join("sub")).unwrap();
        std::fs::write(out.join("sub/inner"), "inner\n").unwrap();
        Sbx {
            env: Env::new().await,
            _ws: ws_dir,
            ws,
            _out: out_dir,
            out,
        }
    }

    fn ctx(&self, policy: SandboxPolicy) -> ToolContext {
        self.ctx_with(policy, CancellationToken::new())
    }

    fn ctx_with(&self, policy: SandboxPolicy, cancel: CancellationToken) -> ToolContext {
        let mut ctx = self.env.ctx_with(cancel);
        ctx.workspace = self.ws.clone();
        ctx.sandbox = policy;
        // The outside folder is one the user lets commands read, so the
        // tests prove what happens to a visible folder outside even when
        // the target folder lies in a home (hidden from commands).
        ctx.sandbox.read_paths.push(self.out.clone());
        ctx
    }

    /// Run `command` (with `OUT` and `WS` replaced by the two folders).
    async fn run(&self, tool: &dyn Tool, policy: &SandboxPolicy, command: &str) -> ToolOutput {
        let command = self.expand(command);
        self.env
            .call_with(
                tool,
                json!({ "command": command }),
                self.ctx(policy.clone()),
            )
            .await
            .unwrap()
    }

    /// Run `command` and return its output, which must end in exit code 0.
    async fn ok(&self, tool: &dyn Tool, policy: &SandboxPolicy, command: &str) -> String {
        let out = self.run(tool, policy, command).await;
        assert!(!out.is_error, "{command}: {}", out.content);
        assert_eq!(
            exit_code(&out.content),
            Some(0),
            "{command}: {}",
            out.content
        );
        out.content
    }

    /// Run `command`, which must fail (non-zero exit), and return its output.
    async fn fails(&self, tool: &dyn Tool, policy: &SandboxPolicy, command: &str) -> String {
        let out = self.run(tool, policy, command).await;
        let code = exit_code(&out.content);
        assert!(
            code.is_some_and(|c| c != 0),
            "`{command}` should have failed: {}",
            out.content
        );
        out.content
    }

    fn expand(&self, command: &str) -> String {
        command
            .replace("OUT", &self.out.display().to_string())
            .replace("WS", &self.ws.display().to_string())
    }

    fn ws(&self, rel: &str) -> PathBuf {
        self.ws.join(rel)
    }

    fn write(&self, rel: &str, content: &str) {
        let path = self.ws(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
}

/// The exit code the bash tool reports on its last line.
fn exit_code(output: &str) -> Option<i32> {
    let last = output.lines().last()?;
    last.strip_prefix("[exit code: ")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// Every entry under `root` with its content (files), target (symlinks) or
/// nothing (folders), to compare before and after.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, String> {
    fn walk(root: &Path, dir: &Path, map: &mut BTreeMap<PathBuf, String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                map.insert(rel, format!("link -> {}", target.display()));
            } else if meta.is_dir() {
                map.insert(rel, "dir".into());
                walk(root, &path, map);
            } else {
                let content = std::fs::read(&path).unwrap();
                map.insert(rel, format!("file {}", String::from_utf8_lossy(&content)));
            }
        }
    }
    let mut map = BTreeMap::new();
    if root.exists() {
        map.insert(PathBuf::new(), "root".into());
    }
    walk(root, root, &mut map);
    map
}

fn have(program: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {program} >/dev/null")])
        .status()
        .is_ok_and(|s| s.success())
}

/// A number no other test (or earlier run) uses, for markers.
fn unique() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    (std::process::id() % 10_000) * 100 + n
}

/// The processes whose command line contains `needle`.
fn processes(needle: &str) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let line = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            line.trim_end().contains(needle).then_some(pid)
        })
        .collect()
}

fn process_running(needle: &str) -> bool {
    !processes(needle).is_empty()
}
