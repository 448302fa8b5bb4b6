//! The classifier: walks a parsed command line and collects the reasons it
//! is dangerous. Per-command rules are in `rules`; this file follows what
//! spans commands: `cd`, pipelines, substitutions, code run by shells and
//! `eval`, functions, redirections, and git.

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

/// git: history rewriting, discarding work, force pushes.
pub(crate) fn git(inv: &Invocation, flag: &mut dyn FnMut(String)) {
    let args = inv.args();
    let mut i = 0;
    while i < args.len() {
        let w = args[i].as_str();
        match w {
            "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix" => i += 2,
            "-c" | "--config-env" => {
                if let Some(kv) = args.get(i + 1) {
                    git_config(kv, flag);
                }
                i += 2;
            }
            _ if w.starts_with("--config-env=") => {
                git_config(&w["--config-env=".len()..], flag);
                i += 1;
            }
            _ if w.starts_with('-') => i += 1,
            _ => break,
        }
    }
    let Some(sub) = args.get(i) else { return };
    let rest = &args[i + 1..];
    let has = |names: &[&str]| rest.iter().any(|a| names.contains(&a.as_str()));
    let short = |c: char| {
        rest.iter().take_while(|a| *a != "--").any(|a| {
            a.starts_with('-')
                && !a.starts_with("--")
                && a.chars().skip(1).all(char::is_alphanumeric)
                && a.contains(c)
        })
    };
    let long_prefix = |p: &str| rest.iter().any(|a| a.starts_with(p));
    match sub.as_str() {
        "push" => {
            if short('f')
                || has(&["--force", "--force-if-includes"])
                || long_prefix("--force-with-lease")
            {
                flag("git push --force rewrites remote history".to_string());
            }
            if has(&["--mirror"]) {
                flag("git push --mirror overwrites the remote".to_string());
            }
            let operands = rest.iter().filter(|a| !a.starts_with('-'));
            if short('d')
                || has(&["--delete", "--prune"])
                || operands.clone().skip(1).any(|a| a.starts_with(':'))
            {
                flag("git push deletes remote refs".to_string());
            }
            if operands.skip(1).any(|a| a.starts_with('+')) {
                flag("git push +refspec force-updates remote history".to_string());
            }
        }
        "reset" if has(&["--hard", "--merge", "--keep"]) => {
            flag("git reset --hard discards uncommitted changes".to_string());
        }
        "clean" => {
            let force = short('f') || has(&["--force"]);
            let dirs_or_ignored = short('d') || short('x') || short('X');
            let dry = short('n') || has(&["--dry-run"]);
            if force && dirs_or_ignored && !dry {
                flag("git clean -f with -d/-x deletes untracked files".to_string());
            }
        }
        "rebase" if !has(&["--abort", "--quit", "--show-current-patch"]) => {
            flag("git rebase rewrites history".to_string());
        }
        "filter-branch" | "filter-repo" => flag(format!("git {sub} rewrites history")),
        "commit" if has(&["--amend"]) => {
            flag("git commit --amend rewrites the last commit".to_string())
        }
        "reflog" if rest.first().is_some_and(|a| a == "expire" || a == "delete") => {
            flag("git reflog expire/delete drops history".to_string());
        }
        "update-ref" if short('d') => flag("git update-ref -d deletes a ref".to_string()),
        "branch" => {
            let delete = short('d') || has(&["--delete"]);
            let force = short('f') || has(&["--force"]);
            if short('D') || (delete && force) {
                flag("git branch -D deletes a branch that may be unmerged".to_string());
            }
        }
        "checkout" => {
            let dashdash = rest.iter().position(|a| a == "--");
            let paths_given = dashdash.is_some_and(|p| p + 1 < rest.len());
            if short('f') || has(&["--force", ".", ":/"]) || paths_given {
                flag("git checkout discards uncommitted changes".to_string());
            }
        }
        "restore" => {
            let staged_only =
                (short('S') || has(&["--staged"])) && !(short('W') || has(&["--worktree"]));
            let paths_given = rest.iter().any(|a| !a.starts_with('-'));
            if !staged_only && paths_given {
                flag("git restore discards uncommitted changes".to_string());
            }
        }
        "switch" if short('f') || has(&["--force", "--discard-changes"]) => {
            flag("git switch --discard-changes discards uncommitted changes".to_string());
        }
        "stash" if rest.first().is_some_and(|a| a == "drop" || a == "clear") => {
            flag("git stash drop/clear discards stashed changes".to_string());
        }
        "config" => git_config_command(inv, i + 1, flag),
        _ => {}
    }
}

/// `git config …` (any file: the repository's, `--global`, `--system`,
/// `--file F`) that sets a key whose value git runs as a command, or a key
/// only known at run time; `--edit` and renaming a section, which can set
/// any key. `from`: the index in `inv.args()` of the first word after
/// `config`. Reading, listing and unsetting are fine.
fn git_config_command(inv: &Invocation, from: usize, flag: &mut dyn FnMut(String)) {
    let args = inv.args();
    // Indexes into `args` of the words that are not options.
    let mut operands: Vec<usize> = Vec::new();
    let mut action: Option<&str> = None;
    let mut k = from;
    let mut done = false;
    while k < args.len() {
        let w = args[k].as_str();
        if done || w == "-" || !w.starts_with('-') || inv.arg_dyn(k) == Dyn::Runtime {
            operands.push(k);
        } else if w == "--" {
            done = true;
        } else if let Some(long) = w.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, _)) => (n, true),
                None => (long, false),
            };
            match name {
                "file" | "blob" | "type" | "default" | "comment" | "value" | "url" if !attached => {
                    k += 1;
                }
                "edit" | "rename-section" | "add" | "replace-all" | "get" | "get-all"
                | "get-regexp" | "get-urlmatch" | "get-color" | "get-colorbool" | "list"
                | "unset" | "unset-all" | "remove-section" => action = Some(name),
                _ => {}
            }
        } else {
            // Short options: -f FILE (or -fFILE), -e, -l, -z.
            for (n, c) in w[1..].char_indices() {
                match c {
                    'f' => {
                        if n + 1 == w.len() - 1 {
                            k += 1;
                        }
                        break;
                    }
                    'e' => action = Some("edit"),
                    'l' => action = Some("list"),
                    _ => {}
                }
            }
        }
        k += 1;
    }
    let word = |n: usize| operands.get(n).map(|&i| (args[i].as_str(), inv.arg_dyn(i)));
    // Git 2.46 and later: `git config set KEY VALUE`, `git config edit`, ...
    let (action, keys_from) = match word(0) {
        Some((sub, Dyn::Static))
            if action.is_none()
                && matches!(
                    sub,
                    "set"
                        | "get"
                        | "unset"
                        | "list"
                        | "edit"
                        | "rename-section"
                        | "remove-section"
                        | "get-color"
                        | "get-colorbool"
                ) =>
        {
            (Some(sub), 1)
        }
        _ => (action, 0),
    };
    let key = match action {
        Some("edit") => {
            flag("git config --edit can set any key, including commands git runs".to_string());
            return;
        }
        Some("rename-section") => {
            flag(
                "git config --rename-section can move keys into a section whose values git runs"
                    .to_string(),
            );
            return;
        }
        Some("set" | "add" | "replace-all") => word(keys_from),
        // `git config KEY VALUE [VALUE-PATTERN]`; `git config KEY` reads.
        None if operands.len() > keys_from + 1 => word(keys_from),
        _ => None,
    };
    match key {
        Some((key, d)) if d != Dyn::Static => {
            flag(format!(
                "git config sets a key only known at run time: {key}"
            ));
        }
        Some((key, _)) if git_key_runs_code(key) => {
            flag(format!(
                "git config {key} sets a command git runs (on the host, later)"
            ));
        }
        _ => {}
    }
}

/// `git -c KEY=VALUE`: keys whose value is a command git runs.
fn git_config(kv: &str, flag: &mut dyn FnMut(String)) {
    let key = kv.split_once('=').map_or(kv, |(k, _)| k);
    if git_key_runs_code(key) {
        flag(format!(
            "git -c {} runs a command",
            key.to_ascii_lowercase()
        ));
    }
}

/// Whether git runs the value of the config `key` as a command (or as
/// git options that can, or reads more config from it). Compared without
/// case (subsections are case-sensitive to git; matching more is the safe
/// side).
pub(crate) fn git_key_runs_code(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    let section = key.split('.').next().unwrap_or("");
    let name = key.rsplit('.').next().unwrap_or("");
    // Every key of these: aliases (`!cmd`, or `-c` options that set
    // commands), filter drivers, included files, pagers per command.
    let whole_section = matches!(
        section,
        "alias" | "filter" | "include" | "includeif" | "pager"
    );
    let key_runs = matches!(
        key.as_str(),
        "core.sshcommand"
            | "core.pager"
            | "core.editor"
            | "core.fsmonitor"
            | "core.hookspath"
            | "core.gitproxy"
            | "core.askpass"
            | "core.alternaterefscommand"
            | "sequence.editor"
            | "diff.external"
            | "gpg.program"
            | "credential.helper"
            | "uploadpack.packobjectshook"
            | "interactive.difffilter"
            | "imap.tunnel"
            | "sendemail.smtpserver"
            | "sendemail.sendmailcmd"
            | "init.templatedir"
            | "protocol.allow"
            | "protocol.ext.allow"
    );
    // `diff.<driver>.textconv`, `credential.<url>.helper`,
    // `gpg.<format>.program`, `merge.<driver>.driver`,
    // `remote.<name>.uploadpack`, `difftool.<tool>.cmd`, ...
    let name_runs = matches!(
        name,
        "textconv"
            | "cmd"
            | "command"
            | "helper"
            | "program"
            | "driver"
            | "uploadpack"
            | "receivepack"
            | "sshcommand"
            | "defaultkeycommand"
    ) && key.contains('.');
    let submodule_update = section == "submodule" && name == "update";
    whole_section || key_runs || name_runs || submodule_update
}
