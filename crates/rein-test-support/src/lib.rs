//! Skips that cannot pass for runs, shared by every crate's tests.
//!
//! A test that needs something outside the repository (the MCP reference
//! server, PostgreSQL, bubblewrap, a cgroup, the real model, ...) calls
//! [`skip`] when it is missing and returns. What happens then:
//!
//! 1. Under `REIN_REQUIRE_ALL=1` (set by `.ci/run`) [`skip`] panics, naming
//!    the missing [`Component`] and how to install it: CI never counts a
//!    test that did not run as passed.
//! 2. Otherwise it prints `skipped: ...` and appends one line (test,
//!    component, reason) to `rein-skipped.log` in the build's profile
//!    folder (`target/debug/`); `scripts/test.sh` clears that file before
//!    `cargo test` and prints how many tests were skipped and why after it.
//!
//! [`ports`] gives tests loopback ports with no window in which another
//! process could take them.
//!
//! [`cgroup_usable`] is a probe of its own (not rein's), for tests whose
//! expectation depends on whether a cgroup per command can be made.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The variable under which every skip is a failure.
pub const REQUIRE_ALL: &str = "REIN_REQUIRE_ALL";

/// The log's file name, in the profile folder of the build.
pub const LOG_NAME: &str = "rein-skipped.log";

/// Something outside the repository a test needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Component {
    /// `@modelcontextprotocol/server-everything` under ~/.cache/rein/npm.
    McpReferenceServer,
    /// The official MCP conformance suite under ~/.cache/rein/conformance.
    McpConformance,
    /// The official Python MCP SDK under ~/.cache/rein/pymcp.
    PythonMcpSdk,
    /// The official Python `opentelemetry-proto` package under ~/.cache/rein/pyotel.
    PythonOtelProto,
    /// PostgreSQL's server binaries (initdb, postgres).
    Postgres,
    /// nginx, the load balancer of the multi-server test.
    Nginx,
    /// A usable bubblewrap (installed, namespaces allowed).
    Bubblewrap,
    /// A kernel with Landlock (at some ABI).
    Landlock,
    /// Some sandbox at all (bubblewrap or Landlock).
    AnySandbox,
    /// A cgroup per command (v2 delegated, or v1 pids writable).
    Cgroup,
    /// The small real model (REIN_MODEL_PATH).
    Model,
    /// `python3 -m pip` and the model's packages.
    ModelPackages,
    /// python3.
    Python3,
    /// perl.
    Perl,
    /// git.
    Git,
    /// The pyright language server under ~/.cache/rein/lsp.
    Pyright,
    /// `@action-validator/cli` under ~/.cache/rein/action-validator.
    ActionValidator,
    /// typescript-language-server (and TypeScript) under ~/.cache/rein/lsp.
    TypescriptServer,
}

impl Component {
    /// What it is and how to get it.
    pub fn hint(self) -> &'static str {
        match self {
            Component::McpReferenceServer => {
                "the MCP reference server (.ci/run installs it with npm into ~/.cache/rein/npm)"
            }
            Component::McpConformance => {
                "the MCP conformance suite (.ci/run installs it with npm into ~/.cache/rein/conformance)"
            }
            Component::PythonMcpSdk => {
                "the Python MCP SDK (.ci/run installs it with pip into ~/.cache/rein/pymcp)"
            }
            Component::PythonOtelProto => {
                "Python opentelemetry-proto (.ci/run installs it with pip into ~/.cache/rein/pyotel)"
            }
            Component::Postgres => "PostgreSQL's server binaries (apt-get install postgresql)",
            Component::Nginx => "nginx (apt-get install nginx)",
            Component::Bubblewrap => "bubblewrap (apt-get install bubblewrap)",
            Component::Landlock => "a kernel with Landlock",
            Component::AnySandbox => "a sandbox (bubblewrap or Landlock)",
            Component::Cgroup => "a cgroup per command (cgroup v2 delegation, or root on v1)",
            Component::Model => "the small model (scripts/fetch-model.sh small; REIN_MODEL_PATH)",
            Component::ModelPackages => "pip and the model's packages (scripts/fetch-model.sh)",
            Component::Python3 => "python3",
            Component::Perl => "perl",
            Component::Git => "git",
            Component::TypescriptServer => {
                "typescript-language-server (.ci/run installs it with npm into ~/.cache/rein/lsp)"
            }
            Component::ActionValidator => {
                "the GitHub Actions validator (.ci/run installs it with npm into ~/.cache/rein/action-validator)"
            }
            Component::Pyright => {
                "the pyright language server (.ci/run installs it with npm into ~/.cache/rein/lsp)"
            }
        }
    }
}

impl fmt::Display for Component {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self)
    }
}

/// Whether every skip must be a failure (`REIN_REQUIRE_ALL=1`).
pub fn require_all() -> bool {
    std::env::var(REQUIRE_ALL).is_ok_and(|v| v == "1")
}

/// The running test's name (libtest names each test's thread after it).
fn test_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("(unnamed)")
        .to_string()
}

/// Where skips are recorded: `rein-skipped.log` beside `deps/`.
pub fn log_path() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let deps = exe.parent()?;
    let profile = if deps.file_name()? == "deps" {
        deps.parent()?
    } else {
        deps
    };
    Some(profile.join(LOG_NAME))
}

fn record(path: &Path, line: &str) {
    // One write per line with O_APPEND: lines of parallel tests stay whole.
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path);
    if let Ok(mut file) = file {
        let _ = file.write_all(line.as_bytes());
    }
}

/// The calling test cannot run (or cannot run one of its cases) because
/// `missing` is not here (`why` says what was looked for). Panics under
/// `REIN_REQUIRE_ALL=1`; otherwise prints and records the skip, and the
/// caller returns (or leaves the case out).
#[track_caller]
pub fn skip(missing: Component, why: impl fmt::Display) {
    let test = test_name();
    let why = why.to_string().replace(['\t', '\n'], " ");
    if require_all() {
        panic!(
            "{test}: {missing} is missing: {} ({why}); {REQUIRE_ALL}=1 forbids skipping",
            missing.hint()
        );
    }
    eprintln!("skipped: {missing}: {why}");
    if let Some(path) = log_path() {
        record(&path, &format!("{test}\t{missing}\t{why}\n"));
    }
}

/// Whether a cgroup per command can be made here, probed independently of
/// rein's own code: a child folder of this process's cgroup, under v2 with
/// `pids.max` in it, else under the v1 `pids` hierarchy.
pub fn cgroup_usable() -> bool {
    let Ok(text) = std::fs::read_to_string("/proc/self/cgroup") else {
        return false;
    };
    let mut candidates = Vec::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.splitn(3, ':').collect();
        let [_, controllers, path] = fields[..] else {
            continue;
        };
        let rel = path.trim_start_matches('/');
        if controllers.is_empty() {
            candidates.push(Path::new("/sys/fs/cgroup").join(rel));
        } else if controllers.split(',').any(|c| c == "pids") {
            candidates.push(Path::new("/sys/fs/cgroup/pids").join(rel));
        }
    }
    candidates.iter().any(|dir| probe_child(dir))
}

fn probe_child(dir: &Path) -> bool {
    let child = dir.join(format!("rein-test-probe-{}", std::process::id()));
    if std::fs::create_dir(&child).is_err() {
        return false;
    }
    let ok = child.join("pids.max").exists();
    let _ = std::fs::remove_dir(&child);
    ok
}

pub mod nginx;
pub mod ports;
