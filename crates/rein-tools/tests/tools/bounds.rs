//! Bounded reads and size caps: no file or argument makes a file tool
//! allocate far more than its output caps.

use rein_core::Tool;
use rein_tools::fileio::MAX_WRITE_BYTES;
use rein_tools::read_file::MAX_OUTPUT_BYTES;
use rein_tools::{EditFile, Grep, ReadFile, WriteFile};
use serde_json::json;

use crate::common::Env;

/// A 6 GiB file that is one line: text first (so it is not taken for a
/// binary file), then zeros to the end. Sparse: it costs no disk.
fn huge_one_line_file(env: &Env, rel: &str) {
    let path = env.path(rel);
    std::fs::write(&path, "x".repeat(9000)).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(6 << 30).unwrap();
}

#[tokio::test]
async fn read_of_a_6_gib_single_line_file_returns_a_bounded_cut_window() {
    let env = Env::new().await;
    huge_one_line_file(&env, "huge.txt");
    let out = env
        .ok(&ReadFile::default(), json!({"path": "huge.txt"}))
        .await;
    assert!(out.len() <= MAX_OUTPUT_BYTES, "{} bytes", out.len());
    let first = out.lines().next().unwrap();
    assert!(first.starts_with("     1\txxxx"), "{first:.80}");
    assert!(
        first.contains("… [line cut: at least "),
        "{}",
        &first[first.len().saturating_sub(120)..]
    );
    let last = out.lines().last().unwrap();
    assert!(
        last.contains("line count is unknown; call read_file with offset=2 to continue"),
        "{last}"
    );
}

#[tokio::test]
async fn grep_skips_a_file_with_a_line_longer_than_its_buffer_and_says_so() {
    let env = Env::new().await;
    let long = "a".repeat(rein_tools::grep::MAX_SEARCH_LINE_BYTES + 1024);
    env.write("long.txt", format!("needle {long}\n"));
    env.write("short.txt", "needle here\n");
    let out = env.ok(&Grep::default(), json!({"pattern": "needle"})).await;
    assert!(out.contains("short.txt:1:needle here"), "{out:.400}");
    assert!(!out.contains("long.txt:"), "{out:.400}");
    assert!(
        out.contains("1 file not searched (a line longer than 4 MiB") && out.contains("long.txt"),
        "{out:.400}"
    );
    // The 6 GiB sparse file is binary after its text: skipped quickly.
    huge_one_line_file(&env, "huge.txt");
    let out = env
        .ok(
            &Grep::default(),
            json!({"pattern": "xx", "path": "huge.txt"}),
        )
        .await;
    assert!(out.len() < 4096, "{out:.400}");
}

#[tokio::test]
async fn write_file_refuses_content_over_the_cap_and_names_both_sizes() {
    let env = Env::new().await;
    let big = "a".repeat(MAX_WRITE_BYTES + 1);
    let e = env
        .err(&WriteFile, json!({"path": "big.txt", "content": big}))
        .await;
    assert!(
        e.contains(&format!("content is {} bytes", MAX_WRITE_BYTES + 1)) && e.contains("16 MiB"),
        "{e}"
    );
    assert!(!env.exists("big.txt"));
    // Exactly at the cap is fine.
    let ok = "a".repeat(MAX_WRITE_BYTES);
    env.ok(&WriteFile, json!({"path": "ok.txt", "content": ok}))
        .await;
    assert_eq!(
        std::fs::metadata(env.path("ok.txt")).unwrap().len(),
        MAX_WRITE_BYTES as u64
    );
}

#[tokio::test]
async fn edit_file_refuses_a_file_or_a_replacement_over_the_cap() {
    let env = Env::new().await;
    let path = env.path("big.txt");
    std::fs::write(&path, "start\n").unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(6 << 30).unwrap();
    let e = env
        .err(
            &EditFile,
            json!({"path": "big.txt", "old_string": "start", "new_string": "end"}),
        )
        .await;
    assert!(
        e.contains(&format!("is {} bytes", 6u64 << 30)) && e.contains("up to 16 MiB"),
        "{e}"
    );
    env.write("small.txt", "start\n");
    let e = env
        .err(
            &EditFile,
            json!({"path": "small.txt", "old_string": "start", "new_string": "b".repeat(MAX_WRITE_BYTES + 1)}),
        )
        .await;
    assert!(e.contains("new_string is"), "{e}");
    assert_eq!(env.read("small.txt"), "start\n");
}

#[tokio::test]
async fn write_and_edit_keep_the_mode_of_the_file_they_replace() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new().await;
    env.write("run.sh", "#!/bin/sh\necho a\n");
    let exec = std::fs::Permissions::from_mode(0o750);
    std::fs::set_permissions(env.path("run.sh"), exec).unwrap();
    env.ok(
        &EditFile,
        json!({"path": "run.sh", "old_string": "echo a", "new_string": "echo b"}),
    )
    .await;
    let mode = |env: &Env| {
        std::fs::metadata(env.path("run.sh"))
            .unwrap()
            .permissions()
            .mode()
    };
    assert_eq!(mode(&env) & 0o777, 0o750);
    env.ok(
        &WriteFile,
        json!({"path": "run.sh", "content": "#!/bin/sh\n"}),
    )
    .await;
    assert_eq!(mode(&env) & 0o777, 0o750);
    // A read-only file stays read-only: it is not replaced behind the
    // user's back.
    std::fs::set_permissions(env.path("run.sh"), std::fs::Permissions::from_mode(0o444)).unwrap();
    let e = env
        .err(&WriteFile, json!({"path": "run.sh", "content": "x"}))
        .await;
    assert!(e.contains("permission denied"), "{e}");
    assert_eq!(env.read("run.sh"), "#!/bin/sh\n");
}

#[tokio::test]
async fn a_symlink_inside_the_workspace_to_a_file_inside_it_is_still_followed() {
    let env = Env::new().await;
    env.write("real/a.txt", "one\n");
    std::os::unix::fs::symlink("real/a.txt", env.path("rel_link")).unwrap();
    std::os::unix::fs::symlink(env.path("real"), env.path("abs_dir_link")).unwrap();
    assert_eq!(
        env.ok(&ReadFile::default(), json!({"path": "abs_dir_link/a.txt"}))
            .await,
        "     1\tone"
    );
    env.ok(&WriteFile, json!({"path": "rel_link", "content": "two\n"}))
        .await;
    assert_eq!(env.read("real/a.txt"), "two\n");
    assert!(
        std::fs::symlink_metadata(env.path("rel_link"))
            .unwrap()
            .is_symlink()
    );
    env.ok(
        &EditFile,
        json!({"path": "abs_dir_link/a.txt", "old_string": "two", "new_string": "three"}),
    )
    .await;
    assert_eq!(env.read("real/a.txt"), "three\n");
    let tool: &dyn Tool = &ReadFile::default();
    assert_eq!(tool.spec().name, "read_file");
}
