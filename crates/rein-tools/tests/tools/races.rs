//! Check-then-open races and hard links: a command swapping a folder and a
//! symlink in a loop while the model calls the file tools through the real
//! gate, and hard links to outside files already in the workspace.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rein_core::{
    CancellationToken, Gate, GateLimits, InMemorySessionStore, PermissionMode, Permissions,
    RunPolicy, ToolCall, ToolContext, no_events,
};
use serde_json::json;

/// Every entry under `root`, without following symlinks: its kind, link
/// count and content (files) or target (symlinks).
fn snapshot(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let path = e.path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let what = if meta.is_symlink() {
                format!("link -> {}", std::fs::read_link(&path).unwrap().display())
            } else if meta.is_dir() {
                stack.push(path.clone());
                "dir".to_string()
            } else {
                let content = std::fs::read(&path).unwrap_or_default();
                format!(
                    "file nlink={} {}",
                    meta.nlink(),
                    String::from_utf8_lossy(&content)
                )
            };
            out.push(format!("{}: {what}", path.display()));
        }
    }
    out.sort();
    out
}

const SECRET: &str = "OUTSIDE-SECRET-7f3a9c";
/// The name of a file only the outside folder has.
const SECRET_NAME: &str = "outside-only-name-4d2e.txt";

/// Swap `a` and `b` atomically (`renameat2(RENAME_EXCHANGE)`).
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    let ca = CString::new(a.as_os_str().as_bytes()).unwrap();
    let cb = CString::new(b.as_os_str().as_bytes()).unwrap();
    // SAFETY: two valid NUL-terminated paths; the result is checked.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// A workspace with a real folder `d` (holding `x`) and a symlink `l`, and
/// a thread exchanging the two until stopped: half the time `d` is the
/// symlink.
struct Swapper {
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Swapper {
    fn start(ws: &Path, link_target: &Path) -> Swapper {
        std::fs::create_dir(ws.join("d")).unwrap();
        std::fs::write(ws.join("d/x"), "inside\n").unwrap();
        symlink(link_target, ws.join("l")).unwrap();
        let (a, b) = (ws.join("d"), ws.join("l"));
        exchange(&a, &b).expect("renameat2(RENAME_EXCHANGE) works on this filesystem");
        exchange(&a, &b).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicU64::new(0));
        let (s, n) = (stop.clone(), swaps.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                exchange(&a, &b).unwrap();
                n.fetch_add(1, Ordering::Relaxed);
            }
        });
        Swapper {
            stop,
            swaps,
            thread: Some(thread),
        }
    }

    /// Stop swapping; the number of swaps made.
    fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        self.swaps.load(Ordering::Relaxed)
    }
}

impl Drop for Swapper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

struct Race {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    out: PathBuf,
    gate: Gate,
    policy: RunPolicy,
    store: Arc<InMemorySessionStore>,
}

impl Race {
    fn new() -> Race {
        let dir = tempfile::Builder::new()
            .prefix("race-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let ws = base.join("ws");
        let out = base.join("outside");
        std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
        std::fs::create_dir_all(out.join("dir")).unwrap();
        std::fs::write(out.join("dir/x"), format!("{SECRET}\n")).unwrap();
        std::fs::write(out.join("dir").join(SECRET_NAME), format!("{SECRET}\n")).unwrap();
        let mut perms = Permissions::new(PermissionMode::Auto);
        perms.home = None;
        Race {
            _dir: dir,
            ws,
            out,
            gate: Gate::new(rein_tools::builtin_tools(), GateLimits::default()),
            policy: RunPolicy::new(PermissionMode::Auto, perms),
            store: Arc::new(InMemorySessionStore::new()),
        }
    }

    /// One call through the gate: (is_error, output).
    async fn call(&self, i: usize, tool: &str, args: serde_json::Value) -> (bool, String) {
        let call = ToolCall {
            id: format!("c{i}"),
            name: tool.into(),
            arguments: args.to_string(),
        };
        let ctx = ToolContext {
            workspace: self.ws.clone(),
            session_id: "race".into(),
            call_id: call.id.clone(),
            cancel: CancellationToken::new(),
            session: rein_core::SessionHandle::new(self.store.clone(), "race"),
            sandbox: Default::default(),
            read_roots: Vec::new(),
            events: None,
        };
        let r = self
            .gate
            .run(&call, ctx, &self.policy, &no_events())
            .await
            .result;
        (r.is_error, r.output)
    }
}

/// Calls made while the swapper runs: enough for the old by-name opens to
/// lose the race many times over, few enough for a few seconds in CI.
const ROUNDS: usize = 400;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swapping_a_folder_and_a_symlink_never_leads_writes_or_reads_outside() {
    let r = Race::new();
    let outside_before = snapshot(&r.out);
    let swapper = Swapper::start(&r.ws, &r.out.join("dir"));
    let (mut wrote, mut read, mut leaks) = (0, 0, Vec::new());
    for i in 0..ROUNDS {
        let content = format!("written {i}\n");
        let (err, out) = r
            .call(i, "write_file", json!({"path": "d/x", "content": content}))
            .await;
        wrote += usize::from(!err);
        let (err, out2) = r.call(i, "read_file", json!({"path": "d/x"})).await;
        read += usize::from(!err);
        let (_, out3) = r
            .call(i, "grep", json!({"pattern": "SECRET|written", "path": "d"}))
            .await;
        let (_, out4) = r
            .call(i, "glob", json!({"pattern": "*", "path": "d"}))
            .await;
        for o in [out, out2, out3, out4] {
            if o.contains(SECRET) || o.contains(SECRET_NAME) {
                leaks.push(o);
            }
        }
    }
    let swaps = swapper.stop();
    let outside_after = snapshot(&r.out);
    eprintln!("{swaps} swaps; {wrote} writes and {read} reads of {ROUNDS} went through");
    assert!(
        swaps >= 1000,
        "only {swaps} swaps: the race did not really run"
    );
    assert!(
        leaks.is_empty(),
        "{} outputs showed an outside file or its name, e.g. {:?}",
        leaks.len(),
        leaks.first()
    );
    assert_eq!(
        outside_before, outside_after,
        "written outside the workspace"
    );
    // The tools did work inside on the calls that did not meet a swap.
    assert!(wrote > 0 && read > 0, "{wrote} writes, {read} reads");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swapping_a_folder_and_a_symlink_to_dot_git_never_writes_git_metadata() {
    let r = Race::new();
    let git_before = snapshot(&r.ws.join(".git"));
    // `l` points at `.git` inside the workspace: not outside, but protected.
    let swapper = Swapper::start(&r.ws, Path::new(".git"));
    let mut wrote = 0;
    for i in 0..ROUNDS {
        let (err, _) = r
            .call(
                i,
                "write_file",
                json!({"path": "d/config", "content": "[core]\n\tfsmonitor = evil\n"}),
            )
            .await;
        wrote += usize::from(!err);
        let (err, _) = r
            .call(
                i,
                "write_file",
                json!({"path": "d/hooks/pre-commit", "content": "evil\n"}),
            )
            .await;
        wrote += usize::from(!err);
    }
    let swaps = swapper.stop();
    eprintln!("{swaps} swaps; {wrote} writes went through");
    assert!(
        swaps >= 1000,
        "only {swaps} swaps: the race did not really run"
    );
    let git_after = snapshot(&r.ws.join(".git"));
    assert_eq!(git_before, git_after, "git metadata changed");
}

#[tokio::test]
async fn write_file_replaces_a_hard_link_to_an_outside_file_instead_of_writing_through() {
    let r = Race::new();
    let outside = r.out.join("dir/x");
    std::fs::hard_link(&outside, r.ws.join("h")).unwrap();
    let (err, out) = r
        .call(0, "write_file", json!({"path": "h", "content": "new\n"}))
        .await;
    assert!(!err, "{out}");
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        format!("{SECRET}\n")
    );
    assert_eq!(std::fs::metadata(&outside).unwrap().nlink(), 1);
    assert_eq!(std::fs::read_to_string(r.ws.join("h")).unwrap(), "new\n");
    assert_eq!(std::fs::metadata(r.ws.join("h")).unwrap().nlink(), 1);
}

#[tokio::test]
async fn edit_file_replaces_a_hard_link_to_an_outside_file_instead_of_writing_through() {
    let r = Race::new();
    let outside = r.out.join("dir/x");
    std::fs::hard_link(&outside, r.ws.join("h")).unwrap();
    let (err, out) = r
        .call(
            0,
            "edit_file",
            json!({"path": "h", "old_string": "SECRET", "new_string": "PUBLIC"}),
        )
        .await;
    assert!(!err, "{out}");
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        format!("{SECRET}\n")
    );
    assert_eq!(
        std::fs::read_to_string(r.ws.join("h")).unwrap(),
        "OUTSIDE-PUBLIC-7f3a9c\n"
    );
}
