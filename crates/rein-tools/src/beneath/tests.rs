#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::CString;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::sync::atomic::Ordering;

use super::*;

/// A root folder and, beside it, an outside folder holding `secret.txt`.
struct Tree {
    _dir: tempfile::TempDir,
    root: PathBuf,
    out: PathBuf,
}

fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let root = base.join("root");
    let out = base.join("out");
    std::fs::create_dir_all(root.join("d/e")).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(root.join("d/e/f.txt"), "inside").unwrap();
    std::fs::write(out.join("secret.txt"), "secret").unwrap();
    Tree {
        _dir: dir,
        root,
        out,
    }
}

/// Both resolvers this kernel can run (the walk always; openat2 where it
/// works).
fn resolvers() -> Vec<Resolver> {
    let mut v = vec![Resolver::Walk];
    if Resolver::best() == Resolver::Openat2 {
        v.push(Resolver::Openat2);
    } else {
        eprintln!("openat2 does not work here: only the walk is tested");
    }
    v
}

fn root(t: &Tree, r: Resolver) -> Dir {
    Dir::open_root(&t.root).unwrap().with_resolver(r)
}

fn read(mut f: File) -> String {
    let mut s = String::new();
    f.read_to_string(&mut s).unwrap();
    s
}

#[test]
fn a_plain_path_below_the_root_opens_with_either_resolver() {
    let t = tree();
    for r in resolvers() {
        let d = root(&t, r);
        assert_eq!(read(d.open_read(Path::new("d/e/f.txt")).unwrap()), "inside");
        assert_eq!(
            read(d.open_read(Path::new("./d/./e/f.txt")).unwrap()),
            "inside"
        );
        let e = d.open_dir(Path::new("d/e")).unwrap();
        assert_eq!(read(e.open_read(Path::new("f.txt")).unwrap()), "inside");
        assert_eq!(e.current_path().unwrap(), t.root.join("d/e"), "{r:?}");
    }
}

#[test]
fn a_symlink_anywhere_on_the_path_is_refused_even_one_pointing_inside() {
    let t = tree();
    symlink(&t.out, t.root.join("out_link")).unwrap();
    symlink("d", t.root.join("in_link")).unwrap();
    symlink(t.out.join("secret.txt"), t.root.join("d/file_link")).unwrap();
    for r in resolvers() {
        let d = root(&t, r);
        for p in ["out_link/secret.txt", "in_link/e/f.txt", "d/file_link"] {
            let e = d.open_read(Path::new(p)).unwrap_err();
            assert!(matches!(e, BeneathError::Symlink), "{r:?} {p}: {e:?}");
        }
        let e = d.open_dir(Path::new("out_link")).unwrap_err();
        assert!(matches!(e, BeneathError::Symlink), "{r:?}: {e:?}");
        let e = d.create_dirs(Path::new("out_link/new")).unwrap_err();
        assert!(matches!(e, BeneathError::Symlink), "{r:?}: {e:?}");
    }
    assert!(!t.out.join("new").exists());
}

#[test]
fn dotdot_and_absolute_paths_are_not_plain() {
    let t = tree();
    for r in resolvers() {
        let d = root(&t, r);
        for p in ["../out/secret.txt", "d/../../out/secret.txt", "/etc/passwd"] {
            let e = d.open_read(Path::new(p)).unwrap_err();
            assert!(matches!(e, BeneathError::NotPlain(_)), "{r:?} {p}: {e:?}");
        }
    }
}

#[test]
fn missing_files_are_plain_not_found_errors() {
    let t = tree();
    for r in resolvers() {
        let e = root(&t, r).open_read(Path::new("d/nope")).unwrap_err();
        assert_eq!(e.io_kind(), Some(io::ErrorKind::NotFound), "{r:?}: {e:?}");
    }
}

#[test]
fn create_dirs_makes_each_missing_folder_and_reuses_existing_ones() {
    let t = tree();
    for r in resolvers() {
        let d = root(&t, r);
        let rel = format!("new-{r:?}/a/b");
        let made = d.create_dirs(Path::new(&rel)).unwrap();
        assert!(t.root.join(&rel).is_dir());
        assert_eq!(made.current_path().unwrap(), t.root.join(&rel));
        d.create_dirs(Path::new("d/e")).unwrap();
        std::fs::write(t.root.join("plainfile"), "").unwrap();
        assert!(d.create_dirs(Path::new("plainfile/x")).is_err());
    }
}

#[test]
fn replacing_a_hard_link_leaves_the_other_name_untouched() {
    let t = tree();
    let outside = t.out.join("secret.txt");
    std::fs::hard_link(&outside, t.root.join("h")).unwrap();
    let d = root(&t, Resolver::best());
    d.replace_file(OsStr::new("h"), b"new", Some(0o640))
        .unwrap();
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "secret");
    assert_eq!(std::fs::metadata(&outside).unwrap().nlink(), 1);
    let meta = std::fs::metadata(t.root.join("h")).unwrap();
    assert_eq!(std::fs::read_to_string(t.root.join("h")).unwrap(), "new");
    assert_eq!(meta.permissions().mode() & 0o777, 0o640);
    assert_eq!(meta.nlink(), 1);
}

#[test]
fn replacing_a_symlink_replaces_the_link_not_its_target() {
    let t = tree();
    symlink(t.out.join("secret.txt"), t.root.join("s")).unwrap();
    let d = root(&t, Resolver::best());
    d.replace_file(OsStr::new("s"), b"new", None).unwrap();
    assert_eq!(
        std::fs::read_to_string(t.out.join("secret.txt")).unwrap(),
        "secret"
    );
    assert!(
        !std::fs::symlink_metadata(t.root.join("s"))
            .unwrap()
            .is_symlink()
    );
}

#[test]
fn a_new_file_gets_the_default_mode_and_no_temporary_file_is_left() {
    let t = tree();
    let d = root(&t, Resolver::best()).open_dir(Path::new("d")).unwrap();
    d.replace_file(OsStr::new("n.txt"), b"x", None).unwrap();
    // SAFETY: umask is process-wide; read it by setting and restoring.
    let umask = unsafe {
        let m = libc::umask(0o022);
        libc::umask(m);
        m
    };
    let mode = std::fs::metadata(t.root.join("d/n.txt"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o666 & !(umask as u32));
    let names: Vec<String> = std::fs::read_dir(t.root.join("d"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.contains(".tmp")), "{names:?}");
}

#[test]
fn entry_tells_files_folders_and_symlinks_apart_without_following() {
    let t = tree();
    symlink(&t.out, t.root.join("l")).unwrap();
    let d = root(&t, Resolver::best());
    assert_eq!(d.entry(OsStr::new("d")).unwrap().unwrap().kind, Kind::Dir);
    assert_eq!(
        d.entry(OsStr::new("l")).unwrap().unwrap().kind,
        Kind::Symlink
    );
    assert!(d.entry(OsStr::new("none")).unwrap().is_none());
    let e = d.open_dir(Path::new("d/e")).unwrap();
    let f = e.entry(OsStr::new("f.txt")).unwrap().unwrap();
    assert_eq!((f.kind, f.size), (Kind::File, 6));
}

#[test]
fn bad_names_for_a_replacement_are_refused() {
    let t = tree();
    let d = root(&t, Resolver::best());
    for name in ["", ".", "..", "a/b"] {
        assert!(matches!(
            d.replace_file(OsStr::new(name), b"x", None),
            Err(BeneathError::NotPlain(_))
        ));
    }
}

/// Exchange two names atomically.
fn exchange(a: &Path, b: &Path) {
    let ca = CString::new(a.as_os_str().as_bytes()).unwrap();
    let cb = CString::new(b.as_os_str().as_bytes()).unwrap();
    // SAFETY: two valid NUL-terminated paths.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    assert_eq!(rc, 0, "{}", io::Error::last_os_error());
}

#[test]
fn a_folder_swapped_with_a_symlink_in_a_loop_never_leads_outside_with_either_resolver() {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    for r in resolvers() {
        let t = tree();
        std::fs::create_dir(t.root.join("s")).unwrap();
        std::fs::write(t.root.join("s/secret.txt"), "inside").unwrap();
        symlink(&t.out, t.root.join("l")).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let (a, b, s) = (t.root.join("s"), t.root.join("l"), stop.clone());
        let swapper = std::thread::spawn(move || {
            let mut n = 0u64;
            while !s.load(Ordering::Relaxed) {
                exchange(&a, &b);
                n += 1;
            }
            n
        });
        let d = root(&t, r);
        let (mut opened, mut wrote) = (0, 0);
        for i in 0..3000 {
            match d.open_read(Path::new("s/secret.txt")) {
                Ok(f) => {
                    assert_ne!(read(f), "secret", "{r:?}: read outside");
                    opened += 1;
                }
                Err(BeneathError::Symlink | BeneathError::Io(_)) => {}
                Err(e) => panic!("{r:?}: unexpected {e:?}"),
            }
            if let Ok(dir) = d.create_dirs(Path::new("s")) {
                let content = format!("w{i}");
                if dir
                    .replace_file(OsStr::new("secret.txt"), content.as_bytes(), None)
                    .is_ok()
                {
                    wrote += 1;
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
        let swaps = swapper.join().unwrap();
        eprintln!("{r:?}: {swaps} swaps, {opened} reads and {wrote} writes went through");
        assert!(swaps > 1000, "{r:?}: only {swaps} swaps");
        assert_eq!(
            std::fs::read_to_string(t.out.join("secret.txt")).unwrap(),
            "secret",
            "{r:?}: written outside"
        );
        let stray: Vec<_> = std::fs::read_dir(&t.out)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(stray.len(), 1, "{r:?}: files created outside: {stray:?}");
    }
}
