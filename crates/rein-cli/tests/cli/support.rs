//! Running the binary in throwaway homes and workspaces.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A temporary REIN_HOME and workspace.
pub struct Env {
    pub home: tempfile::TempDir,
    pub ws: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Env {
        let home = tempfile::tempdir().unwrap();
        // As rein makes it: private (else the first run says it tightened it).
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        Env {
            home,
            ws: tempfile::tempdir().unwrap(),
        }
    }

    /// A workspace holding a copy of the example project.
    pub fn with_example_project() -> Env {
        let env = Env::new();
        let src = repo_root().join("examples/fix-the-test/project");
        for entry in std::fs::read_dir(src).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), env.ws.path().join(entry.file_name())).unwrap();
        }
        env
    }

    pub fn command(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rein"));
        cmd.env("REIN_HOME", self.home.path())
            .env_remove("REIN_PROVIDER")
            .env_remove("REIN_MODEL")
            .env_remove("REIN_MAX_TURNS")
            .env_remove("REIN_STORE")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("ANTHROPIC_BASE_URL")
            .env_remove("REIN_MODEL_PATH")
            .env_remove("REIN_MODELS_DIR")
            // The models folder defaults to the user's cache: a fresh one.
            .env("XDG_CACHE_HOME", self.home.path().join("cache"))
            .current_dir(self.ws.path())
            .stdin(Stdio::null());
        cmd
    }

    pub fn rein(&self, args: &[&str]) -> Output {
        self.command().args(args).output().unwrap()
    }

    /// `rein exec --json --provider replay --script SCRIPT` with `rest`
    /// after it (flags, then the prompt).
    pub fn replay_json(&self, script: &str, rest: &[&str]) -> Output {
        let mut args = vec!["exec", "--json", "--provider", "replay", "--script", script];
        args.extend_from_slice(rest);
        self.rein(&args)
    }

    /// Write a replay script into the home folder and return its path.
    pub fn script(&self, name: &str, body: &Value) -> String {
        let path = self.home.path().join(name);
        std::fs::write(&path, serde_json::to_string_pretty(body).unwrap()).unwrap();
        path.display().to_string()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.ws.path().join(rel)
    }
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Every stdout line parsed as JSON; fails on any line that is not.
pub fn json_lines(o: &Output) -> Vec<Value> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// The output of every tool result a `--json` run committed, in order.
pub fn tool_outputs(o: &Output) -> Vec<String> {
    json_lines(o)
        .iter()
        .filter(|e| e["message"]["role"] == "tool")
        .map(|e| e["message"]["output"].as_str().unwrap_or("").to_string())
        .collect()
}

pub fn session_id(events: &[Value]) -> String {
    events[0]["session_id"].as_str().unwrap().to_string()
}

/// The stored messages of a session, via `rein sessions show --json`.
pub fn stored(env: &Env, id: &str) -> Vec<Value> {
    let o = env.rein(&["sessions", "show", id, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    json_lines(&o)
}

/// Assert a failed command printed one clear line and no panic.
pub fn assert_clean_failure(o: &Output, code: i32, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one line expected: {err}"
    );
    assert!(err.starts_with("rein: "), "{err}");
    assert!(err.contains(needle), "expected {needle:?} in: {err}");
}

/// Tests that keep both cores busy (the real model, the crash soak) and the
/// one test that times its model service (the fault soak) do not run at
/// the same time: the busy ones share this lock, the timed one takes it
/// alone.
static CPU: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Held by a test that keeps the cores busy, for its whole run.
pub type CpuShare = std::sync::RwLockReadGuard<'static, ()>;

/// A share of the cores for a test that keeps them busy.
pub fn busy_cpu() -> CpuShare {
    CPU.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The cores to itself, for a test whose timeouts must not fire because
/// another test starved it.
pub fn quiet_cpu() -> std::sync::RwLockWriteGuard<'static, ()> {
    CPU.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A number from the environment (a soak's size or seed), else `default`.
pub fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A mock model server on its own runtime, which keeps serving while a
/// test blocks on a rein process.
pub fn mock_server() -> (
    tokio::runtime::Runtime,
    rein_providers::mock_server::MockServer,
) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = rt
        .block_on(rein_providers::mock_server::MockServer::start())
        .unwrap();
    (rt, server)
}
