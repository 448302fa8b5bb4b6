//! read_file, write_file and workspace confinement.

use rein_core::Tool;
use rein_tools::{ReadFile, WriteFile};
use serde_json::json;

use crate::common::Env;

#[tokio::test]
async fn read_shows_numbered_lines_like_cat_n() {
    let env = Env::new().await;
    env.write("a.txt", "alpha\nbeta\n");
    let out = env.ok(&ReadFile::default(), json!({"path": "a.txt"})).await;
    assert_eq!(out, "     1\talpha\n     2\tbeta");
}

#[tokio::test]
async fn read_offset_and_limit_show_a_window_ending_with_how_to_read_on() {
    let env = Env::new().await;
    let text: String = (1..=50).map(|i| format!("line {i}\n")).collect();
    env.write("big.txt", text);
    let out = env
        .ok(
            &ReadFile::default(),
            json!({"path": "big.txt", "offset": 10, "limit": 3}),
        )
        .await;
    assert_eq!(
        out,
        "    10\tline 10\n    11\tline 11\n    12\tline 12\n\
         [showing lines 10-12 of 50; call read_file with offset=13 to continue]"
    );
    let rest = env
        .ok(
            &ReadFile::default(),
            json!({"path": "big.txt", "offset": 48}),
        )
        .await;
    assert_eq!(rest, "    48\tline 48\n    49\tline 49\n    50\tline 50");
}

#[tokio::test]
async fn read_default_limit_is_2000_lines() {
    let env = Env::new().await;
    let text: String = (1..=2500).map(|i| format!("{i}\n")).collect();
    env.write("long.txt", text);
    let out = env
        .ok(&ReadFile::default(), json!({"path": "long.txt"}))
        .await;
    assert!(out.contains("  2000\t2000\n"), "{out}");
    assert!(!out.contains("\t2001"));
    assert!(
        out.ends_with(
            "[showing lines 1-2000 of 2500; call read_file with offset=2001 to continue]"
        )
    );
}

#[tokio::test]
async fn read_offset_past_the_end_says_how_many_lines_there_are() {
    let env = Env::new().await;
    env.write("a.txt", "1\n2\n3\n");
    let e = env
        .err(&ReadFile::default(), json!({"path": "a.txt", "offset": 9}))
        .await;
    assert_eq!(e, "offset 9 is past the end of `a.txt`, which has 3 lines");
}

#[tokio::test]
async fn read_binary_file_is_refused_with_its_size() {
    let env = Env::new().await;
    let mut bytes = b"\x7fELF".to_vec();
    bytes.extend([0u8; 100]);
    env.write("prog", &bytes);
    let e = env.err(&ReadFile::default(), json!({"path": "prog"})).await;
    assert!(e.contains("binary"), "{e}");
    assert!(e.contains("104 bytes"), "{e}");
}

#[tokio::test]
async fn read_non_utf8_text_is_shown_lossily() {
    let env = Env::new().await;
    env.write("latin1.txt", b"caf\xe9 au lait\n");
    let out = env
        .ok(&ReadFile::default(), json!({"path": "latin1.txt"}))
        .await;
    assert_eq!(out, "     1\tcaf\u{FFFD} au lait");
}

/// The small profile's read_file, asked for a file that does not exist,
/// shows the lines that name it (the 1.5B model asked for `LICENSE`,
/// which the README describes, and answered from memory); the plain one,
/// and a read of a folder, do not.
#[tokio::test]
async fn read_with_hints_of_a_missing_file_shows_the_lines_that_name_it() {
    let env = Env::new().await;
    env.write(
        "README.md",
        "# tidy\n\n## License\n\nReleased under the Apache License 2.0; see LICENSE.\n",
    );
    let e = env
        .err(&ReadFile::with_hints(), json!({"path": "LICENSE"}))
        .await;
    assert_eq!(
        e,
        "`LICENSE` does not exist; use glob to find the right path. Lines that name `LICENSE` \
         (any case):\nREADME.md:3:## License\nREADME.md:5:Released under the Apache License \
         2.0; see LICENSE."
    );
    let e = env
        .err(&ReadFile::default(), json!({"path": "LICENSE"}))
        .await;
    assert!(!e.contains("Lines that name"), "{e}");
    let e = env
        .err(&ReadFile::with_hints(), json!({"path": "COPYING"}))
        .await;
    assert!(!e.contains("Lines that name"), "{e}");
}

#[tokio::test]
async fn read_missing_file_directory_and_empty_file_are_explained() {
    let env = Env::new().await;
    let e = env
        .err(&ReadFile::default(), json!({"path": "nope.rs"}))
        .await;
    assert!(e.contains("`nope.rs` does not exist"), "{e}");
    std::fs::create_dir(env.path("src")).unwrap();
    let e = env.err(&ReadFile::default(), json!({"path": "src"})).await;
    assert!(e.contains("is a directory") && e.contains("glob"), "{e}");
    env.write("empty.txt", "");
    let out = env
        .ok(&ReadFile::default(), json!({"path": "empty.txt"}))
        .await;
    assert!(out.contains("`empty.txt` is empty"), "{out}");
}

#[tokio::test]
async fn write_creates_parent_folders_then_reports_overwriting() {
    let env = Env::new().await;
    let out = env
        .ok(
            &WriteFile,
            json!({"path": "deep/er/new.txt", "content": "hello\n"}),
        )
        .await;
    assert_eq!(out, "Created `deep/er/new.txt` (6 bytes, 1 line).");
    assert_eq!(env.read("deep/er/new.txt"), "hello\n");
    let out = env
        .ok(
            &WriteFile,
            json!({"path": "deep/er/new.txt", "content": "bye"}),
        )
        .await;
    assert!(
        out.starts_with("Overwrote `deep/er/new.txt` (3 bytes"),
        "{out}"
    );
    assert_eq!(env.read("deep/er/new.txt"), "bye");
}

#[tokio::test]
async fn symlink_escaping_the_workspace_is_refused_for_read_and_write() {
    let env = Env::new().await;
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), env.path("link.txt")).unwrap();
    std::os::unix::fs::symlink(outside.path(), env.path("linkdir")).unwrap();

    let e = env
        .err(&ReadFile::default(), json!({"path": "link.txt"}))
        .await;
    assert!(
        e.contains("outside the workspace") && e.contains("link.txt"),
        "{e}"
    );
    assert!(!e.contains("secret\n"), "{e}");

    let e = env
        .err(&WriteFile, json!({"path": "link.txt", "content": "pwned"}))
        .await;
    assert!(e.contains("outside the workspace"), "{e}");
    let e = env
        .err(
            &WriteFile,
            json!({"path": "linkdir/new.txt", "content": "pwned"}),
        )
        .await;
    assert!(e.contains("outside the workspace"), "{e}");
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "secret"
    );
    assert!(!outside.path().join("new.txt").exists());

    // The refusal already happens when the gate asks for locks.
    let ctx = env.ctx();
    assert!(
        ReadFile::default()
            .locks(&json!({"path": "link.txt"}), &ctx)
            .unwrap_err()
            .to_string()
            .contains("outside the workspace")
    );
}

#[tokio::test]
async fn dotdot_escape_is_refused_for_read_and_write() {
    let env = Env::new().await;
    let e = env
        .err(&ReadFile::default(), json!({"path": "../etc/passwd"}))
        .await;
    assert!(e.contains("outside the workspace"), "{e}");
    let e = env
        .err(
            &WriteFile,
            json!({"path": "sub/../../escape.txt", "content": "x"}),
        )
        .await;
    assert!(
        e.contains("outside the workspace") || e.contains("`..` is not allowed"),
        "{e}"
    );
    let e = env
        .err(&ReadFile::default(), json!({"path": "/etc/hostname"}))
        .await;
    assert!(e.contains("outside the workspace"), "{e}");
    assert!(!env.root.parent().unwrap().join("escape.txt").exists());
}

#[tokio::test]
async fn unknown_arguments_are_refused_by_the_schema() {
    let env = Env::new().await;
    let e = env
        .err(&ReadFile::default(), json!({"path": "a", "lines": 3}))
        .await;
    assert!(e.contains("unknown field `lines`"), "{e}");
}

#[tokio::test]
async fn read_of_a_named_pipe_is_refused_instead_of_blocking() {
    let env = Env::new().await;
    let status = std::process::Command::new("mkfifo")
        .arg(env.path("pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    let e = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        env.err(&ReadFile::default(), json!({"path": "pipe"})),
    )
    .await
    .unwrap();
    assert!(e.contains("not a regular file"), "{e}");
}
