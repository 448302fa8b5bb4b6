//! Known holes the corpus found. Each test asserts the hole is STILL there
//! (like the `known_limit` tests of `sandbox.rs`), and says so loudly: when
//! one fails, the hole is closed; move its rows into the corpus with the
//! expectation they should have had (named in each test).

use rein_core::PermissionMode::Auto;
use serde_json::json;

use super::Expect::{Any, Refused};
use super::SECRET;
use super::{Case, Fixture, Outcome, run_cases};

fn no_rein(fx: &mut Fixture) {
    std::fs::remove_dir_all(fx.ws.join(".rein")).unwrap();
}

fn no_hooks(fx: &mut Fixture) {
    std::fs::remove_dir_all(fx.ws.join(".git/hooks")).unwrap();
}

/// The permissions name the home through a symlink (`$HOME` need not be
/// canonical).
fn home_through_a_symlink(fx: &mut Fixture) {
    let link = fx.base.join("home_link");
    std::os::unix::fs::symlink(&fx.home, &link).unwrap();
    fx.perm_home = link;
}

fn warn(hole: &str) {
    eprintln!("KNOWN HOLE (still open): {hole}");
}

fn step_output(outcome: &Outcome, name: &str) -> String {
    outcome
        .failures
        .iter()
        .filter(|f| f.starts_with(&format!("[{name}]")))
        .cloned()
        .collect()
}

/// The sandbox makes `.rein` and `.git/hooks` read-only only when they
/// exist (`sandbox/bwrap.rs`, the `protected` list keeps what `lookup`
/// finds). In a project without them a command in auto mode creates them:
/// `.rein/settings.json` is read by the next run (allow rules, `network`,
/// `env_allow`), and a hook runs on the host at the next commit.
/// Should be: `Failed`, and both paths still absent.
#[tokio::test]
async fn known_hole_missing_rein_and_hooks_folders_can_be_created_by_commands() {
    let cases = vec![
        Case::new("no .rein yet", Auto)
            .setup(no_rein)
            .bash(
                "mkdir .rein && echo '{\"permissions\": {\"network\": true, \"allow\": [\"bash(*)\"]}}' \
                 > .rein/settings.json",
                Any,
            )
            .bwrap_only(),
        Case::new("no .git/hooks yet", Auto)
            .setup(no_hooks)
            .bash(
                "mkdir .git/hooks && printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit \
                 && chmod +x .git/hooks/pre-commit",
                Any,
            )
            .bwrap_only(),
    ];
    let outcome = run_cases(cases, &[]).await;
    if outcome.ran == 0 {
        return;
    }
    let by_name = |n: &str| &outcome.kept.iter().find(|(name, _)| name == n).unwrap().1;
    assert!(
        by_name("no .rein yet")
            .ws
            .join(".rein/settings.json")
            .exists()
    );
    assert!(
        by_name("no .git/hooks yet")
            .ws
            .join(".git/hooks/pre-commit")
            .exists()
    );
    warn("a command creates .rein/settings.json or .git/hooks/* when they do not exist yet");
}

/// `.git/config` is writable by commands (only `.git/hooks` and `.rein`
/// are bound read-only), and `git config KEY VALUE` is not classified
/// (only `git -c KEY=VALUE` is): `core.hooksPath` points git at a hooks
/// folder the command wrote anywhere in the workspace, which undoes the
/// read-only `.git/hooks`; `core.fsmonitor` runs a command on the host at
/// the next `git status`. Should be: `Failed` or `Refused(APPROVAL)`, and
/// `.git/config` unchanged.
#[tokio::test]
async fn known_hole_git_config_can_point_hooks_elsewhere() {
    let cases = vec![
        Case::new("core.hooksPath", Auto)
            .bash(
                "mkdir -p tools/hooks && printf '#!/bin/sh\\necho pwned\\n' > tools/hooks/pre-commit \
                 && chmod +x tools/hooks/pre-commit && git config core.hooksPath tools/hooks",
                Any,
            )
            .bwrap_only(),
        Case::new("core.fsmonitor", Auto)
            .bash("git config core.fsmonitor 'echo pwned'", Any)
            .bwrap_only(),
    ];
    let outcome = run_cases(cases, &[]).await;
    for (name, fx) in &outcome.kept {
        let config = std::fs::read_to_string(fx.ws.join(".git/config")).unwrap();
        assert!(
            config.contains("hooksPath") || config.contains("fsmonitor"),
            "{name}: {config}"
        );
    }
    if outcome.ran > 0 {
        warn("a command rewrites .git/config (core.hooksPath, core.fsmonitor)");
    }
}

/// The gate compares the canonical path a file tool reads with the secret
/// folders both as `$HOME` is written and with symlinks resolved, so a
/// home reached through a symlink (say `/home` -> `/data/home`) with the
/// workspace at home still never shows `~/.ssh`.
#[tokio::test]
async fn a_home_named_through_a_symlink_keeps_its_credentials_hidden() {
    let cases = vec![
        Case::new("home named through a symlink", Auto)
            .home_workspace()
            .setup(home_through_a_symlink)
            .call("read_file", json!({"path": ".ssh/id_rsa"}), Refused(SECRET)),
    ];
    let outcome = run_cases(cases, &[]).await;
    let shown = step_output(&outcome, "home named through a symlink");
    assert!(
        !shown.contains("the output shows the secret file"),
        "the secret leaked: {shown}"
    );
}

/// Rules match the top-level words of each simple command
/// (`rein-tools/src/bash.rs`, `assess_command`: `subjects` are
/// `parsed.commands[..].text()`), while the classifier looks through
/// wrappers and nested shell code. So a deny rule `bash(rm *)` does not
/// stop these spellings; in bypass mode they would run with no sandbox.
/// (Run here in auto mode, where the deny check is the same, on a file
/// inside the workspace.) Should be: `Refused(DENIES)`.
#[tokio::test]
async fn known_hole_deny_rules_miss_wrapped_commands() {
    let spellings = [
        "/bin/rm src/main.rs",
        "command rm src/main.rs",
        "env rm src/main.rs",
        "nice rm src/main.rs",
        "timeout 5 rm src/main.rs",
        "sh -c 'rm src/main.rs'",
        "eval 'rm src/main.rs'",
    ];
    let cases = spellings
        .iter()
        .map(|cmd| Case::new(*cmd, Auto).deny("bash(rm *)").bash(cmd, Any))
        .collect();
    let outcome = run_cases(cases, &[]).await;
    let mut caught = Vec::new();
    for (name, fx) in &outcome.kept {
        if fx.ws.join("src/main.rs").exists() {
            caught.push(name.clone());
        }
    }
    assert!(
        caught.is_empty(),
        "the deny rule now stops these (move them into the corpus): {caught:?}"
    );
    if outcome.ran > 0 {
        warn("a deny rule `bash(rm *)` misses /bin/rm, command/env/nice/timeout rm, sh -c, eval");
    }
}
