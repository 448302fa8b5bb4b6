//! The classifier: walks a parsed command line and collects the reasons it
//! is dangerous. Per-command rules are in `rules` (git's in `git`); this
//! file follows what spans commands: `cd`, pipelines, substitutions, code
//! run by shells and `eval`, functions and redirections.

use std::path::{Path, PathBuf};

use super::paths::{self, Target};
use super::rules::{self, Scene};
use super::wrappers::{self, CodeFrom, Invocation};
use super::{Danger, Dyn, ParsedCommand, RedirectOp, Risk};

/// How deep `bash -c '… bash -c "…"'`, `eval` and friends are followed.
const MAX_CODE_DEPTH: usize = 4;
/// How many possible working directories are followed.
const MAX_CWDS: usize = 16;

pub(crate) fn classify(parsed: &ParsedCommand, workspace: &Path, cwd: &Path) -> Danger {
    let mut c = Classifier {
        workspace: workspace.to_path_buf(),
        reasons: Vec::new(),
    };
    c.command_line(parsed, vec![Some(cwd.to_path_buf())], 0);
    Danger {
        risk: if c.reasons.is_empty() {
            Risk::Low
        } else {
            Risk::High
        },
        reasons: c.reasons,
    }
}

struct Classifier {
    workspace: PathBuf,
    reasons: Vec<String>,
}

impl Classifier {
    fn flag(&mut self, reason: String) {
        if !self.reasons.contains(&reason) {
            self.reasons.push(reason);
        }
    }

    /// `cwds`: every directory the command line may be in at this point
    /// (`None`: one only known at run time). A `cd` anywhere adds to them;
    /// since a `cd` inside a subshell does not last, the earlier ones stay.
    fn command_line(
        &mut self,
        parsed: &ParsedCommand,
        mut cwds: Vec<Option<PathBuf>>,
        depth: usize,
    ) {
        let invocations: Vec<Vec<Invocation>> = parsed
            .commands
            .iter()
            .zip(&parsed.meta)
            .map(|(c, m)| wrappers::unwrap(&c.argv, &m.argv_dyn))
            .collect();
        for (i, cmd) in parsed.commands.iter().enumerate() {
            let meta = &parsed.meta[i];
            for inv in &invocations[i] {
                let inv_cwds = chdir(inv, &cwds);
                for cwd in &inv_cwds {
                    let scene = Scene {
                        workspace: &self.workspace,
                        cwd: cwd.as_deref(),
                    };
                    let mut found = Vec::new();
                    rules::check(inv, &scene, &mut |r| found.push(r));
                    for r in found {
                        self.flag(r);
                    }
                }
                self.code(inv, cmd, &meta.redirect_dyn, &inv_cwds, depth);
            }
            for (r, d) in cmd.redirects.iter().zip(&meta.redirect_dyn) {
                if !r.op.writes() {
                    continue;
                }
                for cwd in &cwds {
                    let scene = Scene {
                        workspace: &self.workspace,
                        cwd: cwd.as_deref(),
                    };
                    if let Some(dev) = rules::device(&r.target, *d, &scene) {
                        self.flag(format!("writes to a device: {}", dev.display()));
                    }
                }
            }
            for inv in &invocations[i] {
                if let Some(new) = cd_targets(inv, &cwds) {
                    cwds = after_cd(cwds, new, meta.subshell);
                }
            }
        }
        if parsed.unanalysed {
            self.flag("part of the command could not be analysed".to_string());
        }
        self.pipelines(parsed, &invocations);
        self.substituted_downloads(parsed, &invocations);
        self.fork_bombs(parsed);
    }

    /// Code a command runs that is not a command of this line: `sh -c`,
    /// `eval`, `source`, `trap`, a shell fed a here-document.
    fn code(
        &mut self,
        inv: &Invocation,
        cmd: &super::SimpleCommand,
        redirect_dyn: &[Dyn],
        cwds: &[Option<PathBuf>],
        depth: usize,
    ) {
        let name = inv.name();
        if inv.dyn_.first() == Some(&Dyn::Runtime) {
            let shown = inv.argv.first().map_or("", String::as_str);
            self.flag(format!("runs a command only known at run time: {shown}"));
        }
        let args = inv.args();
        match name {
            "eval" => {
                if (0..args.len()).any(|i| inv.arg_dyn(i) == Dyn::Runtime) {
                    self.flag("eval of text only known at run time".to_string());
                } else {
                    self.shell_code("eval", &args.join(" "), cwds, depth);
                }
            }
            "source" | "." => match args.first() {
                Some(file) if inv.arg_dyn(0) == Dyn::Runtime => {
                    self.flag(format!("sources a file only known at run time: {file}"));
                }
                _ => {}
            },
            "trap" => {
                if let Some(code) = args.first().filter(|a| !a.starts_with('-')) {
                    if inv.arg_dyn(0) == Dyn::Runtime {
                        self.flag("trap runs code only known at run time".to_string());
                    } else {
                        self.shell_code("trap", code, cwds, depth);
                    }
                }
            }
            "su" => {
                let at = args.iter().position(|a| a == "-c" || a == "--command");
                if let Some(code) = at.and_then(|i| args.get(i + 1)) {
                    self.shell_code("su -c", code, cwds, depth);
                }
            }
            _ => {}
        }
        match wrappers::code_from(inv) {
            Some(CodeFrom::Arg(_, Dyn::Runtime)) => {
                self.flag(format!("runs {name} code only known at run time"));
            }
            Some(CodeFrom::Arg(code, _)) if wrappers::is_shell(name) => {
                self.shell_code(name, &code, cwds, depth);
            }
            Some(CodeFrom::Stdin) if wrappers::is_shell(name) => {
                for (r, d) in cmd.redirects.iter().zip(redirect_dyn) {
                    if !matches!(r.op, RedirectOp::HereDoc | RedirectOp::HereString) {
                        continue;
                    }
                    if *d == Dyn::Runtime {
                        self.flag(format!("runs {name} code only known at run time"));
                    } else {
                        self.shell_code(name, &r.target, cwds, depth);
                    }
                }
            }
            _ => {}
        }
    }

    fn shell_code(&mut self, what: &str, code: &str, cwds: &[Option<PathBuf>], depth: usize) {
        if depth >= MAX_CODE_DEPTH {
            self.flag(format!("shell code nested too deeply to analyse ({what})"));
            return;
        }
        match super::parse(code) {
            Ok(inner) => self.command_line(&inner, cwds.to_vec(), depth + 1),
            Err(e) => self.flag(format!("cannot analyse the code given to {what}: {e}")),
        }
    }

    /// `curl … | sh`: a download piped into an interpreter reading its code
    /// from standard input.
    fn pipelines(&mut self, parsed: &ParsedCommand, invocations: &[Vec<Invocation>]) {
        for stages in &parsed.stages {
            let mut downloader: Option<&str> = None;
            for stage in stages {
                let invs = || stage.clone().flat_map(|i| invocations[i].iter());
                if let Some(dl) = downloader {
                    let runs = invs().find(|inv| reads_code_from_stdin(inv));
                    if let Some(interp) = runs {
                        self.flag(format!(
                            "downloaded code piped into an interpreter: {dl} | {}",
                            interp.name()
                        ));
                    }
                }
                if let Some(dl) = invs().find(|inv| rules::is_downloader(inv.name())) {
                    downloader.get_or_insert(dl.name());
                }
            }
        }
    }

    /// `sh -c "$(curl …)"`, `bash <(curl …)`, `eval "$(wget -O- …)"`.
    fn substituted_downloads(&mut self, parsed: &ParsedCommand, invocations: &[Vec<Invocation>]) {
        for (i, invs) in invocations.iter().enumerate() {
            let Some(dl) = invs.iter().find(|inv| rules::is_downloader(inv.name())) else {
                continue;
            };
            let mut parent = parsed.meta[i].parent;
            let mut hops = 0;
            while let Some(p) = parent {
                let runner = invocations[p].iter().find(|inv| {
                    wrappers::is_interpreter(inv.name())
                        || matches!(inv.name(), "eval" | "source" | ".")
                });
                if let Some(r) = runner {
                    self.flag(format!(
                        "runs downloaded code: {} … {}",
                        r.name(),
                        dl.name()
                    ));
                    break;
                }
                parent = parsed.meta[p].parent;
                hops += 1;
                if hops > parsed.commands.len() {
                    break;
                }
            }
        }
    }

    /// A function that calls itself in a pipeline or in the background:
    /// `:(){ :|:& };:`.
    fn fork_bombs(&mut self, parsed: &ParsedCommand) {
        for f in &parsed.functions {
            let bomb = f.body.clone().any(|i| {
                let meta = &parsed.meta[i];
                parsed.commands[i].argv.first() == Some(&f.name) && (meta.piped || meta.background)
            });
            if bomb {
                self.flag(format!(
                    "fork bomb: function `{}` calls itself in a pipeline or in the background",
                    f.name
                ));
            }
        }
    }
}

fn reads_code_from_stdin(inv: &Invocation) -> bool {
    match inv.name() {
        "source" | "." | "eval" => inv.args().first().is_some_and(|a| a == "/dev/stdin"),
        _ => wrappers::code_from(inv) == Some(CodeFrom::Stdin),
    }
}

/// The directories an invocation runs in (`env -C DIR cmd`).
pub(crate) fn chdir(inv: &Invocation, cwds: &[Option<PathBuf>]) -> Vec<Option<PathBuf>> {
    match &inv.chdir {
        None => cwds.to_vec(),
        Some((dir, d)) => cwds
            .iter()
            .map(|cwd| dir_of(paths::resolve(dir, *d, cwd.as_deref())))
            .collect(),
    }
}

fn dir_of(t: Target) -> Option<PathBuf> {
    match t {
        Target::Path(p) => Some(p),
        _ => None,
    }
}

/// The directories after a `cd`. One that surely succeeds (an existing
/// directory) outside a subshell replaces the current directory; any other
/// may or may not have happened, so it is added to them.
pub(crate) fn after_cd(
    cwds: Vec<Option<PathBuf>>,
    new: Vec<Option<PathBuf>>,
    subshell: bool,
) -> Vec<Option<PathBuf>> {
    let sure = !subshell && new.iter().all(|d| d.as_ref().is_some_and(|p| p.is_dir()));
    let mut out = if sure { Vec::new() } else { cwds };
    for dir in new {
        if out.len() >= MAX_CWDS {
            if !out.contains(&None) {
                out.push(None);
            }
            break;
        }
        if !out.contains(&dir) {
            out.push(dir);
        }
    }
    out
}

/// Where a `cd`/`pushd`/`popd` goes, from each current directory.
pub(crate) fn cd_targets(
    inv: &Invocation,
    cwds: &[Option<PathBuf>],
) -> Option<Vec<Option<PathBuf>>> {
    match inv.name() {
        "cd" | "pushd" => {}
        "popd" => return Some(vec![None]),
        _ => return None,
    }
    let args = inv.args();
    let at = args
        .iter()
        .position(|a| !matches!(a.as_str(), "-L" | "-P" | "-e" | "-@" | "--"))
        .unwrap_or(args.len());
    let Some(dir) = args.get(at) else {
        return Some(vec![paths::expand_home("~")]);
    };
    if dir == "-" || dir.starts_with('+') || (dir.starts_with('-') && dir.len() > 1) {
        return Some(vec![None]);
    }
    let d = inv.arg_dyn(at);
    Some(
        cwds.iter()
            .map(|cwd| dir_of(paths::resolve(dir, d, cwd.as_deref())))
            .collect(),
    )
}
