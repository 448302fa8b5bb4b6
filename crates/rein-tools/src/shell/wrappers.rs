//! Commands that run other commands: `sudo`, `env`, `nice`, `timeout`,
//! `xargs`, `find -exec`, ... and interpreters (`sh -c`, `python3`).

use super::Dyn;

/// One command an argv runs: the argv itself, or one it wraps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Invocation {
    pub(crate) argv: Vec<String>,
    pub(crate) dyn_: Vec<Dyn>,
    /// Runs in this directory (`env -C DIR`, `sudo -D DIR`), relative to the
    /// current one.
    pub(crate) chdir: Option<(String, Dyn)>,
    /// More arguments come from standard input (`xargs`).
    pub(crate) input_args: bool,
}

impl Invocation {
    /// The command name without its directory (`/bin/rm` -> `rm`).
    pub(crate) fn name(&self) -> &str {
        self.argv.first().map_or("", |n| basename(n))
    }

    /// The words after the command name.
    pub(crate) fn args(&self) -> &[String] {
        self.argv.get(1..).unwrap_or(&[])
    }

    pub(crate) fn arg_dyn(&self, i: usize) -> Dyn {
        self.dyn_.get(i + 1).copied().unwrap_or(Dyn::Static)
    }
}

pub(crate) fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// How deep wrappers may nest (`sudo env nice timeout 5 …`).
const MAX_WRAP: usize = 16;

/// Every command `argv` runs: itself first, then what it wraps, outermost
/// first.
pub(crate) fn unwrap(argv: &[String], dyn_: &[Dyn]) -> Vec<Invocation> {
    let mut out = Vec::new();
    let mut cur = Invocation {
        argv: argv.to_vec(),
        dyn_: dyn_.to_vec(),
        chdir: None,
        input_args: false,
    };
    for _ in 0..MAX_WRAP {
        let inner = wrapped(&cur);
        let found_find = cur.name() == "find";
        out.push(cur);
        if found_find {
            // find may run several commands; they wrap nothing further here.
            for inv in inner {
                out.extend(unwrap(&inv.argv, &inv.dyn_));
            }
            break;
        }
        match inner.into_iter().next() {
            Some(next) => cur = next,
            None => break,
        }
    }
    out
}

/// Short options (as a set of letters) and long options taking an argument.
struct Spec {
    short_arg: &'static str,
    long_arg: &'static [&'static str],
}

/// Skip the options of a wrapper; returns the index in argv of the first
/// operand. Calls `seen(option, argument)` for each option.
fn skip_options(argv: &[String], spec: &Spec, mut seen: impl FnMut(&str, Option<&str>)) -> usize {
    let mut i = 1;
    while i < argv.len() {
        let w = &argv[i];
        if w == "--" {
            return i + 1;
        }
        if let Some(long) = w.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            if value.is_none() && spec.long_arg.contains(&name) {
                seen(name, argv.get(i + 1).map(String::as_str));
                i += 2;
            } else {
                seen(name, value);
                i += 1;
            }
            continue;
        }
        if w.len() < 2 || !w.starts_with('-') {
            return i;
        }
        let letters: Vec<char> = w.chars().skip(1).collect();
        let mut consumed_next = false;
        for (k, c) in letters.iter().enumerate() {
            if spec.short_arg.contains(*c) {
                let attached: String = letters[k + 1..].iter().collect();
                if attached.is_empty() {
                    seen(&c.to_string(), argv.get(i + 1).map(String::as_str));
                    consumed_next = true;
                } else {
                    seen(&c.to_string(), Some(&attached));
                }
                break;
            }
            seen(&c.to_string(), None);
        }
        i += if consumed_next { 2 } else { 1 };
    }
    i
}

fn rest(inv: &Invocation, from: usize) -> Option<Invocation> {
    (from < inv.argv.len()).then(|| Invocation {
        argv: inv.argv[from..].to_vec(),
        dyn_: inv
            .dyn_
            .get(from..)
            .map(<[Dyn]>::to_vec)
            .unwrap_or_default(),
        chdir: inv.chdir.clone(),
        input_args: inv.input_args,
    })
}

/// What one wrapper runs.
fn wrapped(inv: &Invocation) -> Vec<Invocation> {
    if let Some(spec) = plain_options(inv.name()) {
        let at = skip_options(&inv.argv, &spec, |_, _| {});
        return rest(inv, at).into_iter().collect();
    }
    match inv.name() {
        "sudo" => sudo(inv),
        "env" => env(inv),
        "timeout" => {
            let spec = Spec {
                short_arg: "sk",
                long_arg: &["signal", "kill-after"],
            };
            // The first operand is the duration.
            let at = skip_options(&inv.argv, &spec, |_, _| {}) + 1;
            rest(inv, at).into_iter().collect()
        }
        "command" => {
            let mut query = false;
            let at = skip_options(&inv.argv, &NO_OPTIONS, |o, _| {
                query |= o == "v" || o == "V";
            });
            // `command -v NAME` only looks the name up.
            match query {
                true => Vec::new(),
                false => rest(inv, at).into_iter().collect(),
            }
        }
        "xargs" => xargs(inv),
        "find" => find_exec(inv),
        _ => Vec::new(),
    }
}

const NO_OPTIONS: Spec = Spec {
    short_arg: "",
    long_arg: &[],
};

/// The options taking an argument of the wrappers that run their operands
/// as a command once their options are skipped.
fn plain_options(wrapper: &str) -> Option<Spec> {
    let (short_arg, long_arg): (&'static str, &'static [&'static str]) = match wrapper {
        "doas" => ("uC", &[]),
        "pkexec" => ("", &["user"]),
        "run0" => (
            "ugD",
            &[
                "user",
                "group",
                "chdir",
                "unit",
                "property",
                "description",
                "slice",
                "nice",
                "setenv",
            ],
        ),
        "nice" => ("n", &["adjustment"]),
        "watch" => ("nq", &["interval", "equexit"]),
        "nohup" | "setsid" | "builtin" | "busybox" => ("", &[]),
        "stdbuf" => ("ioe", &[]),
        "ionice" => ("cnpPu", &["class", "classdata"]),
        "time" => ("of", &["output", "format"]),
        "exec" => ("a", &[]),
        _ => return None,
    };
    Some(Spec {
        short_arg,
        long_arg,
    })
}

/// `sudo [options] command`: nothing for `sudo -e` (it edits files), and
/// the folder of `-D`/`--chdir` carried to the command.
fn sudo(inv: &Invocation) -> Vec<Invocation> {
    let argv = &inv.argv;
    let spec = Spec {
        short_arg: "ugpCDrtTUh",
        long_arg: &[
            "user",
            "group",
            "prompt",
            "close-from",
            "chdir",
            "role",
            "type",
            "other-user",
            "host",
        ],
    };
    let mut edit = false;
    let at = skip_options(argv, &spec, |o, _| edit |= o == "e" || o == "edit");
    if edit {
        return Vec::new();
    }
    let chdir = argv[..at.min(argv.len())]
        .iter()
        .position(|w| w == "-D" || w.starts_with("--chdir"));
    let mut inner: Vec<Invocation> = rest(inv, at).into_iter().collect();
    if let (Some(pos), Some(first)) = (chdir, inner.first_mut()) {
        let dyn_at = |i: usize| inv.dyn_.get(i).copied().unwrap_or_default();
        first.chdir = match argv[pos].strip_prefix("--chdir=") {
            Some(d) => Some((d.to_string(), dyn_at(pos))),
            None => argv.get(pos + 1).map(|d| (d.clone(), dyn_at(pos + 1))),
        };
    }
    inner
}

/// `env [options] [NAME=VALUE...] command`: `-S` splits its string into
/// the command's words; `-C DIR` is the command's folder.
fn env(inv: &Invocation) -> Vec<Invocation> {
    let argv = &inv.argv;
    let spec = Spec {
        short_arg: "uCS",
        long_arg: &["unset", "chdir", "split-string"],
    };
    let mut dir: Option<String> = None;
    let mut split: Option<String> = None;
    let mut at = skip_options(argv, &spec, |o, v| match o {
        "C" | "chdir" => dir = v.map(str::to_string),
        "S" | "split-string" => split = v.map(str::to_string),
        _ => {}
    });
    if let Some(s) = split {
        // `env -S 'cmd args'`: the string is split into words.
        let mut words: Vec<String> = s.split_whitespace().map(str::to_string).collect();
        words.extend(argv[at.min(argv.len())..].iter().cloned());
        let n = words.len();
        let d = inv.dyn_.iter().copied().max().unwrap_or_default();
        return vec![Invocation {
            argv: words,
            dyn_: vec![d; n],
            chdir: inv.chdir.clone(),
            input_args: inv.input_args,
        }];
    }
    while argv.get(at).is_some_and(|w| is_assignment(w)) {
        at += 1;
    }
    let mut inner: Vec<Invocation> = rest(inv, at).into_iter().collect();
    if let (Some(d), Some(first)) = (dir, inner.first_mut()) {
        first.chdir = Some((d, Dyn::Static));
    }
    inner
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

fn xargs(inv: &Invocation) -> Vec<Invocation> {
    let spec = Spec {
        short_arg: "adEILnPs",
        long_arg: &[
            "arg-file",
            "delimiter",
            "max-lines",
            "max-args",
            "max-procs",
            "max-chars",
            "process-slot-var",
            "replace",
        ],
    };
    let mut replace: Option<String> = None;
    let at = skip_options(&inv.argv, &spec, |o, v| {
        if o == "I" || o == "replace" {
            replace = Some(v.unwrap_or("{}").to_string());
        } else if o == "i" {
            replace = Some("{}".to_string());
        }
    });
    let mut inner = rest(inv, at).unwrap_or_else(|| Invocation {
        argv: vec!["echo".to_string()],
        dyn_: vec![Dyn::Static],
        chdir: inv.chdir.clone(),
        input_args: false,
    });
    inner.input_args = true;
    if let Some(r) = replace {
        for (w, d) in inner.argv.iter().zip(inner.dyn_.iter_mut()) {
            if w.contains(&r) {
                *d = Dyn::Runtime;
            }
        }
    }
    vec![inner]
}

/// The commands of `find … -exec cmd {} ;` (also `-execdir`, `-ok`,
/// `-okdir`), with `{}` standing for an entry below the starting points.
fn find_exec(inv: &Invocation) -> Vec<Invocation> {
    let (starts, expr) = find_parts(inv);
    let mut out = Vec::new();
    let mut i = expr;
    while i < inv.argv.len() {
        let w = &inv.argv[i];
        if !matches!(w.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            i += 1;
            continue;
        }
        let begin = i + 1;
        let mut end = begin;
        while end < inv.argv.len() && inv.argv[end] != ";" && inv.argv[end] != "+" {
            end += 1;
        }
        for (start, start_dyn) in &starts {
            let mut argv = Vec::new();
            let mut dyn_ = Vec::new();
            for k in begin..end {
                let word = &inv.argv[k];
                let d = inv.dyn_.get(k).copied().unwrap_or_default();
                if word.contains("{}") {
                    let base = start.trim_end_matches('/');
                    argv.push(format!("{base}/{}", word.replace("{}", "*")));
                    dyn_.push(d.max(*start_dyn).max(Dyn::Glob));
                } else {
                    argv.push(word.clone());
                    dyn_.push(d);
                }
            }
            if !argv.is_empty() {
                out.push(Invocation {
                    argv,
                    dyn_,
                    chdir: inv.chdir.clone(),
                    input_args: inv.input_args,
                });
            }
        }
        i = end + 1;
    }
    out
}

/// find's starting points (`.` when none) and the index where its
/// expression begins.
pub(crate) fn find_parts(inv: &Invocation) -> (Vec<(String, Dyn)>, usize) {
    let argv = &inv.argv;
    let mut i = 1;
    while i < argv.len() {
        match argv[i].as_str() {
            "-H" | "-L" | "-P" => i += 1,
            "-D" => i += 2,
            w if w.starts_with("-O") => i += 1,
            _ => break,
        }
    }
    let mut starts = Vec::new();
    while i < argv.len() {
        let w = &argv[i];
        if w.starts_with('-') || matches!(w.as_str(), "(" | "!" | ")" | ",") {
            break;
        }
        starts.push((w.clone(), inv.dyn_.get(i).copied().unwrap_or_default()));
        i += 1;
    }
    if starts.is_empty() {
        starts.push((".".to_string(), Dyn::Static));
    }
    (starts, i)
}

/// Shells whose `-c` argument is shell code.
pub(crate) fn is_shell(name: &str) -> bool {
    matches!(
        name,
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "mksh" | "ash" | "yash" | "fish" | "csh" | "tcsh"
    )
}

/// Programs that run code given to them.
pub(crate) fn is_interpreter(name: &str) -> bool {
    is_shell(name)
        || name.starts_with("python")
        || name.starts_with("pypy")
        || matches!(
            name,
            "perl"
                | "ruby"
                | "node"
                | "nodejs"
                | "php"
                | "deno"
                | "bun"
                | "lua"
                | "tclsh"
                | "Rscript"
        )
}

/// Where a shell or interpreter takes its code from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CodeFrom {
    /// `sh -c CODE`, `python3 -c CODE`: the code, and how dynamic it is.
    Arg(String, Dyn),
    /// Its standard input.
    Stdin,
    /// A script file or module.
    File,
}

/// Where the interpreter `inv` reads its code from (`None`: not an
/// interpreter).
pub(crate) fn code_from(inv: &Invocation) -> Option<CodeFrom> {
    let name = inv.name();
    if !is_interpreter(name) {
        return None;
    }
    let (code_flags, arg_flags): (&[&str], &[&str]) = if is_shell(name) {
        (&["c", "command"], &["o", "O", "rcfile", "init-file"])
    } else if name.starts_with("python") || name.starts_with("pypy") {
        (&["c", "m"], &["W", "X", "Q"])
    } else if matches!(name, "node" | "nodejs" | "deno" | "bun") {
        (&["e", "eval", "p", "print"], &["r", "require", "import"])
    } else if name == "php" {
        (&["r", "f"], &["c", "d"])
    } else {
        (&["e", "E"], &["I", "r", "M"])
    };
    let argv = &inv.argv;
    let mut i = 1;
    let mut stdin_flag = false;
    while i < argv.len() {
        let w = &argv[i];
        if w == "--" || w == "-" {
            break;
        }
        let opt = match w.strip_prefix("--") {
            Some(long) => vec![long.split('=').next().unwrap_or(long).to_string()],
            None if w.len() > 1
                && (w.starts_with('-') || (is_shell(name) && w.starts_with('+'))) =>
            {
                w.chars().skip(1).map(String::from).collect()
            }
            None => break,
        };
        if let Some(code) = opt.iter().find(|o| code_flags.contains(&o.as_str())) {
            if code != "m" && !(name == "php" && code == "f") {
                return Some(match argv.get(i + 1) {
                    Some(c) => {
                        CodeFrom::Arg(c.clone(), inv.dyn_.get(i + 1).copied().unwrap_or_default())
                    }
                    None => CodeFrom::Stdin,
                });
            }
            return Some(CodeFrom::File);
        }
        stdin_flag |= is_shell(name) && opt.iter().any(|o| o == "s");
        i += if opt.len() == 1 && arg_flags.contains(&opt[0].as_str()) && !w.contains('=') {
            2
        } else {
            1
        };
    }
    let operand = argv.get(i).map(String::as_str);
    Some(match operand {
        _ if stdin_flag => CodeFrom::Stdin,
        None | Some("-" | "/dev/stdin") => CodeFrom::Stdin,
        Some("--") => match argv.get(i + 1).map(String::as_str) {
            None | Some("-" | "/dev/stdin") => CodeFrom::Stdin,
            Some(_) => CodeFrom::File,
        },
        Some(_) => CodeFrom::File,
    })
}

/// Whether running `argv` runs code rein cannot see statically: `eval`,
/// `source`, `.`, `exec`, `trap`, a command name only known at run time, a
/// shell given code only known at run time.
pub(crate) fn is_opaque(argv: &[String], dyn_: &[Dyn]) -> bool {
    unwrap(argv, dyn_).iter().any(|inv| {
        matches!(inv.name(), "eval" | "source" | "." | "exec" | "trap")
            || inv.dyn_.first() == Some(&Dyn::Runtime)
            || matches!(code_from(inv), Some(CodeFrom::Arg(_, Dyn::Runtime)))
    })
}
