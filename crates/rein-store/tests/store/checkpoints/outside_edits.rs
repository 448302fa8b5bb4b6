//! Files changed outside rein are never overwritten unasked.

use std::path::PathBuf;

use rein_store::{CheckpointError, RestoreGuard};

use super::{Ws, names};

#[test]
fn restore_refuses_when_files_changed_outside_rein_unless_forced() {
    let ws = Ws::new(false);
    let cp = ws.open();
    let first = cp.snapshot("t1").unwrap();
    ws.write("src/main.rs", "by rein\n");
    let latest = cp.snapshot("t2").unwrap();
    ws.write("src/main.rs", "by the user in an editor\n");
    ws.write("user.txt", "new by the user\n");
    let err = cp.restore(&first, Some(&latest), false).unwrap_err();
    let CheckpointError::ChangedOutside { files } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(names(files), ["src/main.rs", "user.txt"]);
    assert!(err.to_string().contains("user.txt"), "{err}");
    assert_eq!(ws.read("src/main.rs"), "by the user in an editor\n");
    assert!(ws.exists("user.txt"));

    let restored = cp.restore(&first, Some(&latest), true).unwrap();
    assert_eq!(ws.read("src/main.rs"), "fn main() {}\n");
    assert!(!ws.exists("user.txt"));
    assert_eq!(names(&restored.deleted), ["user.txt"]);
}

#[test]
fn restore_refuses_to_change_files_known_to_have_changed_outside_rein_unless_forced() {
    let ws = Ws::new(false);
    let cp = ws.open();
    let first = cp.snapshot("before the run").unwrap();
    // During the run: rein writes main.rs, the user writes notes.txt and
    // README.md; the checkpoint after the run has them all.
    ws.write("src/main.rs", "by rein\n");
    ws.write("notes.txt", "the user's notes\n");
    ws.write("README.md", "# the user's readme\n");
    let after = cp.snapshot("after the run").unwrap();
    let known = [PathBuf::from("notes.txt"), PathBuf::from("README.md")];
    let guard = RestoreGuard {
        unchanged_since: Some(&after),
        changed_outside: &known,
    };
    let err = cp.restore_guarded(&first, guard, false).unwrap_err();
    let CheckpointError::ChangedOutside { files } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(names(files), ["README.md", "notes.txt"]);
    assert_eq!(ws.read("src/main.rs"), "by rein\n");
    assert_eq!(ws.read("notes.txt"), "the user's notes\n");

    // A known file the restore would not change is no reason to refuse.
    ws.write("README.md", "# readme\n");
    std::fs::remove_file(ws.path("notes.txt")).unwrap();
    let now = cp.snapshot("the user undid it").unwrap();
    let guard = RestoreGuard {
        unchanged_since: Some(&now),
        changed_outside: &known,
    };
    cp.restore_guarded(&first, guard, false).unwrap();
    assert_eq!(ws.read("src/main.rs"), "fn main() {}\n");

    // Forced, the known files are restored like any other.
    cp.restore(&after, None, false).unwrap();
    let guard = RestoreGuard {
        unchanged_since: None,
        changed_outside: &known,
    };
    let restored = cp.restore_guarded(&first, guard, true).unwrap();
    assert_eq!(names(&restored.deleted), ["notes.txt"]);
    assert_eq!(ws.read("README.md"), "# readme\n");
}
