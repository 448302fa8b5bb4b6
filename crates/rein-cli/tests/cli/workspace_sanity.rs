//! Attack class 3 of issue 27, a workspace that is itself sensitive: no
//! front end opens a session in a git directory, in `$REIN_HOME` or in a
//! credential store; `rein serve` takes no dot-named workspace; and with
//! the home as the workspace (`rein` started in `~`), the file tools and
//! the sandbox still reach neither rein's own state (but this session's
//! saved outputs) nor the token stores of git, forges and registries.
//!
//! The home and `$REIN_HOME` live under the target folder, not /tmp
//! (private under bubblewrap: a sandbox test there would prove nothing).

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

use super::serve::Served;
use super::support::*;

/// A fake home under the target folder with `$REIN_HOME` in it, holding
/// a credential in each store the never-read list names.
struct Home {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

/// Markers of the secrets planted: none may reach the model.
const SECRETS: [(&str, &str); 6] = [
    (
        ".git-credentials",
        "https://u:SECRET-GITCRED@forge.example\n",
    ),
    (
        ".config/gh/hosts.yml",
        "forge.example:\n  oauth_token: SECRET-GH\n",
    ),
    (
        ".docker/config.json",
        "{\"auths\":{\"r\":{\"auth\":\"SECRET-DOCKER\"}}}\n",
    ),
    (".npmrc", "//registry.example/:_authToken=SECRET-NPM\n"),
    (
        ".cargo/credentials.toml",
        "[registry]\ntoken = \"SECRET-CARGO\"\n",
    ),
    (".rein/serve/token", "SECRET-SERVE\n"),
];

impl Home {
    fn new() -> Home {
        let dir = tempfile::Builder::new()
            .prefix("sane-home-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap();
        let path = std::fs::canonicalize(dir.path()).unwrap();
        for (file, text) in SECRETS {
            let p = path.join(file);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        // As rein makes it: private (else each run says it tightened it).
        use std::os::unix::fs::PermissionsExt;
        let private = std::fs::Permissions::from_mode(0o700);
        std::fs::set_permissions(path.join(".rein"), private).unwrap();
        // Neighbours of the secret files stay ordinary files.
        std::fs::write(path.join(".docker/daemon.json"), "{\"debug\": true}\n").unwrap();
        Home { _dir: dir, path }
    }

    fn rein_home(&self) -> PathBuf {
        self.path.join(".rein")
    }

    /// `rein exec --json` in plan mode, in the home, playing `turns`.
    fn exec(&self, turns: Value, extra: &[&str]) -> Output {
        let script = self.path.join("script.json");
        std::fs::write(&script, json!({ "turns": turns }).to_string()).unwrap();
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_rein"));
        cmd.env("HOME", &self.path)
            .env("REIN_HOME", self.rein_home())
            .env("XDG_CACHE_HOME", self.path.join(".cache"))
            .env_remove("REIN_PROVIDER")
            .env_remove("REIN_MODEL")
            .env_remove("REIN_STORE")
            .current_dir(&self.path)
            .stdin(std::process::Stdio::null())
            .args(["exec", "--json", "--provider", "replay", "--script"])
            .arg(&script)
            .args(["--mode", "plan"])
            .args(extra)
            .arg("go");
        let o = cmd.output().unwrap();
        // 9: the run completed, but the gate refused a call in it.
        assert!(
            matches!(o.status.code(), Some(0 | 9)),
            "{:?}: {}",
            o.status,
            stderr(&o)
        );
        o
    }
}

/// The committed tool results of a run: (call id, output, is_error).
fn results(o: &Output) -> Vec<(String, String, bool)> {
    json_lines(o)
        .iter()
        .filter(|e| e["message"]["role"] == "tool")
        .map(|e| {
            let m = &e["message"];
            (
                m["call_id"].as_str().unwrap_or("").to_string(),
                m["output"].as_str().unwrap_or("").to_string(),
                m["is_error"].as_bool().unwrap_or(false),
            )
        })
        .collect()
}

fn result_of<'a>(all: &'a [(String, String, bool)], id: &str) -> &'a (String, String, bool) {
    all.iter()
        .find(|r| r.0 == id)
        .unwrap_or_else(|| panic!("no result for {id}: {all:#?}"))
}

fn call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"id": id, "name": name, "arguments": arguments})
}

fn no_secret_in(all: &[(String, String, bool)]) {
    for (id, output, _) in all {
        assert!(!output.contains("SECRET-"), "{id} leaked: {output}");
    }
}

/// A git repository (`repo/.git`) and a bare one (`bare.git`) in `dir`.
fn repositories(dir: &Path) {
    for d in [
        "repo/.git/hooks",
        "repo/.git/objects",
        "repo/.git/refs",
        "other/.GIT",
    ] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    std::fs::write(dir.join("repo/.git/HEAD"), "ref: refs/heads/main\n").unwrap();
    for d in ["bare.git/objects", "bare.git/refs"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    std::fs::write(dir.join("bare.git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::os::unix::fs::symlink(dir.join("repo/.git"), dir.join("innocent")).unwrap();
}

#[test]
fn exec_refuses_a_git_directory_as_its_workspace_in_one_line() {
    let env = Env::new();
    repositories(env.ws.path());
    let script = env.script("s.json", &json!({"turns": [{"text": "ran"}]}));
    for dir in [
        "repo/.git",
        "repo/.git/hooks",
        "other/.GIT",
        "bare.git",
        "bare.git/refs",
        "innocent",
    ] {
        let path = env.path(dir);
        let o = env.rein(&[
            "exec",
            "-C",
            path.to_str().unwrap(),
            "--provider",
            "replay",
            "--script",
            &script,
            "hi",
        ]);
        assert_clean_failure(&o, 2, "git directory");
    }
    assert!(!env.path("repo/.git/hooks/post-checkout").exists());
    // The repository's own folder is a workspace like any other.
    let repo = env.path("repo");
    let o = env.rein(&[
        "exec",
        "-C",
        repo.to_str().unwrap(),
        "--provider",
        "replay",
        "--script",
        &script,
        "hi",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn exec_refuses_rein_home_and_credential_stores_as_its_workspace() {
    let home = Home::new();
    let state = home.rein_home();
    std::fs::create_dir_all(state.join("sessions")).unwrap();
    std::fs::create_dir_all(home.path.join(".ssh")).unwrap();
    let run = |dir: &Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_rein"))
            .env("HOME", &home.path)
            .env("REIN_HOME", &state)
            .env_remove("REIN_PROVIDER")
            .stdin(std::process::Stdio::null())
            .arg("exec")
            .arg("-C")
            .arg(dir)
            .args(["--provider", "replay", "--script", "/nonexistent", "hi"])
            .output()
            .unwrap()
    };
    assert_clean_failure(&run(&state), 2, "REIN_HOME");
    assert_clean_failure(&run(&state.join("sessions")), 2, "REIN_HOME");
    assert_clean_failure(&run(&home.path.join(".ssh")), 2, "never read");
    assert_clean_failure(&run(&home.path.join(".config/gh")), 2, "never read");
}

#[test]
fn serve_refuses_dot_named_workspaces_and_a_root_inside_a_git_directory() {
    let env = Env::new();
    repositories(env.ws.path());
    for dir in [".git", ".rein", ".ssh"] {
        std::fs::create_dir_all(env.path(dir)).unwrap();
    }
    let script = env.script("s.json", &json!({"turns": [{"text": "ran"}]}));
    let s = Served::start(&env, &["--script", &script]);
    for name in [".git", ".rein", ".ssh", ".hidden", "a/.hidden", ".", ".."] {
        let (status, body) = s.call("POST", "/sessions", Some(json!({"workspace": name})));
        assert_eq!(status, 400, "{name}: {body}");
        let error = body["error"].as_str().unwrap_or_default();
        assert_eq!(error.lines().count(), 1, "{error}");
    }
    assert!(!env.path(".hidden").exists());
    let (status, body) = s.call("POST", "/sessions", Some(json!({"workspace": "fine"})));
    assert_eq!(status, 201, "{body}");
    let root = env.path("repo/.git");
    let o = env.rein(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--root",
        root.to_str().unwrap(),
        "--provider",
        "replay",
    ]);
    assert_clean_failure(&o, 2, "git directory");
}

#[test]
fn in_the_home_plan_mode_file_tools_never_read_token_stores_or_rein_home() {
    let home = Home::new();
    let o = home.exec(
        json!([
            {"tool_calls": [
                call("r1", "read_file", json!({"path": ".git-credentials"})),
                call("r2", "read_file", json!({"path": ".config/gh/hosts.yml"})),
                call("r3", "read_file", json!({"path": ".docker/config.json"})),
                call("r4", "read_file", json!({"path": ".rein/serve/token"})),
            ]},
            {"tool_calls": [
                call("r5", "read_file", json!({"path": ".npmrc"})),
                call("r6", "read_file", json!({"path": home.path.join(".cargo/credentials.toml")})),
                call("g1", "grep", json!({"pattern": "SECRET", "path": ".config"})),
                call("g2", "grep", json!({"pattern": "SECRET", "path": ".docker"})),
            ]},
            {"tool_calls": [
                call("g3", "grep", json!({"pattern": "SECRET", "path": ".rein"})),
                call("g4", "grep", json!({"pattern": "SECRET", "path": ".config/gh"})),
                call("l1", "glob", json!({"pattern": "**/*", "path": ".config"})),
                call("ok", "read_file", json!({"path": ".docker/daemon.json"})),
            ]},
            {"text": "done"}
        ]),
        &[],
    );
    let all = results(&o);
    no_secret_in(&all);
    for id in ["r1", "r2", "r3", "r5", "r6", "g4"] {
        let (_, out, is_error) = result_of(&all, id);
        assert!(*is_error && out.contains("never read"), "{id}: {out}");
    }
    for id in ["r4", "g3"] {
        let (_, out, is_error) = result_of(&all, id);
        assert!(*is_error && out.contains("REIN_HOME"), "{id}: {out}");
    }
    let (_, listed, _) = result_of(&all, "l1");
    assert!(!listed.contains("hosts.yml"), "{listed}");
    let (_, daemon, is_error) = result_of(&all, "ok");
    assert!(!is_error && daemon.contains("debug"), "{daemon}");
}

#[test]
fn in_the_home_a_sandboxed_command_finds_the_token_stores_empty() {
    if !rein_tools::sandbox::can_apply(&rein_core::SandboxPolicy::default()) {
        rein_test_support::skip(rein_test_support::Component::AnySandbox, "no sandbox here");
        return;
    }
    let home = Home::new();
    let files: Vec<&str> = SECRETS.iter().map(|(f, _)| *f).collect();
    // Named through a variable: only the sandbox stands in the way.
    let command = format!(
        "for f in {}; do cat \"$f\"; done 2>&1; true",
        files.join(" ")
    );
    let o = home.exec(
        json!([
            {"tool_calls": [call("b1", "bash", json!({"command": command}))]},
            {"tool_calls": [call("b2", "bash", json!({"command": "cat .docker/daemon.json"}))]},
            {"text": "done"}
        ]),
        &[],
    );
    let all = results(&o);
    no_secret_in(&all);
    // The rest of the home is the workspace, readable.
    let (_, daemon, _) = result_of(&all, "b2");
    assert!(daemon.contains("debug"), "{daemon}");
}

#[test]
fn in_the_home_reads_of_rein_home_are_refused_but_this_sessions_saved_output_is_not() {
    let home = Home::new();
    let big: String = (0..4000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(home.path.join("big.txt"), big).unwrap();
    let first = home.exec(
        json!([
            {"tool_calls": [call("c1", "read_file", json!({"path": "big.txt", "limit": 4000}))]},
            {"text": "done"}
        ]),
        &[],
    );
    let session = session_id(&json_lines(&first));
    let outputs = home
        .rein_home()
        .join("sessions")
        .join(&session)
        .join("outputs");
    let saved: Vec<PathBuf> = std::fs::read_dir(&outputs)
        .unwrap_or_else(|e| panic!("{}: {e}", outputs.display()))
        .map(|f| f.unwrap().path())
        .collect();
    assert_eq!(saved.len(), 1, "{saved:?}");
    let saved = saved[0].to_str().unwrap().to_string();

    // The same session reads its own saved output, and nothing else there.
    let again = home.exec(
        json!([
            {"tool_calls": [
                call("s1", "read_file", json!({"path": saved, "limit": 3})),
                call("s2", "read_file", json!({"path": home.rein_home().join("serve/token")})),
                call("s3", "grep", json!({"pattern": "line 3999", "path": saved})),
            ]},
            {"text": "done"}
        ]),
        &["--resume", &session],
    );
    let all = results(&again);
    let (_, own, is_error) = result_of(&all, "s1");
    assert!(!is_error && own.contains("line"), "{own}");
    let (_, token, is_error) = result_of(&all, "s2");
    assert!(*is_error && token.contains("REIN_HOME"), "{token}");
    let (_, found, is_error) = result_of(&all, "s3");
    assert!(!is_error && found.contains("line 3999"), "{found}");
    no_secret_in(&all);

    // Another session cannot read it.
    let other = home.exec(
        json!([
            {"tool_calls": [call("o1", "read_file", json!({"path": saved}))]},
            {"text": "done"}
        ]),
        &[],
    );
    let all = results(&other);
    let (_, out, is_error) = result_of(&all, "o1");
    assert!(*is_error && out.contains("REIN_HOME"), "{out}");
}
