//! Files changed outside rein are never overwritten unasked.

use rein_store::CheckpointError;

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
