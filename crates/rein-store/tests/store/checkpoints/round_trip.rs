//! What changed is seen and restored: new, changed, deleted, renamed,
//! binary, executable files, in a plain folder and in a git repository.

use std::collections::BTreeMap;

use rein_store::{ChangeKind, FileMode};

use super::{Ws, collect, names, paths, sh, shadow_files, user_git};

/// New, changed and deleted files are seen and undone; the ignored ones
/// stay as they are now.
fn new_changed_and_deleted_files_round_trip(ws: &Ws) {
    let cp = ws.open();
    let first = cp.snapshot("turn 1").unwrap();
    let before = ws.files_without_git();

    ws.write("src/lib.rs", "pub fn f() {}\n");
    ws.write("src/main.rs", "fn main() { changed() }\n");
    std::fs::remove_file(ws.path("README.md")).unwrap();
    ws.write("debug.log", "ignored after\n");
    ws.write("notes/deep/new.txt", "new in a new folder\n");

    let seen = paths(&cp.changed_since(&first).unwrap());
    assert_eq!(
        seen,
        [
            ("README.md".into(), ChangeKind::Deleted),
            ("notes/deep/new.txt".into(), ChangeKind::Added),
            ("src/lib.rs".into(), ChangeKind::Added),
            ("src/main.rs".into(), ChangeKind::Modified),
        ]
    );

    let restored = cp.restore(&first, None, false).unwrap();
    assert_eq!(names(&restored.written), ["README.md", "src/main.rs"]);
    assert_eq!(
        names(&restored.deleted),
        ["notes/deep/new.txt", "src/lib.rs"]
    );
    assert!(restored.left_alone.is_empty(), "{restored:?}");
    assert!(!ws.exists("notes"), "folders left empty are removed");
    let mut expected = before;
    expected.insert("debug.log".into(), b"ignored after\n".to_vec());
    assert_eq!(ws.files_without_git(), expected);
    assert_eq!(ws.read("debug.log"), "ignored after\n");
    assert!(cp.changed_since(&first).unwrap().is_empty());
}

#[test]
fn restore_undoes_new_changed_and_deleted_files_in_a_plain_folder() {
    new_changed_and_deleted_files_round_trip(&Ws::new(false));
}

#[test]
fn restore_undoes_new_changed_and_deleted_files_in_a_git_repository_and_leaves_its_dot_git_alone() {
    let ws = Ws::new(true);
    user_git(&ws.work, &["add", "-A"]);
    user_git(&ws.work, &["commit", "-q", "-m", "user commit"]);
    let dot_git_before = {
        let mut m = BTreeMap::new();
        collect(&ws.path(".git"), &ws.path(".git"), &mut m);
        m
    };
    let status_before = user_git(&ws.work, &["status", "--porcelain"]);
    new_changed_and_deleted_files_round_trip(&ws);
    let mut dot_git_after = BTreeMap::new();
    collect(&ws.path(".git"), &ws.path(".git"), &mut dot_git_after);
    // `git status` may refresh the user's index; nothing else may change.
    dot_git_after.remove("index");
    let mut dot_git_before = dot_git_before;
    dot_git_before.remove("index");
    assert_eq!(dot_git_after, dot_git_before);
    assert_eq!(
        user_git(&ws.work, &["status", "--porcelain"]),
        status_before
    );
    let shadow = ws.open();
    for checkpoint in shadow.list().unwrap() {
        let listed = shadow_files(&shadow, &checkpoint.tree);
        assert!(listed.contains("src/main.rs"), "{listed}");
        assert!(!listed.contains(".git/"), "{listed}");
    }
}

#[test]
fn a_renamed_file_is_a_deletion_plus_an_addition_and_restore_renames_it_back() {
    let ws = Ws::new(false);
    let cp = ws.open();
    let first = cp.snapshot("t").unwrap();
    std::fs::rename(ws.path("src/main.rs"), ws.path("src/app.rs")).unwrap();
    let second = cp.snapshot("t2").unwrap();
    let seen = paths(&cp.diff(&first, &second).unwrap());
    assert_eq!(
        seen,
        [
            ("src/app.rs".into(), ChangeKind::Added),
            ("src/main.rs".into(), ChangeKind::Deleted),
        ]
    );
    cp.restore(&first, Some(&second), false).unwrap();
    assert_eq!(ws.read("src/main.rs"), "fn main() {}\n");
    assert!(!ws.exists("src/app.rs"));
}

#[test]
fn binary_files_round_trip_byte_for_byte_and_are_named_binary_in_the_patch() {
    let ws = Ws::new(false);
    let original: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
    ws.write_bytes("img.bin", &original);
    let cp = ws.open();
    let first = cp.snapshot("t").unwrap();
    let mut changed = original.clone();
    changed[10] = 0;
    changed.extend_from_slice(b"\r\n\0tail");
    ws.write_bytes("img.bin", &changed);
    ws.write("src/main.rs", "fn main() { 1 }\n");
    let second = cp.snapshot("t2").unwrap();
    let patch = cp.patch_text(&first, &second).unwrap();
    assert!(
        patch.contains("Binary files a/img.bin and b/img.bin differ"),
        "{patch}"
    );
    assert!(patch.contains("-fn main() {}"), "{patch}");
    assert!(patch.contains("+fn main() { 1 }"), "{patch}");
    cp.restore(&first, Some(&second), false).unwrap();
    assert_eq!(std::fs::read(ws.path("img.bin")).unwrap(), original);
    cp.restore(&second, None, false).unwrap();
    assert_eq!(std::fs::read(ws.path("img.bin")).unwrap(), changed);
}

#[test]
fn an_execute_bit_change_is_seen_and_undone_both_ways() {
    let ws = Ws::new(false);
    ws.write("run.sh", "#!/bin/sh\necho hi\n");
    ws.chmod("run.sh", 0o644);
    let cp = ws.open();
    let first = cp.snapshot("t").unwrap();
    ws.chmod("run.sh", 0o755);
    let changes = cp.changed_since(&first).unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0].kind, ChangeKind::ModeChanged);
    assert_eq!(changes[0].old_mode, Some(FileMode::Regular));
    assert_eq!(changes[0].new_mode, Some(FileMode::Executable));
    assert!(changes[0].executable_changed());
    let second = cp.snapshot("t2").unwrap();
    let restored = cp.restore(&first, Some(&second), false).unwrap();
    assert_eq!(names(&restored.written), ["run.sh"]);
    assert_eq!(ws.mode("run.sh"), 0o644);
    cp.restore(&second, None, false).unwrap();
    assert_eq!(ws.mode("run.sh"), 0o755);
    assert_eq!(ws.read("run.sh"), "#!/bin/sh\necho hi\n");
}

#[test]
fn restore_keeps_a_private_files_permissions_and_only_flips_execute_bits() {
    let ws = Ws::new(false);
    ws.write("secret.env", "A=1\n");
    ws.chmod("secret.env", 0o600);
    let cp = ws.open();
    let first = cp.snapshot("t").unwrap();
    ws.write("secret.env", "A=2\n");
    cp.restore(&first, None, false).unwrap();
    assert_eq!(ws.read("secret.env"), "A=1\n");
    assert_eq!(ws.mode("secret.env"), 0o600);
}

#[test]
fn a_file_changed_by_a_shell_command_right_after_a_snapshot_is_seen_and_restored() {
    let ws = Ws::new(false);
    ws.write("f", "before\n");
    let cp = ws.open();
    let first = cp.snapshot("t").unwrap();
    // Same size, same second: only git's racy-file check can notice.
    sh(&ws.work, "echo after > f; echo x > made-by-shell");
    let seen = paths(&cp.changed_since(&first).unwrap());
    assert_eq!(
        seen,
        [
            ("f".into(), ChangeKind::Modified),
            ("made-by-shell".into(), ChangeKind::Added),
        ]
    );
    let second = cp.snapshot("t2").unwrap();
    assert_ne!(second.tree, first.tree);
    let restored = cp.restore(&first, Some(&second), false).unwrap();
    assert_eq!(names(&restored.deleted), ["made-by-shell"]);
    assert_eq!(ws.read("f"), "before\n");
}

#[test]
fn restoring_an_older_checkpoint_and_then_the_newer_one_goes_back_and_forward() {
    let ws = Ws::new(false);
    let cp = ws.open();
    let mut checkpoints = Vec::new();
    let mut states = Vec::new();
    for turn in 0..4 {
        ws.write("src/main.rs", &format!("fn main() {{ {turn} }}\n"));
        ws.write(&format!("turn{turn}.txt"), "x\n");
        if turn == 2 {
            std::fs::remove_file(ws.path("turn0.txt")).unwrap();
        }
        checkpoints.push(cp.snapshot(&format!("turn {turn}")).unwrap());
        states.push(ws.files());
    }
    let mut latest = checkpoints[3].clone();
    for i in [0, 3, 1, 2, 3] {
        let restored = cp.restore(&checkpoints[i], Some(&latest), false).unwrap();
        assert_eq!(ws.files(), states[i], "restoring turn {i}");
        assert_eq!(restored.before.tree, latest.tree);
        latest = cp.snapshot("after restore").unwrap();
        assert_eq!(latest.tree, checkpoints[i].tree);
    }
}

#[test]
fn a_restore_is_undone_by_restoring_the_state_recorded_before_it() {
    let ws = Ws::new(false);
    let cp = ws.open();
    let first = cp.snapshot("t").unwrap();
    ws.write("src/main.rs", "unsaved work\n");
    let restored = cp.restore(&first, None, true).unwrap();
    assert_eq!(ws.read("src/main.rs"), "fn main() {}\n");
    cp.restore(&restored.before, None, false).unwrap();
    assert_eq!(ws.read("src/main.rs"), "unsaved work\n");
}

#[test]
fn a_file_replaced_by_a_folder_and_back_is_restored_both_ways() {
    let ws = Ws::new(false);
    let cp = ws.open();
    let first = cp.snapshot("t").unwrap();
    std::fs::remove_file(ws.path("README.md")).unwrap();
    ws.write("README.md/inner.txt", "now a folder\n");
    let second = cp.snapshot("t2").unwrap();
    cp.restore(&first, Some(&second), false).unwrap();
    assert_eq!(ws.read("README.md"), "# readme\n");
    cp.restore(&second, None, false).unwrap();
    assert_eq!(ws.read("README.md/inner.txt"), "now a folder\n");
}
