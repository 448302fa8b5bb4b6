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
