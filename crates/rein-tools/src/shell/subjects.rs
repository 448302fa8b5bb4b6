//! What permission rules are matched against: every command a line runs,
//! also those hidden behind wrappers and in shell code given as text.

use super::wrappers::{self, CodeFrom, Invocation};
use super::{Dyn, ParsedCommand, RedirectOp, SimpleCommand};

/// How deep `bash -c '… bash -c "…"'`, `eval` and friends are followed (as
/// deep as the classifier follows them).
const MAX_CODE_DEPTH: usize = 4;

/// Stands for the words `xargs` reads from its input: `echo a | xargs rm`
/// runs `rm …`, which `bash(rm *)` matches.
pub(crate) const INPUT_ARGS: &str = "…";

pub(crate) fn rule_subjects(parsed: &ParsedCommand) -> Vec<String> {
    let mut found = Found::default();
    found.line(parsed, 0);
    let mut out: Vec<String> = Vec::new();
    let mut push = |text: String| {
        if !text.trim().is_empty() && !out.contains(&text) {
            out.push(text);
        }
    };
    for argv in found.argvs {
        let Some(program) = argv.first() else {
            continue;
        };
        let alias = path_named(program, found.moves).then(|| {
            let mut words = vec![wrappers::basename(program).to_string()];
            words.extend(argv[1..].iter().cloned());
            words.join(" ")
        });
        push(argv.join(" "));
        if let Some(alias) = alias {
            push(alias);
        }
    }
    for code in found.raw {
        push(code);
    }
    out
}

/// Whether `program` names a program by a path that may lead out of the
/// folder the command runs in (`/bin/rm`, `~/bin/x`, `../../bin/rm`), or
/// by any path when the line changes folders first (`cd /bin && ./rm`):
/// then rules see its base name as well. A path below the current folder
/// (`./gradlew`, `scripts/check.sh`) names a program of the project, and
/// keeps only its own spelling, so that `bash(./gradlew *)` still covers
/// it.
fn path_named(program: &str, moves: bool) -> bool {
    if !program.contains('/') || wrappers::basename(program).is_empty() {
        return false;
    }
    moves
        || program.starts_with('/')
        || program.starts_with('~')
        || program.split('/').any(|c| c == "..")
}

#[derive(Default)]
struct Found {
    /// Every command's words: simple commands, then what they wrap.
    argvs: Vec<Vec<String>>,
    /// Shell code that could not be parsed (or is nested too deeply): as
    /// text, so deny rules can still match its start.
    raw: Vec<String>,
    /// Some command changes the folder (`cd`, `pushd`, `popd`, `env -C`,
    /// `sudo -D`).
    moves: bool,
}

impl Found {
    fn line(&mut self, parsed: &ParsedCommand, depth: usize) {
        for (i, cmd) in parsed.commands.iter().enumerate() {
            let meta = parsed.meta.get(i);
            let argv_dyn = meta.map_or(&[][..], |m| &m.argv_dyn[..]);
            let redirect_dyn = meta.map_or(&[][..], |m| &m.redirect_dyn[..]);
            self.argvs.push(cmd.argv.clone());
            for (n, inv) in wrappers::unwrap(&cmd.argv, argv_dyn).iter().enumerate() {
                self.moves |= inv.chdir.is_some() || matches!(inv.name(), "cd" | "pushd" | "popd");
                if n > 0 {
                    self.wrapped(inv, depth);
                }
                for code in code_run_by(inv, cmd, redirect_dyn) {
                    self.code(&code, depth);
                }
            }
        }
    }

    /// A command run by a wrapper. One whose name holds a space came from
    /// text a wrapper hands to a shell (`watch 'rm x; ls'`): its words are
    /// shell code.
    fn wrapped(&mut self, inv: &Invocation, depth: usize) {
        match inv.argv.first() {
            Some(name) if name.contains(char::is_whitespace) => {
                self.code(&inv.argv.join(" "), depth);
            }
            Some(_) => {
                let mut argv = inv.argv.clone();
                // `xargs rm` runs `rm` with words read from its input (unless
                // `-I` placed them, which made those words dynamic).
                let placed = (1..inv.argv.len()).any(|i| inv.dyn_.get(i) == Some(&Dyn::Runtime));
                if inv.input_args && !placed {
                    argv.push(INPUT_ARGS.to_string());
                }
                self.argvs.push(argv);
            }
            None => {}
        }
    }

    fn code(&mut self, code: &str, depth: usize) {
        let parsed = if depth >= MAX_CODE_DEPTH {
            None
        } else {
            super::parse(code).ok()
        };
        match parsed {
            Some(inner) => self.line(&inner, depth + 1),
            None => self.raw.push(code.trim().to_string()),
        }
    }
}

/// The shell code `inv` runs that is known as written: `sh -c CODE`,
/// `eval WORDS`, `trap CODE SIGNAL`, `su -c CODE`, a shell fed a
/// here-document or here-string. Code only known at run time is left out
/// (the line is opaque then: no pattern rule allows it).
fn code_run_by(inv: &Invocation, cmd: &SimpleCommand, redirect_dyn: &[Dyn]) -> Vec<String> {
    let name = inv.name();
    let args = inv.args();
    let known = |i: usize| inv.arg_dyn(i) != Dyn::Runtime;
    let mut out = Vec::new();
    match name {
        "eval" if (0..args.len()).all(known) => out.push(args.join(" ")),
        "trap" => {
            if let Some(code) = args.first().filter(|a| !a.starts_with('-') && known(0)) {
                out.push(code.clone());
            }
        }
        "su" => {
            let at = args.iter().position(|a| a == "-c" || a == "--command");
            if let Some(i) = at.map(|i| i + 1).filter(|&i| known(i))
                && let Some(code) = args.get(i)
            {
                out.push(code.clone());
            }
        }
        _ => {}
    }
    if wrappers::is_shell(name) {
        match wrappers::code_from(inv) {
            Some(CodeFrom::Arg(code, d)) if d != Dyn::Runtime => out.push(code),
            Some(CodeFrom::Stdin) => {
                for (r, d) in cmd.redirects.iter().zip(redirect_dyn) {
                    if matches!(r.op, RedirectOp::HereDoc | RedirectOp::HereString)
                        && *d != Dyn::Runtime
                    {
                        out.push(r.target.clone());
                    }
                }
            }
            _ => {}
        }
    }
    out
}
