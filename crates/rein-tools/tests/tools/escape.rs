//! The escape corpus: tables of tool calls that try to get out of the
//! workspace, at secrets, or past the permission mode, run end to end
//! through the real gate (`Gate::run` with the built-in tools, a headless
//! `RunPolicy`: nobody approves anything).
//!
//! Every row gets a fresh fixture under the target folder (not /tmp, which
//! is private under bubblewrap): a small project as the workspace, a sibling
//! "outside" folder, a fake home with credential files and a fake
//! `REIN_HOME`. After each row: nothing outside the workspace changed
//! (contents, mode bits, link counts, no new files), the protected paths of
//! the workspace did not change, no secret reached any output or the
//! workspace, and each step met its expectation (a refusal with a clear
//! reason, a failure inside the sandbox, or success).
//!
//! Each group is one test that runs all its rows and reports every failing
//! row by name. The rows themselves live in the submodules.

use std::os::unix::fs::PermissionsExt;
use std::sync::Once;

use rein_core::{PermissionMode, Rule, Rules};
use serde_json::Value;

pub use harness::{Fixture, Outcome, have, run_cases};

#[path = "escape/files.rs"]
mod files;
#[path = "escape/gitmeta_commands.rs"]
mod gitmeta_commands;
#[path = "escape/gitmeta_files.rs"]
mod gitmeta_files;
#[path = "escape/harness.rs"]
mod harness;
#[path = "escape/holes.rs"]
mod holes;
#[path = "escape/limits.rs"]
mod limits;
#[path = "escape/modes.rs"]
mod modes;
#[path = "escape/protected.rs"]
mod protected;
#[path = "escape/scope.rs"]
mod scope;
#[path = "escape/secrets.rs"]
mod secrets;

/// The environment variable set in this test process, which no command may
/// see (its name looks secret, so it is scrubbed).
pub const ENV_NAME: &str = "REIN_ESCAPE_TEST_TOKEN";

/// What a step must do. The invariants (nothing outside changed, protected
/// paths intact, no secret in the output) hold for every step regardless.
#[derive(Debug, Clone, Copy)]
pub enum Expect {
    /// The gate refuses it before it runs: an error observation containing
    /// one of these phrases (any case), and nothing ran.
    Refused(&'static [&'static str]),
    /// It runs and succeeds (a file tool without error; bash with exit code
    /// 0).
    Ok,
    /// Bash runs it (the gate let it through) and it fails: the sandbox
    /// stopped it.
    Failed,
    /// Anything, as long as the invariants hold.
    Any,
}

pub const OUTSIDE: &[&str] = &["outside the workspace"];
pub const PROTECTED: &[&str] = &["is protected"];
pub const PLAN: &[&str] = &["plan mode"];
pub const APPROVAL: &[&str] = &["needs the user's approval"];
pub const SECRET: &[&str] = &["holds credentials and is never read"];
pub const DENIES: &[&str] = &["denies"];
/// A secret path given outside the workspace: either reason is right.
pub const OUTSIDE_OR_SECRET: &[&str] = &[
    "outside the workspace",
    "holds credentials and is never read",
];

pub struct Step {
    pub tool: &'static str,
    pub args: Value,
    pub expect: Expect,
}

/// One row of the corpus.
pub struct Case {
    pub name: String,
    pub mode: PermissionMode,
    pub rules: Rules,
    pub steps: Vec<Step>,
    /// The workspace is the fake home itself.
    pub ws_is_home: bool,
    /// The row relies on what only bubblewrap does (hiding folders,
    /// read-only paths inside the workspace, a PID namespace).
    pub needs_bwrap: bool,
    /// Changes the fixture before the row runs.
    pub setup: Option<fn(&mut Fixture)>,
}

impl Case {
    pub fn new(name: impl Into<String>, mode: PermissionMode) -> Case {
        Case {
            name: name.into(),
            mode,
            rules: Rules::default(),
            steps: Vec::new(),
            ws_is_home: false,
            needs_bwrap: false,
            setup: None,
        }
    }

    pub fn call(mut self, tool: &'static str, args: Value, expect: Expect) -> Case {
        self.steps.push(Step { tool, args, expect });
        self
    }

    pub fn bash(self, command: &str, expect: Expect) -> Case {
        self.call("bash", serde_json::json!({ "command": command }), expect)
    }

    pub fn allow(mut self, rule: &str) -> Case {
        self.rules.allow.push(rule.parse::<Rule>().unwrap());
        self
    }

    pub fn deny(mut self, rule: &str) -> Case {
        self.rules.deny.push(rule.parse::<Rule>().unwrap());
        self
    }

    pub fn home_workspace(mut self) -> Case {
        self.ws_is_home = true;
        self
    }

    pub fn setup(mut self, f: fn(&mut Fixture)) -> Case {
        self.setup = Some(f);
        self
    }

    pub fn bwrap_only(mut self) -> Case {
        self.needs_bwrap = true;
        self
    }

    /// Whether some step must actually run a shell command.
    fn runs_bash(&self) -> bool {
        self.steps
            .iter()
            .any(|s| s.tool == "bash" && !matches!(s.expect, Expect::Refused(_)))
    }
}

/// Marker strings that must never show up where they should not.
pub struct Markers {
    /// In the fake home's credential files.
    pub secret: String,
    /// The value of [`ENV_NAME`].
    pub env: String,
    /// In the outside folder's files (file tools must never show them).
    pub outside: String,
}

/// The markers of this process; the secret environment variable is set
/// once, before the first row runs.
pub fn markers() -> &'static Markers {
    static MARKERS: std::sync::OnceLock<Markers> = std::sync::OnceLock::new();
    static SET: Once = Once::new();
    let m = MARKERS.get_or_init(|| {
        let pid = std::process::id();
        Markers {
            secret: format!("PRIVATE-KEY-MATERIAL-{pid}-c0ffee"),
            env: format!("env-token-value-{pid}-5ec2e7"),
            outside: format!("OUTSIDE-CONTENT-{pid}-0a7b"),
        }
    });
    SET.call_once(|| {
        // SAFETY: set once, before any row of this module spawns a command;
        // the name is used by this module only, and std serialises its own
        // environment access (spawning included) with writes.
        unsafe { std::env::set_var(ENV_NAME, &m.env) };
    });
    m
}

/// Every row of the corpus, by group, without running anything.
pub fn all_groups() -> Vec<(&'static str, usize)> {
    vec![
        ("paths", files::paths().len()),
        ("symlinks", files::symlinks().len()),
        ("hard links", files::hard_links().len()),
        ("/proc", files::proc_paths().len()),
        ("protected", protected::protected().len()),
        ("deletions", protected::deletions().len()),
        ("environment", secrets::environment().len()),
        ("secret folders", secrets::secret_folders().len()),
        ("home workspace", secrets::home_workspace().len()),
        ("plan mode", modes::plan().len()),
        ("default and accept-edits", modes::asking_modes().len()),
        ("background", modes::background().len()),
        ("network", modes::network().len()),
        ("read scope", scope::read_scope().len()),
        ("unlisted variables", scope::unlisted_variables().len()),
        (
            "git metadata by commands",
            gitmeta_commands::planted().len(),
        ),
        ("ordinary git work", gitmeta_commands::ordinary().len()),
        (
            "git metadata by file tools",
            gitmeta_files::git_metadata().len(),
        ),
        ("REIN_HOME inside", gitmeta_files::rein_home_inside().len()),
    ]
}

#[test]
fn the_escape_corpus_has_at_least_sixty_rows() {
    let groups = all_groups();
    let total: usize = groups.iter().map(|(_, n)| n).sum();
    for (name, n) in &groups {
        eprintln!("{name}: {n} rows");
    }
    eprintln!("total: {total} rows");
    assert!(total >= 60, "only {total} rows");
}

/// A change made to a fixture by hand, named.
type Change = (&'static str, fn(&Fixture));

/// The snapshot the rows rely on sees every kind of change a row could
/// make outside (made here directly, without any tool, each on a fresh
/// fixture).
#[test]
fn the_snapshot_sees_contents_modes_links_and_new_files() {
    let changes: [Change; 5] = [
        ("content", |fx| {
            std::fs::write(fx.out.join("existing.txt"), "changed\n").unwrap()
        }),
        ("mode", |fx| {
            let mode = std::fs::Permissions::from_mode(0o600);
            std::fs::set_permissions(fx.out.join("existing.txt"), mode).unwrap()
        }),
        ("hard link", |fx| {
            std::fs::hard_link(fx.out.join("existing.txt"), fx.ws.join("h")).unwrap()
        }),
        ("new file next to the workspace", |fx| {
            std::fs::write(fx.base.join("stray"), "").unwrap()
        }),
        ("new symlink", |fx| {
            std::os::unix::fs::symlink("/etc", fx.home.join("l")).unwrap()
        }),
    ];
    for (what, change) in changes {
        let fx = Fixture::new(false);
        let before = fx.outside_snapshot();
        assert_eq!(fx.outside_snapshot(), before);
        change(&fx);
        assert_ne!(fx.outside_snapshot(), before, "{what} went unnoticed");
    }
}
