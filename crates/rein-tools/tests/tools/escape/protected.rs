//! Protected workspace paths (in every mode, bypass included) and deleting
//! outside the workspace.

use rein_core::PermissionMode::{self, AcceptEdits, Auto, Bypass};
use serde_json::json;

use super::Expect::{Failed, Ok, Refused};
use super::{APPROVAL, Case, DENIES, PROTECTED, have, run_cases};

const PROTECTED_FILES: [&str; 7] = [
    ".git/config",
    ".git/hooks/pre-commit",
    ".rein/settings.json",
    ".env",
    ".env.local",
    "keys/id_ed25519",
    "cert.pem",
];

/// Existing protected files with a line edit_file can replace.
const EDITABLE: [(&str, &str); 4] = [
    (".git/config", "bare = false"),
    (".git/hooks/pre-commit", "exit 0"),
    (".rein/settings.json", "{}"),
    (".env", "postgres://local"),
];

pub fn protected() -> Vec<Case> {
    let mut cases = Vec::new();
    for mode in [Auto, Bypass] {
        for path in PROTECTED_FILES {
            cases.push(Case::new(format!("write_file {path}"), mode).call(
                "write_file",
                json!({"path": path, "content": "evil\n"}),
                Refused(PROTECTED),
            ));
        }
        for (path, old) in EDITABLE {
            cases.push(Case::new(format!("edit_file {path}"), mode).call(
                "edit_file",
                json!({"path": path, "old_string": old, "new_string": "evil"}),
                Refused(PROTECTED),
            ));
        }
    }
    // Protection is checked before the mode's own question.
    let others: [(PermissionMode, &str); 2] = [
        (AcceptEdits, ".env"),
        (PermissionMode::Default, ".git/config"),
    ];
    for (mode, path) in others {
        cases.push(Case::new(format!("write_file {path}"), mode).call(
            "write_file",
            json!({"path": path, "content": "evil\n"}),
            Refused(PROTECTED),
        ));
    }
    // Other spellings of the same paths, and links the shell makes to them.
    for path in [
        "src/../.git/config",
        ".git/./hooks/pre-commit",
        "{ws}/.rein/settings.json",
        "/proc/self/root{ws}/.env",
    ] {
        cases.push(Case::new(format!("write_file {path}"), Auto).call(
            "write_file",
            json!({"path": path, "content": "evil\n"}),
            Refused(PROTECTED),
        ));
    }
    for (link, target, through) in [
        ("hl", ".git/hooks", "hl/pre-commit"),
        ("rl", ".rein", "rl/settings.json"),
        ("el", ".env", "el"),
    ] {
        cases.push(
            Case::new(
                format!("write_file {through} (a link the shell made to {target})"),
                Auto,
            )
            .bash(&format!("ln -s {target} {link}"), Ok)
            .call(
                "write_file",
                json!({"path": through, "content": "evil\n"}),
                Refused(PROTECTED),
            ),
        );
    }
    // Commands: `.git/hooks` and `.rein` are read-only in the sandbox.
    for cmd in [
        "echo x >> .git/hooks/pre-commit",
        "rm -rf .rein",
        "echo '{\"permissions\": {\"allow\": [\"bash\"]}}' > .rein/settings.json",
        "touch .rein/settings.local.json",
        "mv .rein rein2",
        "ln -sf /bin/true .git/hooks/pre-commit",
        "rm -rf .git/hooks",
        "mv .git git2",
    ] {
        cases.push(
            Case::new(format!("bash `{cmd}`"), Auto)
                .bash(cmd, Failed)
                .bwrap_only(),
        );
    }
    cases
}

/// Recursive and outside deletions, each spelled several ways. Headless,
/// the classifier's "high risk" question is refused; allowed by a rule,
/// they run and the sandbox stops them.
const DELETIONS: [&str; 19] = [
    "rm -rf {out}",
    "rm -fr {out}",
    "rm -r -f {out}",
    "rm --recursive --force {out}",
    "rm -rf ../outside",
    "rm -rf link_dir/",
    "find {out} -delete",
    "cd / && rm -rf {out}",
    "cd .. && rm -rf outside",
    "D={out}; rm -rf \"$D\"",
    "echo {out} | xargs rm -rf",
    "rm {out}/sacrificial",
    "/bin/rm -rf {out}",
    "command rm -rf {out}",
    "env rm -rf {out}",
    "nice rm -rf {out}",
    "timeout 5 rm -rf {out}",
    "sh -c 'rm -rf {out}'",
    "eval 'rm -rf {out}'",
];

/// Deletions the classifier cannot see: they run, and only the sandbox
/// stops them.
fn unseen_deletions() -> Vec<&'static str> {
    let mut cmds = vec!["unlink {out}/sacrificial"];
    if have("python3", &["-c", "pass"]) {
        cmds.push("python3 -c \"import shutil; shutil.rmtree('{out}')\"");
    } else {
        rein_test_support::skip(
            rein_test_support::Component::Python3,
            "python3 does not run here: its deletion row",
        );
    }
    if have("perl", &["-e", "1"]) {
        cmds.push("perl -MFile::Path=remove_tree -e 'remove_tree(\"{out}\") or die'");
    } else {
        rein_test_support::skip(
            rein_test_support::Component::Perl,
            "perl does not run here: its deletion row",
        );
    }
    cmds
}

pub fn deletions() -> Vec<Case> {
    let mut cases = Vec::new();
    for cmd in DELETIONS {
        cases.push(Case::new(format!("headless `{cmd}`"), Auto).bash(cmd, Refused(APPROVAL)));
    }
    for cmd in DELETIONS {
        // A line with `eval` is opaque: no pattern rule covers it, so it
        // still asks.
        let expect = if cmd.starts_with("eval") {
            Refused(APPROVAL)
        } else if cmd == "rm -rf link_dir/" {
            // Under Landlock the outside folder cannot even be listed, and
            // `rm -f` then quietly finds nothing to delete (exit 0): the
            // invariant (nothing outside changed) is the proof.
            super::Expect::Any
        } else {
            Failed
        };
        cases.push(
            Case::new(format!("allowed by `bash(*)` `{cmd}`"), Auto)
                .allow("bash(*)")
                .bash(cmd, expect),
        );
    }
    for cmd in unseen_deletions() {
        cases.push(Case::new(format!("unflagged `{cmd}`"), Auto).bash(cmd, Failed));
    }
    // Bypass has no sandbox and asks nothing, but deny rules still hold.
    // Only commands the gate refuses are run here.
    for cmd in [
        "rm -rf {out}",
        "rm -r -f {out}",
        "cd / && rm -rf {out}",
        "true; rm --recursive --force {out}",
    ] {
        cases.push(
            Case::new(format!("bypass, deny `bash(rm *)`: `{cmd}`"), Bypass)
                .deny("bash(rm *)")
                .bash(cmd, Refused(DENIES)),
        );
    }
    cases
}

#[tokio::test]
async fn protected_paths_hold_in_every_mode_and_for_commands() {
    run_cases(protected(), &[]).await.assert("protected paths");
}

#[tokio::test]
async fn deletions_outside_are_refused_headless_and_stopped_by_the_sandbox() {
    run_cases(deletions(), &[]).await.assert("deletions");
}
