//! What commands can see, in plan mode and auto mode alike: the home is
//! hidden (credentials git and gh keep there, and everything else) except
//! the toolchain folders without their credential files; `$REIN_HOME`
//! (every session's transcript and spilled outputs) is never visible, even
//! inside the workspace; the environment is an allowlist, so variables
//! whose names do not look secret (`DATABASE_URL`, `GH_PAT`) stay out too.

use std::sync::Once;

use rein_core::PermissionMode::{self, Auto, Plan};

use super::Expect::{Failed, Ok};
use super::{Case, Fixture, markers, run_cases};

fn write(path: &std::path::Path, content: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// Credentials of git and gh in the fake home, a toolchain folder with a
/// tool and a registry token, and another session's spilled output.
fn home_files(fx: &mut Fixture) {
    let m = markers();
    write(
        &fx.home.join(".git-credentials"),
        &format!("https://user:{}@example.invalid\n", m.secret),
    );
    write(
        &fx.home.join(".config/gh/hosts.yml"),
        &format!("example.invalid:\n    oauth_token: {}\n", m.secret),
    );
    write(
        &fx.home.join(".cargo/bin/tool-marker"),
        "toolchain visible\n",
    );
    write(
        &fx.home.join(".cargo/credentials.toml"),
        &format!("[registry]\ntoken = \"{}\"\n", m.secret),
    );
    write(
        &fx.state.join("sessions/other-session/outputs/call-7.txt"),
        &format!("another session's output {}\n", m.secret),
    );
    write(
        &fx.state.join("sessions.db"),
        &format!("transcripts {}\n", m.secret),
    );
}

/// In the state folder inside the workspace (not the secret marker: the
/// runner would count it as a secret copied into the workspace).
const STATE_MARKER: &str = "SESSIONS-OF-OTHER-PROJECTS";

/// `$REIN_HOME` inside the workspace.
fn state_in_workspace(fx: &mut Fixture) {
    fx.state = fx.ws.join("rein-state");
    write(
        &fx.state.join("sessions.db"),
        &format!("transcripts {STATE_MARKER}\n"),
    );
}

/// The workspace inside `$REIN_HOME` (its parent folder plays it).
fn workspace_in_state(fx: &mut Fixture) {
    let m = markers();
    fx.state = fx.base.clone();
    write(
        &fx.state.join("sessions.db"),
        &format!("transcripts {}\n", m.secret),
    );
}

fn scope_rows(mode: PermissionMode) -> Vec<Case> {
    let failing = [
        "cat {home}/.git-credentials",
        "cat {home}/.config/gh/hosts.yml",
        "cat {home}/visible.txt",
        "grep -r KEY-MATERIAL {home}",
        "cat {home}/.cargo/credentials.toml",
        "cat {state}/sessions.db",
        "cat {state}/sessions/other-session/outputs/call-7.txt",
        "grep -r -a KEY-MATERIAL {state}",
        "cat {ws}/../state/sessions.db",
    ];
    let mut cases: Vec<Case> = failing
        .into_iter()
        .map(|cmd| {
            Case::new(format!("{mode} `{cmd}`"), mode)
                .setup(home_files)
                .bash(cmd, Failed)
        })
        .collect();
    cases.push(
        Case::new(format!("{mode} toolchain folders stay readable"), mode)
            .setup(home_files)
            .bash("cat {home}/.cargo/bin/tool-marker", Ok),
    );
    // Only toolchain folders (of the real home, when it is /root) show.
    cases.push(
        Case::new(format!("{mode} /root and /home hold only toolchains"), mode).bash(
            "test -z \"$(ls -A /home /root 2>/dev/null | grep -v -x -e '' -e '/.*:' -e .cargo \
             -e .rustup -e .npm -e .cache -e .pyenv -e go -e .m2 -e .gradle -e .nvm -e .local)\"",
            Ok,
        ),
    );
    cases.push(
        Case::new(format!("{mode} the workspace inside $REIN_HOME"), mode)
            .setup(workspace_in_state)
            .bash("cat {state}/sessions.db", Failed)
            .bash("cat ../sessions.db", Failed),
    );
    cases.push(
        Case::new(format!("{mode} $REIN_HOME inside the workspace"), mode)
            .setup(state_in_workspace)
            .bash("cat {state}/sessions.db", Failed)
            .bash(&format!("! grep -r -a -q {STATE_MARKER} ."), Ok)
            // Landlock grants the workspace whole: it cannot take a folder
            // inside it away.
            .bwrap_only(),
    );
    cases
}

/// Every read-scope row, in plan and auto mode.
pub fn read_scope() -> Vec<Case> {
    let mut cases = scope_rows(Plan);
    cases.extend(scope_rows(Auto));
    cases
}

/// Variables a denylist of secret-looking names would miss; their values
/// hold the environment marker, so any leak fails the row.
pub fn unlisted_variables() -> Vec<Case> {
    let commands = [
        "env",
        "printenv DATABASE_URL GH_PAT; true",
        "echo \"[$DATABASE_URL][$GH_PAT]\"",
        "cat /proc/self/environ | tr '\\0' '\\n'",
        "bash -lc env",
    ];
    let mut cases = Vec::new();
    for mode in [Plan, Auto] {
        for cmd in commands {
            cases.push(Case::new(format!("{mode} `{cmd}`"), mode).bash(cmd, Ok));
        }
    }
    cases
}

/// Put `DATABASE_URL` and `GH_PAT` in this process's environment, once.
fn set_unlisted_variables() {
    static SET: Once = Once::new();
    let m = markers();
    SET.call_once(|| {
        // SAFETY: set once, before the rows that need them spawn commands;
        // std serialises its own environment access with these writes.
        unsafe {
            std::env::set_var("DATABASE_URL", format!("postgres://app:{}@db/prod", m.env));
            std::env::set_var("GH_PAT", format!("ghp_{}", m.env));
        }
    });
}

#[tokio::test]
async fn commands_see_neither_the_home_nor_rein_home_in_any_mode() {
    run_cases(read_scope(), &[]).await.assert("read scope");
}

#[tokio::test]
async fn variables_off_the_allowlist_never_reach_a_command() {
    set_unlisted_variables();
    assert!(
        std::env::var("DATABASE_URL")
            .unwrap()
            .contains(&markers().env)
    );
    run_cases(unlisted_variables(), &[])
        .await
        .assert("unlisted variables");
}
