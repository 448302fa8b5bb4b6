//! What makes one command dangerous, command by command.

use std::path::{Path, PathBuf};

use super::Dyn;
use super::paths::{self, Place, Target};
use super::wrappers::{self, Invocation};

/// Where a command runs and where the workspace is.
pub(crate) struct Scene<'a> {
    pub(crate) workspace: &'a Path,
    /// `None`: a directory only known at run time.
    pub(crate) cwd: Option<&'a Path>,
}

impl Scene<'_> {
    fn target(&self, word: &str, d: Dyn) -> Target {
        paths::resolve(word, d, self.cwd)
    }

    fn place(&self, t: &Target) -> Option<Place> {
        t.place(self.workspace)
    }
}

/// Programs that download.
pub(crate) fn is_downloader(name: &str) -> bool {
    matches!(
        name,
        "curl" | "wget" | "fetch" | "aria2c" | "http" | "https" | "xh"
    )
}

/// Check one invocation; every reason found goes to `flag`.
pub(crate) fn check(inv: &Invocation, scene: &Scene<'_>, flag: &mut dyn FnMut(String)) {
    let name = inv.name();
    match name {
        "sudo" | "su" | "doas" | "pkexec" | "run0" => {
            flag(format!("runs as another user ({name})"));
        }
        "rm" => rm(inv, scene, flag),
        "mv" => mv(inv, scene, flag),
        "find" => find_delete(inv, scene, flag),
        "shred" => flag("shred destroys file contents".to_string()),
        "truncate" => truncate(inv, scene, flag),
        "dd" => dd(inv, scene, flag),
        "chmod" => chmod(inv, scene, flag),
        "chown" | "chgrp" => chown(inv, scene, flag),
        "tee" => tee(inv, scene, flag),
        "cp" | "install" => copy(inv, scene, flag),
        "git" => super::git::git(inv, flag),
        "mkswap" | "fdisk" | "sfdisk" | "cfdisk" | "gdisk" | "sgdisk" | "parted" | "wipefs"
        | "blkdiscard" => flag(format!("partitions or wipes a disk ({name})")),
        n if n.starts_with("mkfs") => flag(format!("formats a file system ({name})")),
        _ => {}
    }
}

/// Operands of a GNU-style command (options may follow operands; `--` ends
/// them), with the options seen. `arg_opts` are short options taking an
/// argument, `long_arg` long ones.
fn operands<'a>(
    inv: &'a Invocation,
    arg_opts: &str,
    long_arg: &[&str],
) -> (Vec<(&'a str, Dyn)>, Vec<String>) {
    let args = inv.args();
    let mut ops = Vec::new();
    let mut opts = Vec::new();
    let mut done = false;
    let mut i = 0;
    while i < args.len() {
        let w = args[i].as_str();
        let d = inv.arg_dyn(i);
        i += 1;
        if done || d == Dyn::Runtime || w == "-" || !w.starts_with('-') {
            ops.push((w, d));
        } else if w == "--" {
            done = true;
        } else if let Some(long) = w.strip_prefix("--") {
            opts.push(long.to_string());
            if !long.contains('=') && long_arg.contains(&long) {
                if let Some(v) = args.get(i) {
                    opts.push(format!("{long}={v}"));
                }
                i += 1;
            }
        } else {
            for (k, c) in w.chars().skip(1).enumerate() {
                opts.push(c.to_string());
                if arg_opts.contains(c) {
                    let attached: String = w.chars().skip(k + 2).collect();
                    if attached.is_empty() {
                        if let Some(v) = args.get(i) {
                            opts.push(format!("{c}={v}"));
                        }
                        i += 1;
                    } else {
                        opts.push(format!("{c}={attached}"));
                    }
                    break;
                }
            }
        }
    }
    (ops, opts)
}

fn has(opts: &[String], any: &[&str]) -> bool {
    opts.iter().any(|o| any.contains(&o.as_str()))
}

fn rm(inv: &Invocation, scene: &Scene<'_>, flag: &mut dyn FnMut(String)) {
    let (ops, opts) = operands(inv, "", &[]);
    let recursive = has(&opts, &["r", "R", "recursive"]);
    if has(&opts, &["no-preserve-root"]) {
        flag("rm --no-preserve-root".to_string());
    }
    if inv.input_args {
        flag("xargs rm deletes paths read from its input".to_string());
    }
    for (w, d) in ops {
        let t = scene.target(w, d);
        match (scene.place(&t), recursive) {
            (None, _) => flag(format!(
                "rm of a path only known at run time (cannot know what it deletes): {}",
                t.shown()
            )),
            (Some(Place::Outside), true) => {
                flag(format!(
                    "recursive delete outside the workspace: {}",
                    t.shown()
                ));
            }
            (Some(Place::Root), true) => {
                flag(format!(
                    "recursive delete of the workspace root: {}",
                    t.shown()
                ));
            }
            (Some(Place::Outside), false) => {
                flag(format!("delete outside the workspace: {}", t.shown()))
            }
            _ => {}
        }
    }
}

fn mv(inv: &Invocation, scene: &Scene<'_>, flag: &mut dyn FnMut(String)) {
    let (mut ops, opts) = operands(inv, "tS", &["target-directory", "suffix"]);
    let targets: Vec<String> = opts
        .iter()
        .filter_map(|o| {
            o.strip_prefix("t=")
                .or_else(|| o.strip_prefix("target-directory="))
        })
        .map(str::to_string)
        .collect();
    ops.extend(targets.iter().map(|t| (t.as_str(), Dyn::Static)));
    if inv.input_args {
        flag("xargs mv moves paths read from its input".to_string());
    }
    for (w, d) in ops {
        let t = scene.target(w, d);
        match scene.place(&t) {
            None => flag(format!(
                "mv of a path only known at run time: {}",
                t.shown()
            )),
            Some(Place::Outside) => flag(format!("mv outside the workspace: {}", t.shown())),
            Some(Place::Root) => flag(format!("mv of the workspace root: {}", t.shown())),
            Some(Place::Inside) => {}
        }
    }
}

fn find_delete(inv: &Invocation, scene: &Scene<'_>, flag: &mut dyn FnMut(String)) {
    let (starts, expr) = wrappers::find_parts(inv);
    let deletes = inv.argv[expr.min(inv.argv.len())..]
        .iter()
        .any(|w| w == "-delete");
    if !deletes {
        return;
    }
    for (w, d) in starts {
        let t = scene.target(&w, d);
        match scene.place(&t) {
            None => flag(format!(
                "find -delete below a path only known at run time: {}",
                t.shown()
            )),
            Some(Place::Outside) => {
                flag(format!("find -delete outside the workspace: {}", t.shown()))
            }
            _ => {}
        }
    }
}

fn truncate(inv: &Invocation, scene: &Scene<'_>, flag: &mut dyn FnMut(String)) {
    let (ops, _) = operands(inv, "sr", &["size", "reference"]);
    for (w, d) in ops {
        let t = scene.target(w, d);
        match scene.place(&t) {
            None => flag(format!(
                "truncate of a path only known at run time: {}",
                t.shown()
            )),
            Some(Place::Outside) => flag(format!("truncate outside the workspace: {}", t.shown())),
            _ => {}
        }
    }
    if inv.input_args {
        flag("xargs truncate empties paths read from its input".to_string());
    }
}

/// Whether writing to `word` writes to a device (other than the harmless
/// ones): the device path.
pub(crate) fn device(word: &str, d: Dyn, scene: &Scene<'_>) -> Option<PathBuf> {
    if d != Dyn::Static {
        return None;
    }
    let absolute = match paths::expand_home(word) {
        Some(p) => p,
        None if word.starts_with('/') => PathBuf::from(word),
        None => scene.cwd?.join(word),
    };
    let lexical = paths::lexical(&absolute);
    if paths::harmless_device(&lexical) {
        return None;
    }
    let real = paths::real_path(&absolute);
    if paths::harmless_device(&real) {
        return None;
    }
    (lexical.starts_with("/dev") || real.starts_with("/dev")).then_some(real)
}

fn dd(inv: &Invocation, scene: &Scene<'_>, flag: &mut dyn FnMut(String)) {
    for (i, a) in inv.args().iter().enumerate() {
        let Some(of) = a.strip_prefix("of=") else {
            continue;
        };
        let d = inv.arg_dyn(i);
        if let Some(dev) = device(of, d, scene) {
            flag(format!("dd writes to a device: {}", dev.display()));
            continue;
        }
        let t = scene.target(of, d);
        match scene.place(&t) {
            None => flag(format!(
                "dd writes to a path only known at run time: {}",
                t.shown()
            )),
            Some(Place::Inside) => {}
            Some(_) if paths::harmless_device(&paths::lexical(Path::new(of))) => {}
            Some(_) => flag(format!("dd writes outside the workspace: {}", t.shown())),
        }
    }
}

fn tee(inv: &Invocation, scene: &Scene<'_>, flag: &mut dyn FnMut(String)) {
    let (ops, _) = operands(inv, "", &["output-error"]);
    for (w, d) in ops {
        if let Some(dev) = device(w, d, scene) {
            flag(format!("writes to a device: {}", dev.display()));
        }
    }
}

/// `cp`/`install` onto a device: the destination is the last operand or
/// the `-t` directory.
fn copy(inv: &Invocation, scene: &Scene<'_>, flag: &mut dyn FnMut(String)) {
    let (ops, opts) = operands(
        inv,
        "tSmogb",
        &["target-directory", "suffix", "mode", "owner", "group"],
    );
    let dir = opts.iter().find_map(|o| {
        o.strip_prefix("t=")
            .or_else(|| o.strip_prefix("target-directory="))
    });
    let dest = match dir {
        Some(d) => Some((d, Dyn::Static)),
        None if ops.len() > 1 => ops.last().copied(),
        None => None,
    };
    if let Some(dev) = dest.and_then(|(w, d)| device(w, d, scene)) {
        flag(format!("writes to a device: {}", dev.display()));
    }
}

/// A chmod mode that makes files writable by others: `777`, `o+w`,
/// `a+rwx`, `ugo=rwx`.
fn world_writable(mode: &str) -> bool {
    if !mode.is_empty() && mode.bytes().all(|b| b.is_ascii_digit()) {
        return mode
            .chars()
            .last()
            .and_then(|c| c.to_digit(8))
            .is_some_and(|o| o & 2 != 0);
    }
    mode.split(',').any(|clause| {
        let who_end = clause
            .find(|c: char| !matches!(c, 'u' | 'g' | 'o' | 'a'))
            .unwrap_or(clause.len());
        let (who, ops) = clause.split_at(who_end);
        let others = who.contains('o') || who.contains('a');
        others && (ops.starts_with('+') || ops.starts_with('=')) && ops.contains('w')
    })
}

fn chmod(inv: &Invocation, scene: &Scene<'_>, flag: &mut dyn FnMut(String)) {
    // A word like `-w` or `-rwx` is a mode, not options: only c, f, v and
    // R are chmod's short options.
    let mut recursive = false;
    let mut words: Vec<(&str, Dyn)> = Vec::new();
    let mut done = false;
    for (i, a) in inv.args().iter().enumerate() {
        let d = inv.arg_dyn(i);
        if !done && a == "--" {
            done = true;
        } else if !done && a.starts_with("--") {
            recursive |= a == "--recursive";
        } else if !done
            && a.len() > 1
            && a.starts_with('-')
            && a[1..].chars().all(|c| "cfvR".contains(c))
        {
            recursive |= a.contains('R');
        } else {
            words.push((a, d));
        }
    }
    if !recursive {
        return;
    }
    let reference = inv.args().iter().any(|a| a.starts_with("--reference"));
    let (mode, files) = match (reference, words.split_first()) {
        (false, Some((mode, files))) => (Some(mode.0), files),
        _ => (None, &words[..]),
    };
    if let Some(m) = mode.filter(|m| world_writable(m)) {
        flag(format!("recursive world-writable chmod {m}"));
    }
    for (w, d) in files {
        let t = scene.target(w, *d);
        match scene.place(&t) {
            None => flag(format!(
                "recursive chmod of a path only known at run time: {}",
                t.shown()
            )),
            Some(Place::Outside) => flag(format!(
                "recursive chmod outside the workspace: {}",
                t.shown()
            )),
            _ => {}
        }
    }
}

fn chown(inv: &Invocation, scene: &Scene<'_>, flag: &mut dyn FnMut(String)) {
    let (ops, opts) = operands(inv, "", &[]);
    if !has(&opts, &["R", "recursive"]) {
        return;
    }
    let reference = opts.iter().any(|o| o.starts_with("reference"));
    let files = if reference {
        &ops[..]
    } else {
        ops.get(1..).unwrap_or(&[])
    };
    let name = inv.name();
    for (w, d) in files {
        let t = scene.target(w, *d);
        match scene.place(&t) {
            None => flag(format!(
                "recursive {name} of a path only known at run time: {}",
                t.shown()
            )),
            Some(Place::Outside) => flag(format!(
                "recursive {name} outside the workspace: {}",
                t.shown()
            )),
            _ => {}
        }
    }
}
