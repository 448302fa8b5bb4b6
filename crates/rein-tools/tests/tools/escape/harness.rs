//! The machinery of the corpus: the fixture of a row, snapshots, and the
//! runner that sends each step through the real gate and checks the
//! invariants.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rein_core::{
    CancellationToken, Gate, GateLimits, InMemorySessionStore, NewSession, PermissionMode,
    Permissions, RunPolicy, SessionStore, ToolCall, ToolContext, ToolResult, no_events,
};
use rein_tools::sandbox::{self, SandboxKind};
use serde_json::Value;
use tempfile::TempDir;

use super::{Case, Expect, Step, markers};

/// The folders of one row, all under one temporary base folder in the
/// target folder: `ws` (the workspace, or the fake home), `outside`,
/// `home` and `state` (the fake `REIN_HOME`).
pub struct Fixture {
    _dir: TempDir,
    pub base: PathBuf,
    pub ws: PathBuf,
    pub out: PathBuf,
    pub home: PathBuf,
    pub state: PathBuf,
    /// The home the permissions are given (the fake home unless a row's
    /// setup says otherwise).
    pub perm_home: PathBuf,
}

fn write(path: &Path, content: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

impl Fixture {
    pub fn new(ws_is_home: bool) -> Fixture {
        use std::os::unix::fs::symlink;
        let m = markers();
        let dir = tempfile::Builder::new()
            .prefix("escape-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let out = base.join("outside");
        let home = base.join("home");
        let state = base.join("state");
        let project = base.join("ws");

        write(&out.join("existing.txt"), &format!("{}\n", m.outside));
        write(
            &out.join("sub/inner.txt"),
            &format!("inner {}\n", m.outside),
        );
        write(&out.join("sacrificial"), "keep me\n");
        std::fs::set_permissions(
            out.join("existing.txt"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();

        write(
            &home.join(".ssh/id_rsa"),
            &format!("-----BEGIN KEY-----\n{}\n", m.secret),
        );
        write(
            &home.join(".aws/credentials"),
            &format!("[default]\naws_secret_access_key = {}\n", m.secret),
        );
        write(
            &home.join(".netrc"),
            &format!("machine example password {}\n", m.secret),
        );
        write(&home.join("visible.txt"), "visible\n");
        write(&state.join("settings.json"), "{}\n");
        write(&state.join("sessions.db"), "state\n");

        let ws = if ws_is_home { home.clone() } else { project };
        write(
            &ws.join("src/main.rs"),
            "fn main() {\n    println!(\"hi\");\n}\n",
        );
        write(&ws.join("Cargo.toml"), "[package]\nname = \"demo\"\n");
        write(&ws.join(".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n");
        write(
            &ws.join(".git/config"),
            "[core]\n\trepositoryformatversion = 0\n\tbare = false\n",
        );
        write(&ws.join(".git/HEAD"), "ref: refs/heads/main\n");
        // A repository git recognises, so that git never walks up to the
        // repository the target folder is in.
        std::fs::create_dir_all(ws.join(".git/objects")).unwrap();
        std::fs::create_dir_all(ws.join(".git/refs/heads")).unwrap();
        write(&ws.join(".rein/settings.json"), "{\"permissions\": {}}\n");
        write(&ws.join(".env"), "DATABASE_URL=postgres://local\n");
        // Symlinks inside the workspace that point outside it.
        symlink(out.join("existing.txt"), ws.join("link_file")).unwrap();
        symlink(&out, ws.join("link_dir")).unwrap();
        symlink(ws.join("chain_b"), ws.join("chain_a")).unwrap();
        symlink("link_dir", ws.join("chain_b")).unwrap();
        symlink(out.join("not-yet"), ws.join("dangling")).unwrap();
        symlink(out.join("no-dir"), ws.join("dangling_dir")).unwrap();
        if ws_is_home {
            // A link inside the home-workspace to a credential folder.
            symlink(".ssh", ws.join("sshlink")).unwrap();
        }
        Fixture {
            _dir: dir,
            base,
            ws,
            out,
            perm_home: home.clone(),
            home,
            state,
        }
    }

    /// Replace the placeholders `{ws}`, `{out}`, `{home}`, `{state}` and the
    /// extra ones in every string of `args`.
    fn expand(&self, args: &Value, extra: &[(&str, String)]) -> Value {
        match args {
            Value::String(s) => {
                let mut s = s
                    .replace("{ws}", &self.ws.display().to_string())
                    .replace("{out}", &self.out.display().to_string())
                    .replace("{home}", &self.home.display().to_string())
                    .replace("{state}", &self.state.display().to_string());
                for (k, v) in extra {
                    s = s.replace(k, v);
                }
                Value::String(s)
            }
            Value::Array(a) => Value::Array(a.iter().map(|v| self.expand(v, extra)).collect()),
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, v)| (k.clone(), self.expand(v, extra)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    fn permissions(&self, case: &Case) -> Permissions {
        let mut p = Permissions::new(case.mode);
        p.rules = case.rules.clone();
        p.network = rein_core::NetworkAccess::Off;
        p.state_dir = Some(self.state.clone());
        p.home = Some(self.perm_home.clone());
        // The outside folder is one the user lets commands read (as with
        // `sandbox.read_paths`), so rows prove that a visible folder outside
        // stays unchanged even when the target folder lies in a home, which
        // commands do not see at all.
        p.read_paths = vec![self.out.clone()];
        p
    }

    /// Everything under the base folder except the workspace (when the
    /// workspace is the home, its credential files are protected paths
    /// instead).
    pub fn outside_snapshot(&self) -> Snapshot {
        snapshot(&self.base, Some(&self.ws))
    }

    fn protected_snapshot(&self) -> Vec<(String, Snapshot)> {
        PROTECTED_PATHS
            .iter()
            .map(|rel| (rel.to_string(), snapshot(&self.ws.join(rel), None)))
            .collect()
    }

    /// Files of the workspace (not the credential files of a home
    /// workspace) holding the secret marker.
    fn secret_copies(&self) -> Vec<PathBuf> {
        let m = markers();
        snapshot(&self.ws, None)
            .into_iter()
            .filter(|(rel, v)| {
                let top = rel.components().next().map(|c| c.as_os_str().to_owned());
                let credential = top.is_some_and(|t| {
                    [".ssh", ".aws", ".netrc"].contains(&t.to_str().unwrap_or(""))
                });
                !credential && v.contains(&m.secret)
            })
            .map(|(rel, _)| rel)
            .collect()
    }
}

/// Paths of the workspace no row may change (under bubblewrap, commands
/// find `.git/hooks`, `.git/config` and `.rein` read-only). The credential
/// entries matter when the workspace is the home.
pub const PROTECTED_PATHS: [&str; 10] = [
    ".git/hooks",
    ".git/config",
    ".rein",
    ".env",
    ".env.local",
    "keys",
    "cert.pem",
    ".ssh",
    ".aws",
    ".netrc",
];

pub type Snapshot = BTreeMap<PathBuf, String>;

/// Every entry under `root` (or `root` itself when it is not a folder):
/// kind, mode bits, link count and content (files) or target (symlinks),
/// without following symlinks. `skip` is left out with all it holds.
pub fn snapshot(root: &Path, skip: Option<&Path>) -> Snapshot {
    fn entry(path: &Path) -> Option<String> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        let mode = meta.permissions().mode() & 0o7777;
        Some(if meta.is_symlink() {
            format!("link -> {}", std::fs::read_link(path).ok()?.display())
        } else if meta.is_dir() {
            format!("dir {mode:o}")
        } else {
            let content = std::fs::read(path).unwrap_or_default();
            format!(
                "file {mode:o} nlink={} {}",
                meta.nlink(),
                String::from_utf8_lossy(&content)
            )
        })
    }
    fn walk(root: &Path, dir: &Path, skip: Option<&Path>, map: &mut Snapshot) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            if Some(path.as_path()) == skip {
                continue;
            }
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            if let Some(v) = entry(&path) {
                let is_dir = v.starts_with("dir");
                map.insert(rel, v);
                if is_dir {
                    walk(root, &path, skip, map);
                }
            }
        }
    }
    let mut map = Snapshot::new();
    match entry(root) {
        None => {
            map.insert(PathBuf::new(), "absent".into());
        }
        Some(v) => {
            let is_dir = v.starts_with("dir");
            map.insert(PathBuf::new(), v);
            if is_dir {
                walk(root, root, skip, &mut map);
            }
        }
    }
    map
}

/// What changed between two snapshots, for failure messages.
pub fn diff(before: &Snapshot, after: &Snapshot) -> String {
    let mut lines = Vec::new();
    for (k, v) in before {
        match after.get(k) {
            None => lines.push(format!("removed {}", k.display())),
            Some(w) if w != v => lines.push(format!(
                "changed {}: {:?} -> {:?}",
                k.display(),
                cut(v),
                cut(w)
            )),
            _ => {}
        }
    }
    for k in after.keys().filter(|k| !before.contains_key(*k)) {
        lines.push(format!("added {}", k.display()));
    }
    lines.join("; ")
}

fn cut(s: &str) -> String {
    s.chars().take(120).collect()
}

/// The exit code the bash tool reports on its last line.
pub fn exit_code(output: &str) -> Option<i32> {
    output
        .lines()
        .last()?
        .strip_prefix("[exit code: ")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// The sandbox shell commands get here, printed; `None` when commands
/// cannot run sandboxed (then the rows that run bash are skipped, which is
/// allowed only with `REIN_ALLOW_NO_SANDBOX=1`).
pub fn sandbox_kind() -> Option<SandboxKind> {
    let kind = sandbox::available();
    eprintln!("sandbox: {}", sandbox::describe(kind));
    if kind == SandboxKind::None {
        assert!(
            std::env::var("REIN_ALLOW_NO_SANDBOX").is_ok_and(|v| v == "1"),
            "no sandbox works here; install bubblewrap, or set REIN_ALLOW_NO_SANDBOX=1 to skip \
             the rows that run commands knowingly"
        );
        rein_test_support::skip(
            rein_test_support::Component::AnySandbox,
            "REIN_ALLOW_NO_SANDBOX=1",
        );
        return None;
    }
    Some(kind)
}

/// Whether `program` runs on the host.
pub fn have(program: &str, probe: &[&str]) -> bool {
    std::process::Command::new(program)
        .args(probe)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The outcome of a group: failures by row, and the fixtures of the rows
/// (kept alive for checks made after a wait).
pub struct Outcome {
    pub failures: Vec<String>,
    pub kept: Vec<(String, Fixture)>,
    pub ran: usize,
}

impl Outcome {
    pub fn assert(self, group: &str) {
        eprintln!("{group}: {} rows ran", self.ran);
        assert!(
            self.failures.is_empty(),
            "{group}: {} failing row(s):\n{}",
            self.failures.len(),
            self.failures.join("\n\n")
        );
    }
}

/// Run every row of a group; `extra` adds placeholders.
pub async fn run_cases(cases: Vec<Case>, extra: &[(&str, String)]) -> Outcome {
    let kind = sandbox_kind();
    let gate = Gate::new(rein_tools::builtin_tools(), GateLimits::default());
    let store = Arc::new(InMemorySessionStore::new());
    let session = store
        .create_session(NewSession::default())
        .await
        .unwrap()
        .id;
    let mut outcome = Outcome {
        failures: Vec::new(),
        kept: Vec::new(),
        ran: 0,
    };
    for case in cases {
        if case.runs_bash() && kind.is_none() {
            rein_test_support::skip(
                rein_test_support::Component::AnySandbox,
                format!("`{}`: no sandbox", case.name),
            );
            continue;
        }
        if case.needs_bwrap && kind != Some(SandboxKind::Bubblewrap) {
            rein_test_support::skip(
                rein_test_support::Component::Bubblewrap,
                format!("`{}`: it relies on bubblewrap", case.name),
            );
            continue;
        }
        let mut fx = Fixture::new(case.ws_is_home);
        if let Some(setup) = case.setup {
            setup(&mut fx);
        }
        let problems = run_case(&gate, &store, &session, &case, &fx, extra).await;
        outcome.ran += 1;
        if !problems.is_empty() {
            outcome.failures.push(format!(
                "[{}] ({} mode)\n  {}",
                case.name,
                case.mode,
                problems.join("\n  ")
            ));
        }
        outcome.kept.push((case.name, fx));
    }
    outcome
}

async fn run_case(
    gate: &Gate,
    store: &Arc<InMemorySessionStore>,
    session: &str,
    case: &Case,
    fx: &Fixture,
    extra: &[(&str, String)],
) -> Vec<String> {
    let m = markers();
    let policy = RunPolicy::new(case.mode, fx.permissions(case));
    let outside_before = fx.outside_snapshot();
    let protected_before = fx.protected_snapshot();
    let ws_start = snapshot(&fx.ws, None);
    let mut problems = Vec::new();
    for (i, step) in case.steps.iter().enumerate() {
        let args = fx.expand(&step.args, extra);
        let call = ToolCall {
            id: format!("c{i}"),
            name: step.tool.into(),
            arguments: args.to_string(),
        };
        let ctx = ToolContext {
            workspace: fx.ws.clone(),
            session_id: session.to_string(),
            call_id: call.id.clone(),
            cancel: CancellationToken::new(),
            session: rein_core::SessionHandle::new(store.clone(), session),
            sandbox: Default::default(),
            read_roots: Vec::new(),
            events: None,
        };
        let ws_before = snapshot(&fx.ws, None);
        let machine = crate::common::machine_shared().await;
        let result = gate.run(&call, ctx, &policy, &no_events()).await.result;
        drop(machine);
        let shown = format!("step {i} {} {}", step.tool, args);
        eprintln!(
            "[{}] {shown}\n    -> error={} {:?}",
            case.name,
            result.is_error,
            cut(&result.output)
        );
        if let Err(why) = check_expect(step, &result) {
            problems.push(format!(
                "{shown}: {why}\n    output: {}",
                cut(&result.output)
            ));
        }
        if matches!(step.expect, Expect::Refused(_)) {
            let after = snapshot(&fx.ws, None);
            if after != ws_before {
                problems.push(format!(
                    "{shown}: refused, yet the workspace changed: {}",
                    diff(&ws_before, &after)
                ));
            }
        }
        let mut leaks = vec![("secret file", &m.secret), ("secret variable", &m.env)];
        if step.tool != "bash" {
            // Commands may read outside; file tools never do.
            leaks.push(("outside file", &m.outside));
        }
        for (what, marker) in leaks {
            if result.output.contains(marker.as_str()) {
                problems.push(format!(
                    "{shown}: the output shows the {what}: {}",
                    cut(&result.output)
                ));
            }
        }
    }
    let outside_after = fx.outside_snapshot();
    if outside_after != outside_before {
        problems.push(format!(
            "changed outside the workspace: {}",
            diff(&outside_before, &outside_after)
        ));
    }
    for ((rel, before), (_, after)) in protected_before.iter().zip(fx.protected_snapshot()) {
        if *before != after {
            problems.push(format!(
                "changed the protected {rel}: {}",
                diff(before, &after)
            ));
        }
    }
    let copies = fx.secret_copies();
    if !copies.is_empty() {
        problems.push(format!("secret copied into the workspace: {copies:?}"));
    }
    if case.mode == PermissionMode::Plan {
        let after = snapshot(&fx.ws, None);
        if after != ws_start {
            problems.push(format!(
                "plan mode changed the workspace: {}",
                diff(&ws_start, &after)
            ));
        }
    }
    problems
}

fn check_expect(step: &Step, r: &ToolResult) -> Result<(), String> {
    let code = exit_code(&r.output);
    match step.expect {
        Expect::Refused(words) => {
            let lower = r.output.to_lowercase();
            if !r.is_error {
                return Err(format!("expected a refusal ({words:?}), got a success"));
            }
            if code.is_some() {
                return Err("expected a refusal, but the command ran".into());
            }
            if !words.iter().any(|w| lower.contains(&w.to_lowercase())) {
                return Err(format!("refused without saying any of {words:?}"));
            }
        }
        Expect::Ok => {
            if r.is_error {
                return Err("expected success, got an error".into());
            }
            if step.tool == "bash" && code != Some(0) {
                return Err(format!("expected exit code 0, got {code:?}"));
            }
        }
        Expect::Failed => {
            if step.tool == "bash" {
                match code {
                    Some(c) if c != 0 => {}
                    Some(_) => {
                        return Err("expected the sandbox to stop it, but it succeeded".into());
                    }
                    None => return Err("expected it to run (and fail), but it did not run".into()),
                }
            } else if !r.is_error {
                return Err("expected an error".into());
            }
        }
        Expect::Any => {}
    }
    Ok(())
}
