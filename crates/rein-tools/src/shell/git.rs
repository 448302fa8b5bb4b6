//! The rule for git commands: history rewriting, discarding work, force
//! pushes, and config keys whose value git runs as a command (set with
//! `git -c` or `git config`).

use super::Dyn;
use super::wrappers::Invocation;

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
