//! The store itself: where it lives, reading checkpoints back, pruning,
//! deleting, and the limits on what one snapshot stores.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use rein_store::{ChangeKind, CheckpointError, CheckpointOptions, Checkpoints};

use super::{Ws, names, paths};

#[test]
fn opening_a_store_that_records_another_workspace_is_refused() {
    let ws = Ws::new(false);
    let cp = ws.open();
    let marker = cp.shadow_dir().join("rein-workspace");
    std::fs::write(&marker, "/some/other/workspace").unwrap();
    let err = Checkpoints::open(&ws.root, &ws.work).unwrap_err();
    let CheckpointError::WorkspaceMismatch { found, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(found, Path::new("/some/other/workspace"));
}

#[test]
fn the_shadow_repository_is_private_and_named_after_the_workspace_hash() {
    let ws = Ws::new(false);
    let cp = ws.open();
    let dir = cp.shadow_dir();
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(name.len(), 16 + ".git".len(), "{name}");
    assert!(name.ends_with(".git"));
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&ws.root), 0o700);
    assert_eq!(mode(dir), 0o700);
    // The same workspace by another spelling finds the same store.
    let other = Checkpoints::open(&ws.root, &ws.work.join("src").join("..")).unwrap();
    assert_eq!(other.shadow_dir(), dir);
    let second = Ws::new(false);
    let elsewhere = Checkpoints::open(&ws.root, &second.work).unwrap();
    assert_ne!(elsewhere.shadow_dir(), dir);
}

#[test]
fn files_over_the_size_cap_are_skipped_reported_and_left_alone_by_restore() {
    let ws = Ws::new(false);
    let options = CheckpointOptions {
        max_file_bytes: 1000,
        ..CheckpointOptions::default()
    };
    ws.write("small.txt", "small\n");
    ws.write("grows.txt", "small for now\n");
    let cp = Checkpoints::open_with(&ws.root, &ws.work, options).unwrap();
    let first = cp.snapshot("t").unwrap();
    assert!(first.skipped.is_empty());
    ws.write("big.dat", &"x".repeat(5000));
    ws.write("grows.txt", &"y".repeat(5000));
    let second = cp.snapshot("t2").unwrap();
    assert_eq!(names(&second.skipped), ["big.dat", "grows.txt"]);
    assert_eq!(cp.get(&second.id).unwrap().skipped, second.skipped);
    // The big ones are not in the snapshot and not counted as changes...
    let seen = paths(&cp.diff(&first, &second).unwrap());
    assert_eq!(seen, [("grows.txt".into(), ChangeKind::Deleted)]);
    // ...and a restore neither deletes nor overwrites them.
    let restored = cp.restore(&first, Some(&second), false).unwrap();
    assert_eq!(names(&restored.left_alone), ["grows.txt"]);
    assert_eq!(ws.read("big.dat").len(), 5000);
    assert_eq!(ws.read("grows.txt").len(), 5000);
}

#[test]
fn a_checkpoint_is_made_even_when_nothing_changed() {
    let ws = Ws::new(false);
    let cp = ws.open();
    let first = cp.snapshot("one").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2));
    let second = cp.snapshot("two").unwrap();
    assert_ne!(first.id, second.id);
    assert_eq!(first.tree, second.tree);
    assert!(cp.diff(&first, &second).unwrap().is_empty());
}

#[test]
fn checkpoints_read_back_by_id_and_list_oldest_first() {
    let ws = Ws::new(false);
    let cp = ws.open();
    let first = cp.snapshot("turn 1: fix\nthe bug").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2));
    ws.write("a", "a\n");
    let second = cp.snapshot("turn 2").unwrap();
    assert_eq!(cp.get(&first.id).unwrap(), first);
    assert_eq!(cp.list().unwrap(), [first, second]);
}

/// A checkpoint's ref is written as a file (no `git update-ref` process),
/// in the form git itself reads: listed, kept through a collection.
#[test]
fn a_checkpoints_ref_is_a_file_that_git_reads_and_keeps() {
    let ws = Ws::new(false);
    let cp = ws.open();
    let first = cp.snapshot("1").unwrap();
    let file = cp.shadow_dir().join("refs/rein/cp").join(&first.id);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        format!("{}\n", first.id)
    );
    assert!(!file.with_extension("lock").exists());
    std::thread::sleep(std::time::Duration::from_millis(2));
    ws.write("a", "a\n");
    let second = cp.snapshot("2").unwrap();
    assert_eq!(cp.prune(std::slice::from_ref(&first)).unwrap(), 1);
    assert_eq!(cp.list().unwrap(), std::slice::from_ref(&first));
    assert!(matches!(
        cp.get(&second.id),
        Err(CheckpointError::UnknownCheckpoint(_))
    ));
    cp.restore(&first, None, false).unwrap();
    assert!(!ws.exists("a"));
}

#[test]
fn prune_drops_unkept_checkpoints_and_the_kept_ones_still_restore() {
    let ws = Ws::new(false);
    let cp = ws.open();
    let mut all = Vec::new();
    for i in 0..4 {
        ws.write("data.txt", &format!("version {i}\n"));
        std::thread::sleep(std::time::Duration::from_millis(2));
        all.push(cp.snapshot(&format!("{i}")).unwrap());
    }
    let keep = [all[1].clone(), all[3].clone()];
    assert_eq!(cp.prune(&keep).unwrap(), 2);
    assert_eq!(cp.list().unwrap(), keep);
    assert!(matches!(
        cp.get(&all[0].id),
        Err(CheckpointError::UnknownCheckpoint(_))
    ));
    cp.restore(&all[1], None, false).unwrap();
    assert_eq!(ws.read("data.txt"), "version 1\n");
    // The store keeps working after the collection.
    ws.write("data.txt", "version 9\n");
    let next = cp.snapshot("9").unwrap();
    cp.restore(&all[3], Some(&next), false).unwrap();
    assert_eq!(ws.read("data.txt"), "version 3\n");
    cp.delete_all().unwrap();
}

#[test]
fn delete_all_removes_the_store_and_the_next_open_starts_afresh() {
    let ws = Ws::new(false);
    let cp = ws.open();
    cp.snapshot("t").unwrap();
    let dir = cp.shadow_dir().to_path_buf();
    cp.delete_all().unwrap();
    assert!(!dir.exists());
    let cp = ws.open();
    assert!(cp.list().unwrap().is_empty());
    cp.snapshot("again").unwrap();
}

#[test]
fn a_workspace_too_big_to_copy_at_once_is_refused_before_anything_is_stored() {
    let ws = Ws::new(false);
    for i in 0..30 {
        ws.write(&format!("f{i}.txt"), "x\n");
    }
    let options = CheckpointOptions {
        max_new_files: 10,
        ..CheckpointOptions::default()
    };
    let cp = Checkpoints::open_with(&ws.root, &ws.work, options).unwrap();
    let err = cp.snapshot("t").unwrap_err();
    assert!(
        matches!(err, CheckpointError::TooBig { files, max_files: 10, .. } if files >= 30),
        "{err:?}"
    );
    assert!(err.to_string().contains("too big to checkpoint"), "{err}");
    assert!(cp.list().unwrap().is_empty());
    // By bytes too.
    let options = CheckpointOptions {
        max_new_bytes: 20,
        ..CheckpointOptions::default()
    };
    let cp = Checkpoints::open_with(&ws.root, &ws.work, options).unwrap();
    assert!(matches!(
        cp.snapshot("t").unwrap_err(),
        CheckpointError::TooBig { bytes, .. } if bytes >= 60
    ));
    // Once stored, what changes later is all a snapshot stores anew.
    let cp = Checkpoints::open(&ws.root, &ws.work).unwrap();
    cp.snapshot("all").unwrap();
    let options = CheckpointOptions {
        max_new_files: 10,
        ..CheckpointOptions::default()
    };
    let cp = Checkpoints::open_with(&ws.root, &ws.work, options).unwrap();
    ws.write("f1.txt", "changed\n");
    cp.snapshot("one changed").unwrap();
}

/// The `git` commands a scenario started, from a log a wrapper `git` first
/// on PATH writes: each line holds one command's arguments. A command is
/// given from its subcommand on, past the `-c key=value` settings and
/// options before it.
fn commands(log: &str) -> Vec<Vec<String>> {
    log.lines()
        .map(|line| {
            let args: Vec<&str> = line.split('\u{1f}').collect();
            let mut i = 0;
            while i < args.len() && args[i].starts_with('-') {
                i += if args[i] == "-c" { 2 } else { 1 };
            }
            args[i.min(args.len())..]
                .iter()
                .map(|a| a.to_string())
                .collect()
        })
        .collect()
}

/// The scenario `checkpoints_start_only_the_git_processes_they_need` runs
/// in a child test process: a first snapshot into a fresh store, a
/// change, a second snapshot, the diff between them from the first's
/// commit, then a snapshot by a store opened anew (as the next run does).
/// Markers in the log split the phases.
fn git_process_scenario(log: &Path) {
    let mark = |phase: &str| {
        let mut f = std::fs::OpenOptions::new().append(true).open(log).unwrap();
        std::io::Write::write_all(&mut f, format!("#{phase}\n").as_bytes()).unwrap();
    };
    let ws = Ws::new(true);
    let cp = ws.open();
    mark("first");
    let first = cp.snapshot("first").unwrap();
    ws.write("src/lib.rs", "changed\n");
    mark("second");
    let second = cp.snapshot("second").unwrap();
    mark("diff");
    let changes = cp.diff_from_commit(&first.id, &second).unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    drop(cp);
    ws.write("src/lib.rs", "changed again\n");
    mark("reopened");
    ws.open().snapshot("third").unwrap();
    mark("end");
}

/// What a run of checkpoints costs in host processes, counted: the ref is
/// written as a file (no `update-ref`), a store with no index yet skips
/// the listing of ignored tracked files, and the diff at a run's end reads
/// no commit back (no `cat-file`). The scenario runs in a child test
/// process whose PATH starts with a logging `git`, so no other test sees it.
#[test]
fn checkpoints_start_only_the_git_processes_they_need() {
    if let Some(log) = std::env::var_os("REIN_TEST_GIT_LOG") {
        git_process_scenario(Path::new(&log));
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let real = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let wrapper = bin.join("git");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n(IFS=$(printf '\\037'); printf '%s\\n' \"$*\") >>\"$REIN_TEST_GIT_LOG\"\nexec {} \"$@\"\n",
            real.trim()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let log = tmp.path().join("git.log");
    std::fs::write(&log, "").unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let name = concat!(
        module_path!(),
        "::checkpoints_start_only_the_git_processes_they_need"
    );
    let name = name.split_once("::").map_or(name, |(_, rest)| rest);
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--test-threads=1", "--nocapture"])
        .env("PATH", path)
        .env("REIN_TEST_GIT_LOG", &log)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("1 passed"),
        "the scenario did not run: {stdout}"
    );
    let text = std::fs::read_to_string(&log).unwrap();
    let phase = |from: &str, to: &str| {
        let start = text.find(&format!("#{from}\n")).unwrap() + from.len() + 2;
        let end = text.find(&format!("#{to}\n")).unwrap();
        commands(&text[start..end])
    };
    let names = |cmds: &[Vec<String>]| -> Vec<String> {
        cmds.iter()
            .map(|c| c.first().cloned().unwrap_or_default())
            .collect()
    };
    let ignored_listings = |cmds: &[Vec<String>]| {
        let has = |c: &Vec<String>, flag: &str| c.iter().any(|a| a == flag);
        let listing = |c: &Vec<String>| c[0] == "ls-files" && has(c, "-c") && has(c, "-i");
        cmds.iter().filter(|c| listing(c)).count()
    };
    let (fresh, reopened_cmds) = (phase("first", "second"), phase("reopened", "end"));
    assert_eq!(
        (ignored_listings(&fresh), ignored_listings(&reopened_cmds)),
        (0, 1),
        "only a store with an index lists ignored tracked files: {fresh:?}, reopened {reopened_cmds:?}"
    );
    let (first, second, diff, reopened) = (
        names(&fresh),
        names(&phase("second", "diff")),
        names(&phase("diff", "reopened")),
        names(&reopened_cmds),
    );
    let all = [
        ("first", &first),
        ("second", &second),
        ("diff", &diff),
        ("reopened", &reopened),
    ];
    for (what, cmds) in all {
        assert!(!cmds.iter().any(|c| c == "update-ref"), "{what}: {cmds:?}");
        assert!(!cmds.iter().any(|c| c == "cat-file"), "{what}: {cmds:?}");
    }
    assert_eq!(diff, ["diff-tree"], "{diff:?}");
    assert!(second.len() <= 4, "a later snapshot: {second:?}");
    assert!(
        first.len() <= 6 && reopened.len() <= 6,
        "{first:?} {reopened:?}"
    );
}
