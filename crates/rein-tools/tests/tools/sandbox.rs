//! The shell sandbox, for real: bubblewrap, and Landlock forced per call.
//!
//! Every test prints which sandbox ran. A machine with no sandbox at all
//! fails these tests unless `REIN_ALLOW_NO_SANDBOX=1` is set: CI installs
//! bubblewrap, and a silent skip would hide a broken setup.
//!
//! The workspace and the "outside" folder both live under the target
//! folder (not /tmp, which is private under bubblewrap and writable under
//! Landlock), on one filesystem, so hard links between them are possible.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use rein_core::{CancellationToken, SandboxMode, SandboxPolicy, Tool, ToolContext, ToolOutput};
use rein_tools::Bash;
use rein_tools::bash::bash_is_sandboxed;
use rein_tools::sandbox::{self, SandboxKind};
use serde_json::json;
use tempfile::TempDir;

use crate::common::Env;

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
    eprintln!("sandbox: none (bubblewrap not usable; skipped because {ALLOW_NONE}=1)");
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
    eprintln!("landlock: not supported by this kernel");
    assert!(
        sandbox::bubblewrap_usable() || none_allowed(),
        "neither Landlock nor bubblewrap works here; set {ALLOW_NONE}=1 to skip knowingly"
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

/// Commands that try to write outside the workspace; each must fail.
fn escape_commands() -> Vec<&'static str> {
    let mut cmds = vec![
        "touch OUT/x",
        "echo x > OUT/x",
        "echo x >> OUT/existing",
        "cd / && touch OUT/y",
        "ln -s OUT link && echo x > link/z",
        "echo data > f; cp f OUT/",
        "rm -rf OUT",
        "rm OUT/existing",
        "echo data > f; mv f OUT/",
        "mv OUT/existing WS/",
        "echo x | tee OUT/t",
        "echo x > /proc/self/root/OUT/q",
        "mkdir OUT/newdir",
        "ln OUT/existing WS/h && echo y >> WS/h",
        "mount -o remount,rw / && touch OUT/m",
    ];
    if have("python3") {
        cmds.push("python3 -c \"open('OUT/p', 'w')\"");
    } else {
        eprintln!("python3 not found: its escape case is skipped");
    }
    cmds
}

/// `metadata`: whether changing only times or modes is refused too
/// (bubblewrap's read-only mounts do; Landlock has no right for it).
async fn writes_outside_fail(tool: &dyn Tool, metadata: bool) {
    use std::os::unix::fs::PermissionsExt;
    let sbx = Sbx::new().await;
    let before = snapshot(&sbx.out);
    let mode = || {
        std::fs::metadata(sbx.out.join("existing"))
            .unwrap()
            .permissions()
            .mode()
    };
    let before_mode = mode();
    let p = policy(SandboxMode::WorkspaceWrite);
    let mut cmds = escape_commands();
    if metadata {
        cmds.extend(["touch OUT/existing", "chmod 777 OUT/existing"]);
    }
    for cmd in cmds {
        sbx.fails(tool, &p, cmd).await;
        assert_eq!(snapshot(&sbx.out), before, "`{cmd}` changed the outside");
        assert_eq!(mode(), before_mode, "`{cmd}` changed the outside");
    }
    // The hard link was refused, not made.
    assert!(!sbx.ws("h").exists());
    assert!(sbx.out.join("existing").exists());
}

async fn workspace_writes_work(tool: &dyn Tool) -> Sbx {
    let sbx = Sbx::new().await;
    let before = snapshot(&sbx.out);
    let p = policy(SandboxMode::WorkspaceWrite);
    let out = sbx
        .ok(
            tool,
            &p,
            "echo x > f && mkdir -p a/b && touch a/b/c && sed -i s/x/y/ f && cat f && \
             echo more >> f && mv f g && ln g h && ln -s g s && rm h && cat s",
        )
        .await;
    assert!(out.starts_with("y\ny\nmore\n"), "{out}");
    assert_eq!(std::fs::read_to_string(sbx.ws("g")).unwrap(), "y\nmore\n");
    assert!(sbx.ws("a/b/c").is_file());
    assert!(!sbx.ws("h").exists());
    if have("python3") {
        sbx.ok(tool, &p, "python3 -c \"open('p', 'w').write('py')\"")
            .await;
        assert_eq!(std::fs::read_to_string(sbx.ws("p")).unwrap(), "py");
    }
    // Standard streams reopened by path, and /dev/null, still work.
    let out = sbx
        .ok(
            tool,
            &p,
            "echo to-stderr > /dev/stderr; echo gone > /dev/null",
        )
        .await;
    assert!(out.contains("to-stderr"), "{out}");
    assert_eq!(snapshot(&sbx.out), before);
    sbx
}

/// `metadata`: whether changing only times or modes is refused too
/// (bubblewrap's read-only mounts do; Landlock has no right for it).
async fn read_only_changes_nothing(tool: &dyn Tool, sbx: &Sbx, metadata: bool) {
    sbx.write("f", "alpha\n");
    sbx.write("d/g", "beta\n");
    let before_ws = snapshot(&sbx.ws);
    let before_out = snapshot(&sbx.out);
    let p = policy(SandboxMode::ReadOnly);
    let mut cmds = vec![
        "echo x > f",
        "echo x > new",
        "touch new",
        "sed -i s/alpha/omega/ f",
        "echo x | tee t",
        "mkdir m",
        "rm f",
        "rm -rf d",
        "mv f f2",
        "ln -s f s",
        "ln f hl",
        "truncate -s 0 f",
        "touch OUT/x",
    ];
    if have("python3") {
        cmds.push("python3 -c \"open('f', 'w').write('py')\"");
    }
    if metadata {
        cmds.extend(["touch f", "chmod 600 f"]);
    }
    for cmd in cmds {
        sbx.fails(tool, &p, cmd).await;
        assert_eq!(
            snapshot(&sbx.ws),
            before_ws,
            "`{cmd}` changed the workspace"
        );
        assert_eq!(
            snapshot(&sbx.out),
            before_out,
            "`{cmd}` changed the outside"
        );
    }
    let out = sbx
        .ok(tool, &p, "cat f && ls && grep -r beta . && wc -l d/g")
        .await;
    assert!(out.starts_with("alpha\nd\nf\n./d/g:beta\n1 d/g\n"), "{out}");
}

async fn network(tool: &dyn Tool, sbx: &Sbx) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let mut p = policy(SandboxMode::WorkspaceWrite);
    let out = sbx.fails(tool, &p, &connect).await;
    assert!(!out.contains("connected"), "{out}");
    p.network = true;
    let out = sbx.ok(tool, &p, &connect).await;
    assert!(out.starts_with("connected\n"), "{out}");
    drop(listener);
}

async fn privileges_dropped(tool: &dyn Tool, sbx: &Sbx) {
    let p = policy(SandboxMode::WorkspaceWrite);
    let out = sbx
        .ok(tool, &p, "grep -E '^Cap(Eff|Prm|Amb)' /proc/self/status")
        .await;
    for line in out.lines().filter(|l| l.starts_with("Cap")) {
        assert!(line.ends_with("0000000000000000"), "{out}");
    }
    sbx.fails(tool, &p, "mount -t tmpfs none WS").await;
}

/// A process of the host (here a `sleep` of the test's own) cannot be
/// signalled from inside.
async fn signals_cannot_reach_outside(tool: &dyn Tool) {
    let sbx = Sbx::new().await;
    let mut victim = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = victim.id();
    sbx.fails(
        tool,
        &policy(SandboxMode::WorkspaceWrite),
        &format!("kill -KILL {pid}"),
    )
    .await;
    let alive = victim.try_wait().unwrap().is_none();
    victim.kill().unwrap();
    victim.wait().unwrap();
    assert!(alive, "a command inside the sandbox killed a host process");
}

/// Kill semantics: a timeout and a cancel both take down every process the
/// command started, and dropping the call does too. `setsid`: whether a
/// process that left the group (possible only with a PID namespace) is
/// among them.
async fn kills_everything(tool: &dyn Tool, setsid: bool) {
    let sbx = Sbx::new().await;
    let p = policy(SandboxMode::WorkspaceWrite);

    let marker = format!("30.{}", unique());
    let started = Instant::now();
    let escapee = if setsid {
        format!("setsid sleep {marker} & ")
    } else {
        String::new()
    };
    let command =
        format!("echo begun; sleep {marker} & (sleep 2; touch after) & {escapee}sleep {marker}");
    let out = sbx
        .env
        .call_with(
            tool,
            json!({"command": command, "timeout_secs": 1}),
            sbx.ctx(p.clone()),
        )
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(out.is_error, "{}", out.content);
    assert!(out.content.starts_with("begun\n"), "{}", out.content);
    assert!(
        out.content.contains("timed out after 1 s"),
        "{}",
        out.content
    );

    let marker2 = format!("30.{}", unique());
    let cancel = CancellationToken::new();
    let ctx = sbx.ctx_with(p.clone(), cancel.clone());
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let command = format!("echo started; (sleep 2; touch after2) & sleep {marker2}");
    let out = sbx
        .env
        .call_with(tool, json!({"command": command}), ctx)
        .await
        .unwrap();
    canceller.await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(out.is_error, "{}", out.content);
    assert!(out.content.contains("cancelled"), "{}", out.content);

    let marker3 = format!("30.{}", unique());
    let command = format!("(sleep 2; touch after3) & sleep {marker3}");
    let call = sbx
        .env
        .call_with(tool, json!({"command": command}), sbx.ctx(p.clone()));
    assert!(
        tokio::time::timeout(Duration::from_millis(500), call)
            .await
            .is_err()
    );

    tokio::time::sleep(Duration::from_millis(2500)).await;
    for file in ["after", "after2", "after3"] {
        assert!(!sbx.ws(file).exists(), "{file}: a process survived");
    }
    for m in [&marker, &marker2, &marker3] {
        assert!(
            !process_running(&format!("sleep {m}")),
            "sleep {m} survived"
        );
    }
}

// ---------------------------------------------------------------- bubblewrap

#[tokio::test]
async fn bwrap_workspace_writes_work() {
    let Some(tool) = bwrap() else { return };
    workspace_writes_work(&tool).await;
}

#[tokio::test]
async fn bwrap_git_works_while_its_hooks_stay_read_only() {
    let Some(tool) = bwrap() else { return };
    if !have("git") {
        eprintln!("git not found: skipped");
        return;
    }
    let sbx = Sbx::new().await;
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(&sbx.ws)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    let hook = sbx.ws(".git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let hooks = snapshot(&sbx.ws(".git/hooks"));
    let p = policy(SandboxMode::WorkspaceWrite);
    let out = sbx
        .ok(
            &tool,
            &p,
            "echo x > f && git add f && git -c user.name=t -c user.email=t@t commit -q -m one \
             && git log --oneline | wc -l",
        )
        .await;
    assert!(out.starts_with("1\n"), "{out}");
    sbx.fails(&tool, &p, "echo evil > .git/hooks/post-checkout")
        .await;
    assert_eq!(snapshot(&sbx.ws(".git/hooks")), hooks);
}

#[tokio::test]
async fn bwrap_workspace_under_tmp_stays_shared_and_tmp_is_private() {
    let Some(tool) = bwrap() else { return };
    let sbx = Sbx::with_workspace_in(Path::new("/tmp")).await;
    let leak = format!("/tmp/rein-sandbox-leak-{}", unique());
    let command =
        format!("echo in > f && echo private > {leak} && cat {leak} && ls -A /tmp | wc -l");
    let out = sbx
        .ok(&tool, &policy(SandboxMode::WorkspaceWrite), &command)
        .await;
    // Inside, /tmp holds only the workspace's mount point path and the file.
    assert!(out.starts_with("private\n2\n"), "{out}");
    assert_eq!(std::fs::read_to_string(sbx.ws("f")).unwrap(), "in\n");
    assert!(
        !Path::new(&leak).exists(),
        "the private /tmp leaked to the host"
    );
}

#[tokio::test]
async fn bwrap_writes_outside_the_workspace_fail() {
    let Some(tool) = bwrap() else { return };
    writes_outside_fail(&tool, true).await;
}

#[tokio::test]
async fn bwrap_hard_links_to_outside_files_cannot_be_made_but_old_ones_write_through() {
    let Some(tool) = bwrap() else { return };
    use std::os::unix::fs::MetadataExt;
    let sbx = Sbx::new().await;
    // Same filesystem: only the sandbox's mount boundary can refuse the link.
    assert_eq!(
        std::fs::metadata(&sbx.ws).unwrap().dev(),
        std::fs::metadata(&sbx.out).unwrap().dev()
    );
    let p = policy(SandboxMode::WorkspaceWrite);
    let out = sbx
        .fails(&tool, &p, "ln OUT/existing WS/h && echo y >> WS/h")
        .await;
    assert!(out.contains("Invalid cross-device link"), "{out}");
    assert!(!sbx.ws("h").exists());
    assert_eq!(
        std::fs::read_to_string(sbx.out.join("existing")).unwrap(),
        "orig\n"
    );

    // Known limit: a hard link that already exists in the workspace (made
    // outside the sandbox) is the same file, and the workspace is writable.
    std::fs::write(sbx.out.join("linked"), "orig\n").unwrap();
    std::fs::hard_link(sbx.out.join("linked"), sbx.ws("pre")).unwrap();
    sbx.ok(&tool, &p, "echo y >> pre").await;
    assert_eq!(
        std::fs::read_to_string(sbx.out.join("linked")).unwrap(),
        "orig\ny\n"
    );
}

#[tokio::test]
async fn bwrap_git_hooks_rein_and_read_only_paths_cannot_be_changed_or_replaced() {
    let Some(tool) = bwrap() else { return };
    let sbx = Sbx::new().await;
    sbx.write(".git/hooks/pre-commit", "#!/bin/sh\nexit 0\n");
    sbx.write(".git/HEAD", "ref: refs/heads/main\n");
    sbx.write(".rein/state.json", "{}\n");
    sbx.write("data/keep.txt", "keep\n");
    sbx.write("data/other.txt", "other\n");
    let mut p = policy(SandboxMode::WorkspaceWrite);
    p.read_only = vec![sbx.ws("data/keep.txt")];
    let protected = || {
        [".git/hooks", ".rein", "data/keep.txt"]
            .iter()
            .map(|rel| {
                (
                    rel.to_string(),
                    snapshot(&sbx.ws(rel)),
                    sbx.ws(rel)
                        .is_file()
                        .then(|| std::fs::read_to_string(sbx.ws(rel)).unwrap()),
                )
            })
            .collect::<Vec<_>>()
    };
    let before = protected();
    for cmd in [
        "echo evil > .git/hooks/pre-commit",
        "touch .git/hooks/post-checkout",
        "rm .git/hooks/pre-commit",
        "rm -rf .git/hooks",
        "mv .git/hooks .git/h2",
        "mv .git .git2",
        "rm -rf .git",
        "echo x > .rein/state.json",
        "touch .rein/new",
        "rm -rf .rein",
        "mv .rein .rein2",
        "echo x >> data/keep.txt",
        "rm data/keep.txt",
        "mv data/keep.txt data/moved",
        "mv data data2",
        "ln -sf /etc/passwd data/keep.txt",
    ] {
        sbx.fails(&tool, &p, cmd).await;
        assert_eq!(protected(), before, "`{cmd}` changed a protected path");
    }
    assert!(!sbx.ws(".git2").exists());
    assert!(!sbx.ws(".rein2").exists());
    assert!(!sbx.ws("data2").exists());
    // The rest of .git and of the folder stays writable.
    sbx.ok(
        &tool,
        &p,
        "echo x > .git/other && echo y > data/other.txt && rm data/other.txt",
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(sbx.ws(".git/other")).unwrap(),
        "x\n"
    );
}

#[tokio::test]
async fn bwrap_hidden_paths_cannot_be_read_or_written() {
    let Some(tool) = bwrap() else { return };
    let sbx = Sbx::new().await;
    let home = sbx.out.join("home");
    let secret = format!("PRIVATE-KEY-MATERIAL-{}", unique());
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), &secret).unwrap();
    std::fs::write(home.join(".netrc"), &secret).unwrap();
    std::fs::write(home.join("visible.txt"), "visible\n").unwrap();
    let mut p = policy(SandboxMode::WorkspaceWrite);
    p.hidden = vec![home.join(".ssh"), home.join(".netrc"), home.join("missing")];
    let before = snapshot(&sbx.out);
    let h = home.display();
    for cmd in [
        format!("cat {h}/.ssh/id_rsa"),
        format!("cat {h}/.netrc | grep PRIVATE"),
        format!("grep -r PRIVATE {h}"),
        format!("cp {h}/.ssh/id_rsa WS/stolen && grep PRIVATE WS/stolen"),
        format!("tar cf - {h} 2>/dev/null | grep -a PRIVATE"),
        format!("touch {h}/.ssh/new"),
    ] {
        let out = sbx.fails(&tool, &p, &cmd).await;
        assert!(!out.contains(&secret), "`{cmd}` read a hidden file: {out}");
    }
    let out = sbx
        .ok(
            &tool,
            &p,
            &format!("ls -A {h}/.ssh | wc -l; cat {h}/visible.txt"),
        )
        .await;
    assert!(out.starts_with("0\nvisible\n"), "{out}");
    assert_eq!(snapshot(&sbx.out), before);
}

/// Unix sockets stay connectable through read-only mounts and a new
/// network namespace; a hidden one is not.
#[tokio::test]
async fn bwrap_hidden_sockets_cannot_be_connected() {
    let Some(tool) = bwrap() else { return };
    if !have("python3") {
        eprintln!("python3 not found: skipped");
        return;
    }
    let sbx = Sbx::new().await;
    let hidden = sbx.out.join("hidden.sock");
    let open = sbx.out.join("open.sock");
    let _l1 = std::os::unix::net::UnixListener::bind(&hidden).unwrap();
    let _l2 = std::os::unix::net::UnixListener::bind(&open).unwrap();
    let mut p = policy(SandboxMode::WorkspaceWrite);
    p.hidden = vec![hidden.clone()];
    let connect = |path: &Path| {
        format!(
            "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); \
             s.connect('{}'); print('connected')\"",
            path.display()
        )
    };
    let out = sbx.ok(&tool, &p, &connect(&open)).await;
    assert!(out.starts_with("connected\n"), "{out}");
    let out = sbx.fails(&tool, &p, &connect(&hidden)).await;
    assert!(!out.contains("connected\n"), "{out}");
}

#[tokio::test]
async fn bwrap_read_only_mode_changes_nothing_but_reads_work() {
    let Some(tool) = bwrap() else { return };
    let sbx = Sbx::new().await;
    read_only_changes_nothing(&tool, &sbx, true).await;
    // The private /tmp stays writable.
    let p = policy(SandboxMode::ReadOnly);
    let out = sbx.ok(&tool, &p, "echo t > /tmp/t && cat /tmp/t").await;
    assert!(out.starts_with("t\n"), "{out}");
}

#[tokio::test]
async fn bwrap_network_is_off_unless_allowed() {
    let Some(tool) = bwrap() else { return };
    let sbx = Sbx::new().await;
    network(&tool, &sbx).await;
}

#[tokio::test]
async fn bwrap_commands_have_no_capabilities() {
    let Some(tool) = bwrap() else { return };
    let sbx = Sbx::new().await;
    privileges_dropped(&tool, &sbx).await;
}

#[tokio::test]
async fn bwrap_background_processes_do_not_outlive_the_call() {
    let Some(tool) = bwrap() else { return };
    let sbx = Sbx::new().await;
    let p = policy(SandboxMode::WorkspaceWrite);
    let marker = format!("30.{}", unique());
    let started = Instant::now();
    let command = format!(
        "(sleep 1; touch WS/late) > /dev/null 2>&1 & \
         nohup sh -c 'sleep 1; touch WS/late2' > /dev/null 2>&1 & \
         setsid sh -c 'sleep 1; touch WS/late3' > /dev/null 2>&1 & \
         (sleep {marker} > /dev/null 2>&1 &) ; \
         disown -a; echo started"
    );
    let out = sbx.ok(&tool, &p, &command).await;
    assert!(out.starts_with("started\n"), "{out}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for file in ["late", "late2", "late3"] {
        assert!(
            !sbx.ws(file).exists(),
            "{file}: a background process outlived the call"
        );
    }
    assert!(!process_running(&format!("sleep {marker}")));
}

#[tokio::test]
async fn bwrap_host_processes_cannot_be_signalled() {
    let Some(tool) = bwrap() else { return };
    signals_cannot_reach_outside(&tool).await;
}

#[tokio::test]
async fn bwrap_timeout_cancel_and_drop_kill_everything_inside() {
    let Some(tool) = bwrap() else { return };
    kills_everything(&tool, true).await;
}

// ------------------------------------------------------------------ Landlock

#[tokio::test]
async fn landlock_workspace_writes_work() {
    let Some(tool) = landlock() else { return };
    workspace_writes_work(&tool).await;
}

#[tokio::test]
async fn landlock_writes_outside_the_workspace_fail() {
    let Some(tool) = landlock() else { return };
    writes_outside_fail(&tool, false).await;
}

#[tokio::test]
async fn landlock_read_only_mode_changes_nothing_but_reads_work() {
    let Some(tool) = landlock() else { return };
    let sbx = Sbx::new().await;
    read_only_changes_nothing(&tool, &sbx, false).await;
}

/// Known limit: Landlock has no right for metadata, so times and modes of
/// files anywhere (that the user owns) can still change.
#[tokio::test]
async fn landlock_known_limit_metadata_outside_can_change() {
    use std::os::unix::fs::PermissionsExt;
    let Some(tool) = landlock() else { return };
    let sbx = Sbx::new().await;
    let file = sbx.out.join("existing");
    sbx.ok(
        &tool,
        &policy(SandboxMode::WorkspaceWrite),
        "touch -d 2001-01-01 OUT/existing && chmod 600 OUT/existing",
    )
    .await;
    let meta = std::fs::metadata(&file).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "orig\n");
}

#[tokio::test]
async fn landlock_read_only_mode_keeps_a_workspace_under_tmp_read_only() {
    let Some(tool) = landlock() else { return };
    let sbx = Sbx::with_workspace_in(Path::new("/tmp")).await;
    sbx.write("f", "a\n");
    let p = policy(SandboxMode::ReadOnly);
    sbx.fails(&tool, &p, "echo x > f").await;
    sbx.fails(&tool, &p, "touch g").await;
    let out = sbx.ok(&tool, &p, "cat f").await;
    assert!(out.starts_with("a\n"), "{out}");
    assert_eq!(std::fs::read_to_string(sbx.ws("f")).unwrap(), "a\n");
    assert!(!sbx.ws("g").exists());
}

#[tokio::test]
async fn landlock_tcp_is_refused_unless_the_network_is_allowed() {
    let Some(tool) = landlock() else { return };
    if sandbox::landlock_abi_version() < 4 {
        eprintln!("landlock: this kernel cannot restrict TCP (ABI < 4): skipped");
        return;
    }
    let sbx = Sbx::new().await;
    network(&tool, &sbx).await;
}

#[tokio::test]
async fn landlock_commands_have_no_capabilities() {
    let Some(tool) = landlock() else { return };
    let sbx = Sbx::new().await;
    privileges_dropped(&tool, &sbx).await;
}

#[tokio::test]
async fn landlock_host_processes_cannot_be_signalled() {
    let Some(tool) = landlock() else { return };
    if sandbox::landlock_abi_version() < 6 {
        eprintln!("landlock: this kernel cannot scope signals (ABI < 6): skipped");
        return;
    }
    signals_cannot_reach_outside(&tool).await;
}

#[tokio::test]
async fn landlock_timeout_cancel_and_drop_kill_everything() {
    let Some(tool) = landlock() else { return };
    kills_everything(&tool, false).await;
}

/// Without a PID namespace, a process that makes its own session leaves
/// the command's process group: where rein can make a cgroup per command,
/// it is killed with the cgroup all the same; elsewhere it outlives the
/// call (a known limit).
#[tokio::test]
async fn landlock_a_new_session_dies_with_the_cgroup_or_is_a_known_limit() {
    let Some(tool) = landlock() else { return };
    let sbx = Sbx::new().await;
    let marker = format!("30.{}", unique());
    let command = format!("setsid sleep {marker} > /dev/null 2>&1 & echo started");
    sbx.ok(&tool, &policy(SandboxMode::WorkspaceWrite), &command)
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pids = processes(&format!("sleep {marker}"));
    let cgroup = sandbox::cgroup_available();
    eprintln!("cgroup per command: {cgroup}");
    let expected = if cgroup { 0 } else { 1 };
    assert_eq!(
        pids.len(),
        expected,
        "escaped sleeps still running: {pids:?}"
    );
    for pid in pids {
        // SAFETY: kill only signals the process this test started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

// ------------------------------------------------- every mode, the default

#[tokio::test]
async fn the_default_bash_tool_uses_the_sandbox_this_machine_offers() {
    let kind = sandbox::available();
    eprintln!("sandbox: {}", sandbox::describe(kind));
    if kind == SandboxKind::None {
        assert!(
            none_allowed(),
            "no sandbox works here; install bubblewrap, or set {ALLOW_NONE}=1 to skip knowingly"
        );
        return;
    }
    let sbx = Sbx::new().await;
    let p = policy(SandboxMode::WorkspaceWrite);
    assert!(bash_is_sandboxed(&p));
    assert!(bash_is_sandboxed(&policy(SandboxMode::ReadOnly)));
    sbx.ok(&Bash, &p, "echo x > f").await;
    sbx.fails(&Bash, &p, "touch OUT/x").await;
    assert!(!sbx.out.join("x").exists());
    // Off runs plainly: the outside is writable.
    sbx.ok(&Bash, &policy(SandboxMode::Off), "touch OUT/x")
        .await;
    assert!(sbx.out.join("x").exists());
}

#[test]
fn off_never_needs_a_sandbox() {
    assert!(bash_is_sandboxed(&policy(SandboxMode::Off)));
    assert_eq!(
        bash_is_sandboxed(&policy(SandboxMode::WorkspaceWrite)),
        sandbox::available() != SandboxKind::None
    );
}

/// Only allowlisted variables (and those the user names in `env_allow`)
/// reach a command, sandboxed or not: secret-looking names, and ordinary
/// ones that are not on the list (a database URL), stay out; locale
/// variables pass. (`DATABASE_URL` and `GH_PAT` themselves: the escape
/// corpus.)
#[tokio::test]
async fn only_allowlisted_environment_variables_reach_a_command_in_every_mode() {
    let n = unique();
    let vars = [
        (
            format!("REIN_TEST_SECRET_TOKEN_{n}"),
            format!("hidden-value-a-{n}"),
            false,
        ),
        (
            format!("REIN_TEST_MY_API_KEY_{n}"),
            format!("hidden-value-b-{n}"),
            false,
        ),
        (
            format!("rein_test_db_password_{n}"),
            format!("hidden-value-c-{n}"),
            false,
        ),
        (
            format!("REIN_TEST_ALLOWED_TOKEN_{n}"),
            format!("shown-value-d-{n}"),
            true,
        ),
        (
            format!("REIN_TEST_PLAIN_{n}"),
            format!("hidden-value-e-{n}"),
            false,
        ),
        (
            format!("REIN_TEST_DATABASE_URL_{n}"),
            format!("postgres://u:hidden-value-f-{n}@db"),
            false,
        ),
        (
            format!("LC_REIN_TEST_{}", "X".repeat(n as usize % 5 + 1)),
            format!("shown-value-h-{n}"),
            true,
        ),
    ];
    for (name, value, _) in &vars {
        // SAFETY: the names are unique to this test, and std serialises its
        // own environment reads (spawning included) with writes.
        unsafe { std::env::set_var(name, value) };
    }
    let sbx = Sbx::new().await;
    let mut tools: Vec<(SandboxMode, Box<dyn Tool>)> = vec![(SandboxMode::Off, Box::new(Bash))];
    if let Some(t) = bwrap() {
        tools.push((SandboxMode::WorkspaceWrite, Box::new(t)));
    }
    if let Some(t) = landlock() {
        tools.push((SandboxMode::ReadOnly, Box::new(t)));
    }
    for (mode, tool) in &tools {
        let mut p = policy(*mode);
        p.env_allow = vec![vars[3].0.clone()];
        let out = sbx
            .ok(
                tool.as_ref(),
                &p,
                "env; echo ---; printenv; echo ---; cat /proc/self/environ | tr '\\0' '\\n'; \
                 echo ---; cat /proc/$$/environ | tr '\\0' '\\n'",
            )
            .await;
        for (name, value, shown) in &vars {
            let count = out.matches(value.as_str()).count();
            if *shown {
                assert_eq!(count, 4, "{mode:?}: {name} should pass through: {out}");
            } else {
                assert_eq!(count, 0, "{mode:?}: {name} leaked: {out}");
            }
        }
    }
    for (name, _, _) in &vars {
        // SAFETY: as above.
        unsafe { std::env::remove_var(name) };
    }
}
