//! The file tools and git metadata at any depth, a `REIN_HOME` inside the
//! workspace, hard links out of it, and folders swapped for symlinks (the
//! state a swapping command leaves; the live race is in `races.rs`).

use std::os::unix::fs::{MetadataExt, symlink};
use std::sync::Arc;

use rein_core::PermissionMode::{Auto, Bypass};
use rein_core::{
    CancellationToken, Gate, GateLimits, InMemorySessionStore, Permissions, RunPolicy, ToolCall,
    ToolContext, no_events,
};
use serde_json::json;

use super::Expect::{Ok, Refused};
use super::{Case, Fixture, PROTECTED, markers, run_cases};

const STATE: &[&str] = &["REIN_HOME"];
/// A symlink swapped in: refused as protected by the gate, or by the tool.
const PROTECTED_OR_THROUGH: &[&str] = &["is protected", "through a symlink"];

fn write(path: &str) -> serde_json::Value {
    json!({ "path": path, "content": "[core]\n\tfsmonitor = \"touch /tmp/pwned\"\n" })
}

fn put(fx: &Fixture, rel: &str, content: &str) {
    let p = fx.ws.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

/// Nested repositories, a submodule's gitlink file and its module folder.
fn nested_repos(fx: &mut Fixture) {
    put(fx, "sub/.git/config", "[core]\n\tbare = false\n");
    put(fx, "sub/.git/HEAD", "ref: refs/heads/main\n");
    put(
        fx,
        "vendor/x/.git/hooks/post-checkout",
        "#!/bin/sh\nexit 0\n",
    );
    put(fx, ".git/modules/m/config", "[core]\n\tbare = false\n");
    put(fx, "m/.git", "gitdir: ../.git/modules/m\n");
    // A folder already swapped for a symlink to a nested `.git`, and one
    // to the top `.git` by an absolute path.
    symlink("sub/.git", fx.ws.join("swapped")).unwrap();
    symlink(fx.ws.join(".git"), fx.ws.join("swapped_abs")).unwrap();
}

/// Git metadata at any depth, in every spelling, in auto and bypass mode.
pub fn git_metadata() -> Vec<Case> {
    let mut cases = Vec::new();
    let targets = [
        "sub/.git/config",
        "vendor/x/.git/hooks/post-checkout",
        ".git/modules/m/config",
        ".git/commondir",
        "m/.git",
        "new/.git",
        "new/.git/config",
        "sub/.GIT/config",
        "sub/./.git/config",
        "src/../sub/.git/config",
        "{ws}/sub/.git/config",
        "/proc/self/root{ws}/sub/.git/hooks/pre-commit",
    ];
    for mode in [Auto, Bypass] {
        for path in targets {
            cases.push(
                Case::new(format!("write_file {path}"), mode)
                    .setup(nested_repos)
                    .call("write_file", write(path), Refused(PROTECTED)),
            );
        }
        for (path, old) in [
            ("sub/.git/config", "bare = false"),
            (".git/modules/m/config", "bare = false"),
            ("m/.git", "gitdir: ../.git/modules/m"),
        ] {
            cases.push(
                Case::new(format!("edit_file {path}"), mode)
                    .setup(nested_repos)
                    .call(
                        "edit_file",
                        json!({"path": path, "old_string": old, "new_string": "gitdir: /tmp/evil"}),
                        Refused(PROTECTED),
                    ),
            );
        }
        for path in [
            "swapped/config",
            "swapped/hooks/pre-commit",
            "swapped_abs/config",
        ] {
            cases.push(
                Case::new(
                    format!("write_file {path} (a folder swapped for a symlink)"),
                    mode,
                )
                .setup(nested_repos)
                .call("write_file", write(path), Refused(PROTECTED_OR_THROUGH)),
            );
        }
    }
    // A precise rule still lets a nested repository's file be written, and
    // ordinary files whose names look like git's are not protected.
    cases.push(
        Case::new("write_file a nested .git file a precise rule allows", Auto)
            .setup(nested_repos)
            .allow("write_file(sub/.git/info/exclude)")
            .call("write_file", write("sub/.git/info/exclude"), Ok),
    );
    for path in [".gitignore", ".github/workflows/ci.yml", "src/git.rs"] {
        cases.push(Case::new(format!("write_file {path}"), Auto).call(
            "write_file",
            write(path),
            Ok,
        ));
    }
    cases
}

/// `REIN_HOME` is a folder inside the workspace, with a symlink to it.
fn state_inside(fx: &mut Fixture) {
    let state = fx.ws.join("rein-home");
    put(fx, "rein-home/settings.json", "{}\n");
    put(fx, "rein-home/sessions/s1/outputs/c1.txt", "saved\n");
    symlink("rein-home", fx.ws.join("state_link")).unwrap();
    fx.state = state;
}

pub fn rein_home_inside() -> Vec<Case> {
    let mut cases = Vec::new();
    for mode in [Auto, Bypass] {
        for path in [
            "rein-home/settings.json",
            "rein-home/new.json",
            "rein-home/sessions/s1/outputs/c1.txt",
            "{state}/settings.json",
            "state_link/settings.json",
            "src/../rein-home/settings.json",
        ] {
            cases.push(
                Case::new(format!("write_file {path} (REIN_HOME inside)"), mode)
                    .setup(state_inside)
                    .allow("write_file(**)")
                    .call("write_file", write(path), Refused(STATE)),
            );
        }
        cases.push(
            Case::new("edit_file REIN_HOME's settings inside the workspace", mode)
                .setup(state_inside)
                .call(
                    "edit_file",
                    json!({"path": "rein-home/settings.json", "old_string": "{}", "new_string": "{\"permissions\": {\"allow\": [\"bash\"]}}"}),
                    Refused(STATE),
                ),
        );
    }
    cases
}

#[tokio::test]
async fn file_tools_never_change_git_metadata_at_any_depth() {
    run_cases(git_metadata(), &[])
        .await
        .assert("git metadata at any depth");
}

#[tokio::test]
async fn file_tools_never_write_a_rein_home_inside_the_workspace() {
    run_cases(rein_home_inside(), &[])
        .await
        .assert("REIN_HOME inside the workspace");
}

/// A hard link in the workspace to an outside file (made before rein ran:
/// the sandbox stops commands from making one). The runner's snapshot would
/// count the link count going back down as a change outside, so these rows
/// check by hand: the outside file keeps its content, the workspace name
/// gets the new content.
#[tokio::test]
async fn writes_to_a_hard_link_replace_it_instead_of_writing_the_outside_file() {
    let m = markers();
    let gate = Gate::new(rein_tools::builtin_tools(), GateLimits::default());
    let store = Arc::new(InMemorySessionStore::new());
    let steps = [
        ("write_file", json!({"path": "h", "content": "replaced\n"})),
        (
            "edit_file",
            json!({"path": "h", "old_string": "OUTSIDE", "new_string": "INSIDE"}),
        ),
        (
            "write_file",
            json!({"path": "src/h2", "content": "replaced\n"}),
        ),
    ];
    for (mode, (tool, args)) in [Auto, Bypass]
        .into_iter()
        .flat_map(|m| steps.clone().map(|s| (m, s)))
    {
        let fx = Fixture::new(false);
        let outside = fx.out.join("existing.txt");
        let before = std::fs::read_to_string(&outside).unwrap();
        let name = args["path"].as_str().unwrap();
        std::fs::hard_link(&outside, fx.ws.join(name)).unwrap();
        let mut perms = Permissions::new(mode);
        perms.state_dir = Some(fx.state.clone());
        perms.home = Some(fx.home.clone());
        let policy = RunPolicy::new(mode, perms);
        let call = ToolCall {
            id: "c1".into(),
            name: tool.into(),
            arguments: args.to_string(),
        };
        let ctx = ToolContext {
            workspace: fx.ws.clone(),
            session_id: "s".into(),
            call_id: "c1".into(),
            cancel: CancellationToken::new(),
            session: rein_core::SessionHandle::new(store.clone(), "s"),
            sandbox: Default::default(),
            read_roots: Vec::new(),
            events: None,
        };
        let r = gate.run(&call, ctx, &policy, &no_events()).await.result;
        let row = format!("{tool} {args} ({mode} mode)");
        assert!(!r.is_error, "{row}: {}", r.output);
        assert_eq!(
            std::fs::read_to_string(&outside).unwrap(),
            before,
            "{row}: the outside file was written through the hard link"
        );
        assert_eq!(std::fs::metadata(&outside).unwrap().nlink(), 1, "{row}");
        let now = std::fs::read_to_string(fx.ws.join(name)).unwrap();
        assert!(!now.contains(&m.outside), "{row}: {now}");
    }
}
