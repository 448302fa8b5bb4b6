//! `Checkpoints` against real folders: snapshot, diff, restore, prune, and
//! the things a hostile or unusual workspace must not make it do.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use rein_store::{
    ChangeKind, Checkpoint, CheckpointError, CheckpointOptions, Checkpoints, FileMode,
};
use tempfile::TempDir;

/// A workspace with a `.gitignore`, an ignored file and an ignored folder,
/// and a checkpoint root beside it (not inside).
struct Ws {
    tmp: TempDir,
    root: PathBuf,
    work: PathBuf,
}

impl Ws {
    fn new(user_repo: bool) -> Ws {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("home").join("checkpoints");
        let work = tmp.path().join("ws");
        std::fs::create_dir_all(&work).unwrap();
        if user_repo {
            user_git(&work, &["init", "-q", "."]);
        }
        let ws = Ws { tmp, root, work };
        ws.write(".gitignore", "*.log\nbuild/\n");
        ws.write("debug.log", "ignored before\n");
        ws.write("build/out.o", "ignored object\n");
        ws.write("src/main.rs", "fn main() {}\n");
        ws.write("README.md", "# readme\n");
        ws
    }

    fn open(&self) -> Checkpoints {
        Checkpoints::open(&self.root, &self.work).unwrap()
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.work.join(rel)
    }

    fn write(&self, rel: &str, text: &str) {
        self.write_bytes(rel, text.as_bytes());
    }

    fn write_bytes(&self, rel: &str, bytes: &[u8]) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    fn exists(&self, rel: &str) -> bool {
        self.path(rel).symlink_metadata().is_ok()
    }

    fn mode(&self, rel: &str) -> u32 {
        std::fs::metadata(self.path(rel))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    }

    fn chmod(&self, rel: &str, mode: u32) {
        std::fs::set_permissions(self.path(rel), std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// A folder outside the workspace.
    fn outside(&self) -> PathBuf {
        let p = self.tmp.path().join("outside");
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    /// Every file under the workspace with its bytes (links as "-> target").
    fn files(&self) -> BTreeMap<String, Vec<u8>> {
        let mut out = BTreeMap::new();
        collect(&self.work, &self.work, &mut out);
        out
    }
}

fn collect(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        let rel = path
            .strip_prefix(base)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let kind = entry.file_type().unwrap();
        if kind.is_symlink() {
            let target = std::fs::read_link(&path).unwrap();
            out.insert(rel, format!("-> {}", target.display()).into_bytes());
        } else if kind.is_dir() {
            collect(base, &path, out);
        } else {
            out.insert(rel, std::fs::read(&path).unwrap());
        }
    }
}

/// The user's own git, isolated from the machine's configuration.
fn user_git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "u")
        .env("GIT_AUTHOR_EMAIL", "u@x")
        .env("GIT_COMMITTER_NAME", "u")
        .env("GIT_COMMITTER_EMAIL", "u@x")
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn sh(dir: &Path, script: &str) {
    let status = Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success(), "{script}");
}

/// Each change's path and kind, by path.
fn paths(changes: &[rein_store::FileChange]) -> Vec<(String, ChangeKind)> {
    let mut v: Vec<(String, ChangeKind)> = changes
        .iter()
        .map(|c| (c.path.to_string_lossy().into_owned(), c.kind))
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

fn names(list: &[PathBuf]) -> Vec<String> {
    let mut v: Vec<String> = list
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

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

impl Ws {
    fn files_without_git(&self) -> BTreeMap<String, Vec<u8>> {
        let mut all = self.files();
        all.retain(|k, _| !k.starts_with(".git/"));
        all
    }
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

/// The paths of a tree in the shadow repository, one a line.
fn shadow_files(cp: &Checkpoints, tree: &str) -> String {
    let out = Command::new("git")
        .args(["ls-tree", "-r", "--name-only", tree])
        .env("GIT_DIR", cp.shadow_dir())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

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
fn an_ignored_symlink_to_outside_on_the_way_is_left_alone_not_followed() {
    let ws = Ws::new(false);
    let outside = ws.outside();
    ws.write("cache/data.txt", "tracked at first\n");
    let cp = ws.open();
    let first = cp.snapshot("t").unwrap();
    // Later cache/ is ignored and becomes a link to a folder outside.
    ws.write(".gitignore", "*.log\nbuild/\ncache\n");
    std::fs::remove_dir_all(ws.path("cache")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.path("cache")).unwrap();
    let restored = cp.restore(&first, None, true).unwrap();
    assert_eq!(names(&restored.left_alone), ["cache/data.txt"]);
    assert!(ws.path("cache").symlink_metadata().unwrap().is_symlink());
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert_eq!(ws.read(".gitignore"), "*.log\nbuild/\n");
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
