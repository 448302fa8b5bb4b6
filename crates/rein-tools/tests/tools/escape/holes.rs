//! Holes the corpus found, each with the test that once pinned it open
//! (named in its doc) now asserting it is closed.

use rein_core::PermissionMode::{Auto, Bypass};
use serde_json::json;

use super::Expect::{Failed, Refused};
use super::{APPROVAL, Case, DENIES, Fixture, Outcome, SECRET, have, run_cases};

fn no_rein(fx: &mut Fixture) {
    std::fs::remove_dir_all(fx.ws.join(".rein")).unwrap();
}

fn no_hooks(fx: &mut Fixture) {
    std::fs::remove_dir_all(fx.ws.join(".git/hooks")).unwrap();
}

fn no_git_config(fx: &mut Fixture) {
    std::fs::remove_file(fx.ws.join(".git/config")).unwrap();
}

fn rein_links_to_nothing(fx: &mut Fixture) {
    std::fs::remove_dir_all(fx.ws.join(".rein")).unwrap();
    std::os::unix::fs::symlink(fx.ws.join("nowhere"), fx.ws.join(".rein")).unwrap();
}

/// The permissions name the home through a symlink (`$HOME` need not be
/// canonical).
fn home_through_a_symlink(fx: &mut Fixture) {
    let link = fx.base.join("home_link");
    std::os::unix::fs::symlink(&fx.home, &link).unwrap();
    fx.perm_home = link;
}

fn step_output(outcome: &Outcome, name: &str) -> String {
    outcome
        .failures
        .iter()
        .filter(|f| f.starts_with(&format!("[{name}]")))
        .cloned()
        .collect()
}

/// Once a hole (`known_hole_missing_rein_and_hooks_folders_can_be_created_by_commands`):
/// bubblewrap bound `.rein` and `.git/hooks` read-only only when they
/// existed, so in a project without them a command created
/// `.rein/settings.json` (read by the next run: allow rules, `network`) or a
/// hook (run on the host at the next commit). Now the sandbox creates them
/// empty on the host first and binds them read-only: the commands fail, and
/// once no command needs them the empty folders go again. A `.rein` that
/// cannot be made (a symlink to nothing) refuses the command instead of
/// running it unprotected.
#[tokio::test]
async fn missing_rein_and_hooks_folders_are_read_only_to_commands_and_gone_after() {
    let cases = vec![
        Case::new("no .rein yet", Auto)
            .setup(no_rein)
            .bash(
                "mkdir -p .rein && echo '{\"permissions\": {\"network\": true, \"allow\": [\"bash(*)\"]}}' \
                 > .rein/settings.json",
                Failed,
            )
            .bwrap_only(),
        Case::new("no .git/hooks yet", Auto)
            .setup(no_hooks)
            .bash(
                "mkdir -p .git/hooks && printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit \
                 && chmod +x .git/hooks/pre-commit",
                Failed,
            )
            .bwrap_only(),
        Case::new("no .git/config yet", Auto)
            .setup(no_git_config)
            .bash(
                "printf '[core]\\n\\tfsmonitor = echo pwned\\n' > .git/config",
                Failed,
            )
            .bwrap_only(),
        Case::new(".rein a symlink to nothing", Auto)
            .setup(rein_links_to_nothing)
            .bash("true", Refused(&["the command was not run"]))
            .bwrap_only(),
    ];
    let outcome = run_cases(cases, &[]).await;
    // The protected-path check may see the folders appear; that, and only
    // that, is expected.
    let created = [
        ("no .rein yet", ".rein"),
        ("no .git/hooks yet", ".git/hooks"),
        ("no .git/config yet", ".git/config"),
    ];
    let mut failures = Vec::new();
    for failure in &outcome.failures {
        let mut lines = failure.lines();
        let head = lines.next().unwrap_or("");
        let expected = created
            .iter()
            .find(|(name, _)| head.starts_with(&format!("[{name}]")));
        let Some((_, rel)) = expected else {
            failures.push(failure.clone());
            continue;
        };
        let unexpected: Vec<&str> = lines
            .map(str::trim)
            .filter(|l| {
                // Absent before, there after (empty: checked below).
                let made = format!("changed the protected {rel}: changed : \"absent\" -> ");
                !l.starts_with(&made)
            })
            .collect();
        if !unexpected.is_empty() {
            failures.push(failure.clone());
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    for (name, fx) in &outcome.kept {
        let gone = |rel: &str| std::fs::symlink_metadata(fx.ws.join(rel)).is_err();
        match name.as_str() {
            "no .rein yet" => assert!(gone(".rein"), "{name}"),
            "no .git/hooks yet" => assert!(gone(".git/hooks"), "{name}"),
            "no .git/config yet" => assert!(gone(".git/config"), "{name}"),
            _ => assert!(!fx.ws.join("nowhere").exists(), "{name}"),
        }
    }
}

/// Once a hole (`known_hole_git_config_can_point_hooks_elsewhere`):
/// `.git/config` was writable by commands and `git config KEY VALUE` was not
/// classified, so `core.hooksPath` pointed git at hooks a command wrote
/// anywhere in the workspace and `core.fsmonitor` ran a command on the host
/// at the next `git status`. Now such a `git config` (any file) is high
/// risk, refused headless; allowed by a rule, or written without `git
/// config`, it fails in the sandbox, where `.git/config` is read-only. The
/// corpus checks `.git/config` is unchanged after every row.
#[tokio::test]
async fn git_config_cannot_point_hooks_elsewhere_or_set_commands() {
    let hooks_path = "mkdir -p tools/hooks && printf '#!/bin/sh\\necho pwned\\n' > tools/hooks/pre-commit \
                      && chmod +x tools/hooks/pre-commit && git config core.hooksPath tools/hooks";
    let mut cases = Vec::new();
    for cmd in [
        hooks_path,
        "git config core.fsmonitor 'echo pwned'",
        "git config --local core.fsmonitor 'echo pwned'",
        "git config --file .git/config alias.st '!echo pwned'",
        "git config --global core.hooksPath /tmp",
        "git config set core.pager 'echo pwned'",
        "env git config diff.x.textconv 'echo pwned'",
        "sh -c 'git config filter.x.clean \"echo pwned\"'",
    ] {
        cases.push(Case::new(format!("headless `{cmd}`"), Auto).bash(cmd, Refused(APPROVAL)));
    }
    for cmd in [
        hooks_path,
        "git config core.fsmonitor 'echo pwned'",
        "printf '[core]\\n\\thooksPath = tools/hooks\\n' >> .git/config",
        "sed -i 's/bare = false/bare = false\\n\\tfsmonitor = echo pwned/' .git/config",
        "cp .git/config c && echo '[core] fsmonitor = x' >> c && mv c .git/config",
        "rm -f .git/config",
        "git remote add origin ../elsewhere",
    ] {
        cases.push(
            Case::new(format!("allowed by `bash(*)` `{cmd}`"), Auto)
                .allow("bash(*)")
                .bash(cmd, Failed)
                .bwrap_only(),
        );
    }
    if !have("git", &["--version"]) {
        eprintln!("git does not run here: only the rows that never run it count");
    }
    run_cases(cases, &[]).await.assert("git config");
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

/// Once a hole (`known_hole_deny_rules_miss_wrapped_commands`): rules
/// matched only the top-level words of each simple command, so a deny rule
/// `bash(rm *)` missed `/bin/rm`, `env rm`, `sh -c 'rm …'`, ... Now rules
/// see every command a line runs through wrappers and shell code, and a
/// program named by its path also by its base name. Bypass mode (no
/// sandbox, no questions) is where it matters most.
#[tokio::test]
async fn deny_rules_see_wrapped_and_path_named_commands() {
    let spellings = [
        "/bin/rm src/main.rs",
        "command rm src/main.rs",
        "env rm src/main.rs",
        "nice rm src/main.rs",
        "timeout 5 rm src/main.rs",
        "sh -c 'rm src/main.rs'",
        "bash -c \"rm src/main.rs\"",
        "eval 'rm src/main.rs'",
        "echo src/main.rs | xargs rm",
        "find src -name main.rs -exec rm {} \\;",
        "nohup rm src/main.rs",
        "exec rm src/main.rs",
        "cd src && /bin/rm main.rs",
    ];
    let mut cases = Vec::new();
    for mode in [Auto, Bypass] {
        for cmd in spellings {
            cases.push(
                Case::new(format!("{mode}: {cmd}"), mode)
                    .deny("bash(rm *)")
                    .bash(cmd, Refused(DENIES)),
            );
        }
    }
    let outcome = run_cases(cases, &[]).await;
    for (name, fx) in &outcome.kept {
        assert!(fx.ws.join("src/main.rs").exists(), "{name}");
    }
    outcome.assert("deny rules");
}
