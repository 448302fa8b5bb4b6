//! The workspace's ignore rules, read once and kept.
//!
//! The first time a workspace is checkpointed, its `.gitignore` files are
//! read (those git would read: in every folder it does not ignore, even
//! one whose `.gitignore` ignores itself, as `.venv/.gitignore` holding
//! `*` does) and written, as one list of patterns relative to the
//! workspace, to the shadow repository's `info/rein-ignore`. From then on
//! snapshots follow that list (and rein's own exclusions in
//! `info/exclude`) and nothing else: a `.gitignore` written later, by the
//! model or anyone, is an ordinary file and hides nothing from rewind.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use super::git::{Git, path_of, records};
use super::shadow::ignore_pattern;
use super::{CheckpointError, io_error};

/// The kept rules, in the shadow repository.
const FROZEN_FILE: &str = "rein-ignore";

/// A `.gitignore` bigger than this is not read (its rules are not kept,
/// so what it would hide is snapshotted).
const MAX_RULES_BYTES: u64 = 1024 * 1024;

/// The `ls-files` options that apply the kept rules and then rein's own
/// exclusions (the later list wins, so a `!` rule cannot bring rein's
/// state back). The rules are read from the workspace first when they
/// were never kept.
pub(super) fn exclude_options(git: &Git) -> Result<[String; 2], CheckpointError> {
    let info = git.dir.join("info");
    let frozen = info.join(FROZEN_FILE);
    if !frozen.exists() {
        freeze(git, &frozen)?;
    }
    let option = |file: &Path| format!("--exclude-from={}", file.display());
    Ok([option(&frozen), option(&info.join("exclude"))])
}

/// Read the workspace's `.gitignore` files now and keep their rules in
/// `frozen` (written whole: beside it, then renamed).
fn freeze(git: &Git, frozen: &Path) -> Result<(), CheckpointError> {
    let mut found = Vec::new();
    // Those git would honour and that are not ignored themselves...
    let listed = git.run([
        "ls-files",
        "-z",
        "-c",
        "-o",
        "--exclude-standard",
        "--",
        ":(glob)**/.gitignore",
    ])?;
    found.extend(records(&listed.stdout).map(<[u8]>::to_vec));
    // ...and those that ignore themselves, in folders git looks in
    // (an ignored folder is one `dir/` entry, never entered).
    let ignored = git.run([
        "ls-files",
        "-z",
        "-o",
        "-i",
        "--directory",
        "--exclude-standard",
        "--",
        ":(glob)**/.gitignore",
    ])?;
    found.extend(
        records(&ignored.stdout)
            .filter(|r| !r.ends_with(b"/"))
            .map(<[u8]>::to_vec),
    );
    found.sort();
    found.dedup();
    let mut text =
        String::from("# rein: the workspace's ignore rules when it was first checkpointed\n");
    for rel in found {
        let rel = path_of(&rel);
        let Some(rules) = read_rules(&git.work.join(&rel)) else {
            continue;
        };
        let dir = rel.parent().map(Path::to_path_buf).unwrap_or_default();
        text.push_str(&rebase(&dir, &rules));
    }
    write_whole(frozen, text.as_bytes())
}

/// The text of a `.gitignore` that is a regular file (git does not follow
/// a link there either) of a sane size.
fn read_rules(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_RULES_BYTES {
        return None;
    }
    std::fs::read(path)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// The rules of the `.gitignore` in folder `dir` (relative to the
/// workspace; empty for its top), rewritten to mean the same from the
/// top of the workspace. A pattern with a `/` before its end is relative
/// to its folder; one without matches at any depth below it.
pub(super) fn rebase(dir: &Path, rules: &str) -> String {
    let mut out = String::new();
    let prefix = match dir.as_os_str().is_empty() {
        true => None,
        false => match dir.to_str().filter(|d| !d.contains('\n')) {
            Some(d) => Some(ignore_pattern(d)),
            // A folder name git cannot be told: its rules are not kept.
            None => return out,
        },
    };
    for line in rules.lines() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let Some(prefix) = &prefix else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        let (negate, body) = match line.strip_prefix('!') {
            Some(rest) => ("!", rest),
            None => ("", line),
        };
        let anchored = body.trim_end().trim_end_matches('/').contains('/');
        let body = body.strip_prefix('/').unwrap_or(body);
        let joint = if anchored { "/" } else { "/**/" };
        out.push_str(&format!("{negate}{prefix}{joint}{body}\n"));
    }
    out
}

fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), CheckpointError> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.{nanos}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let placed = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = placed {
        let _ = std::fs::remove_file(&tmp);
        return Err(io_error(path, e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn top_level_rules_are_kept_as_they_are() {
        let rules = "# build output\n*.log\n\n/target\n!keep.log\n";
        assert_eq!(rebase(Path::new(""), rules), "*.log\n/target\n!keep.log\n");
    }

    #[test]
    fn a_folders_rules_match_below_it_only_and_keep_their_anchoring() {
        let rules = "*.tmp\nbuild/\n/only-here\na/b\n!keep.tmp\n**/deep\n";
        assert_eq!(
            rebase(Path::new("sub/x"), rules),
            "/sub/x/**/*.tmp\n/sub/x/**/build/\n/sub/x/only-here\n/sub/x/a/b\n\
             !/sub/x/**/keep.tmp\n/sub/x/**/deep\n"
        );
    }

    #[test]
    fn folder_names_that_look_like_patterns_are_escaped() {
        assert_eq!(rebase(Path::new("#a[1]"), "x\n"), "/\\#a\\[1\\]/**/x\n");
    }
}
