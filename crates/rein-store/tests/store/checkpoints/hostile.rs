//! What a hostile or unusual workspace must not make checkpoints do:
//! write through links to outside, run a program its git configuration
//! names, change bytes, or take a forged id.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use rein_store::{ChangeKind, Checkpoint, CheckpointError, CheckpointOptions, Checkpoints};

use super::{Ws, names, user_git};

#[test]
fn restore_replaces_a_symlink_to_outside_with_a_file_instead_of_writing_through_it() {
    let ws = Ws::new(false);
    let outside = ws.outside();
    std::fs::write(outside.join("target.txt"), "outside, must not change\n").unwrap();
    let cp = ws.open();
    let first = cp.snapshot("t").unwrap();
    std::fs::remove_file(ws.path("README.md")).unwrap();
    std::os::unix::fs::symlink(outside.join("target.txt"), ws.path("README.md")).unwrap();
    let changes = cp.changed_since(&first).unwrap();
    assert_eq!(changes[0].kind, ChangeKind::TypeChanged, "{changes:?}");
    cp.restore(&first, None, false).unwrap();
    assert!(
        !ws.path("README.md")
            .symlink_metadata()
            .unwrap()
            .is_symlink()
    );
    assert_eq!(ws.read("README.md"), "# readme\n");
    assert_eq!(
        std::fs::read_to_string(outside.join("target.txt")).unwrap(),
        "outside, must not change\n"
    );
}

#[test]
fn restore_never_writes_into_a_folder_outside_through_a_symlinked_folder() {
    let ws = Ws::new(false);
    let outside = ws.outside();
    let cp = ws.open();
    let first = cp.snapshot("t").unwrap();
    // src/ becomes a link to a folder outside, holding a main.rs of its own.
    std::fs::remove_dir_all(ws.path("src")).unwrap();
    std::fs::write(outside.join("main.rs"), "outside main\n").unwrap();
    std::os::unix::fs::symlink(&outside, ws.path("src")).unwrap();
    let restored = cp.restore(&first, None, false).unwrap();
    assert_eq!(
        std::fs::read_to_string(outside.join("main.rs")).unwrap(),
        "outside main\n"
    );
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
    assert!(ws.path("src").symlink_metadata().unwrap().is_dir());
    assert_eq!(ws.read("src/main.rs"), "fn main() {}\n");
    assert_eq!(names(&restored.deleted), ["src"]);
}

#[test]
fn an_excluded_symlink_to_outside_on_the_way_is_left_alone_not_followed() {
    let ws = Ws::new(false);
    let outside = ws.outside();
    ws.write("cache/data.txt", "tracked at first\n");
    let first = ws.open().snapshot("t").unwrap();
    // Later cache/ is excluded and becomes a link to a folder outside.
    let options = CheckpointOptions {
        exclude: vec![PathBuf::from("cache")],
        ..CheckpointOptions::default()
    };
    let cp = Checkpoints::open_with(&ws.root, &ws.work, options).unwrap();
    std::fs::remove_dir_all(ws.path("cache")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.path("cache")).unwrap();
    let restored = cp.restore(&first, None, true).unwrap();
    assert_eq!(names(&restored.left_alone), ["cache/data.txt"]);
    assert!(ws.path("cache").symlink_metadata().unwrap().is_symlink());
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
}

#[test]
fn a_symlink_is_stored_as_a_link_and_restored_as_one_never_as_what_it_points_to() {
    let ws = Ws::new(false);
    let outside = ws.outside();
    std::fs::write(outside.join("secret"), "SECRET OUTSIDE\n").unwrap();
    std::os::unix::fs::symlink(outside.join("secret"), ws.path("link")).unwrap();
    let cp = ws.open();
    let pair = {
        let first = cp.snapshot("t").unwrap();
        std::fs::remove_file(ws.path("link")).unwrap();
        let second = cp.snapshot("t2").unwrap();
        let patch = cp.patch_text(&first, &second).unwrap();
        assert!(!patch.contains("SECRET"), "{patch}");
        assert!(patch.contains("deleted file mode 120000"), "{patch}");
        (first, second)
    };
    cp.restore(&pair.0, Some(&pair.1), false).unwrap();
    assert_eq!(
        std::fs::read_link(ws.path("link")).unwrap(),
        outside.join("secret")
    );
}

#[test]
fn a_hostile_dot_git_config_and_gitattributes_run_nothing_and_change_no_bytes() {
    let ws = Ws::new(true);
    let marks = ws.outside();
    let mark = |name: &str| marks.join(name).display().to_string();
    let hooks = ws.path(".git/evil-hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    for hook in [
        "pre-commit",
        "post-commit",
        "post-checkout",
        "post-index-change",
    ] {
        let p = hooks.join(hook);
        std::fs::write(&p, format!("#!/bin/sh\ntouch {}\n", mark(hook))).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let config = format!(
        "[core]\n\tfsmonitor = touch {fsmonitor}\n\thooksPath = {hooks}\n\tautocrlf = true\n\
         [filter \"evil\"]\n\tclean = touch {clean}\n\tsmudge = touch {smudge}\n\
         \tprocess = touch {process}\n\trequired = true\n\
         [diff \"evil\"]\n\ttextconv = touch {textconv}\n\tcommand = touch {command}\n",
        fsmonitor = mark("fsmonitor"),
        hooks = hooks.display(),
        clean = mark("clean"),
        smudge = mark("smudge"),
        process = mark("process"),
        textconv = mark("textconv"),
        command = mark("diff-command"),
    );
    let mut text = std::fs::read_to_string(ws.path(".git/config")).unwrap();
    text.push_str(&config);
    std::fs::write(ws.path(".git/config"), text).unwrap();
    ws.write(
        ".gitattributes",
        "* filter=evil diff=evil text eol=crlf ident working-tree-encoding=UTF-16\n",
    );
    let crlf_and_lf = b"line one\r\nline two\n$Id$\n";
    ws.write_bytes("mixed.txt", crlf_and_lf);

    let cp = ws.open();
    let first = cp.snapshot("t").unwrap();
    ws.write_bytes("mixed.txt", b"changed\n");
    let second = cp.snapshot("t2").unwrap();
    cp.changed_since(&first).unwrap();
    cp.diff(&first, &second).unwrap();
    let patch = cp.patch_text(&first, &second).unwrap();
    assert!(patch.contains("+changed"), "{patch}");
    cp.restore(&first, Some(&second), false).unwrap();
    cp.prune(std::slice::from_ref(&first)).unwrap();

    assert_eq!(std::fs::read(ws.path("mixed.txt")).unwrap(), crlf_and_lf);
    let made: Vec<_> = std::fs::read_dir(&marks)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(made.is_empty(), "commands ran: {made:?}");
}

#[test]
fn an_unknown_or_malformed_checkpoint_is_refused_before_any_file_changes() {
    let ws = Ws::new(false);
    let cp = ws.open();
    let real = cp.snapshot("t").unwrap();
    ws.write("src/main.rs", "keep me\n");
    let bogus = |id: &str, tree: &str| Checkpoint {
        id: id.into(),
        tree: tree.into(),
        ..real.clone()
    };
    for fake in [
        bogus(&"1".repeat(40), &"1".repeat(40)),
        bogus("--output=/tmp/x", "--output=/tmp/x"),
        bogus(&real.id, &real.id),
    ] {
        let err = cp.restore(&fake, None, true).unwrap_err();
        assert!(
            matches!(err, CheckpointError::UnknownCheckpoint(_)),
            "{err:?}"
        );
        assert_eq!(ws.read("src/main.rs"), "keep me\n");
    }
    assert!(matches!(
        cp.get("HEAD"),
        Err(CheckpointError::UnknownCheckpoint(_))
    ));
}

#[test]
fn a_git_repository_nested_in_the_workspace_is_skipped_not_an_error() {
    let ws = Ws::new(false);
    let nested = ws.path("vendor/lib");
    std::fs::create_dir_all(&nested).unwrap();
    user_git(&nested, &["init", "-q", "."]);
    std::fs::write(nested.join("x.c"), "int x;\n").unwrap();
    let cp = ws.open();
    let first = cp.snapshot("t").unwrap();
    assert_eq!(names(&first.skipped), ["vendor/lib"]);
    ws.write("src/main.rs", "changed\n");
    cp.restore(&first, None, false).unwrap();
    assert_eq!(
        std::fs::read_to_string(nested.join("x.c")).unwrap(),
        "int x;\n"
    );
}
