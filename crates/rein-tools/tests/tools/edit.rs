//! edit_file: match levels, ambiguity, misses, line endings.

use rein_tools::EditFile;
use serde_json::json;

use crate::common::Env;

#[tokio::test]
async fn edit_with_two_matches_is_refused_listing_both_line_numbers() {
    let env = Env::new().await;
    env.write(
        "a.rs",
        "fn a() {\n    retry();\n}\nfn b() {\n    retry();\n}\n",
    );
    let e = env
        .err(
            &EditFile,
            json!({"path": "a.rs", "old_string": "retry();", "new_string": "go();"}),
        )
        .await;
    assert!(e.contains("matches 2 places"), "{e}");
    assert!(e.contains("lines 2, 5"), "{e}");
    assert!(e.contains("replace_all"), "{e}");
    assert_eq!(
        env.read("a.rs"),
        "fn a() {\n    retry();\n}\nfn b() {\n    retry();\n}\n"
    );
}

#[tokio::test]
async fn edit_with_no_match_names_the_closest_candidate_line() {
    let env = Env::new().await;
    env.write(
        "main.rs",
        "use std::io;\n\nfn main() {\n    let total = compute(1, 2);\n    println!(\"{total}\");\n}\n",
    );
    let e = env
        .err(
            &EditFile,
            json!({"path": "main.rs", "old_string": "let totl = compute(1, 2);", "new_string": "x"}),
        )
        .await;
    assert!(e.contains("not found in `main.rs`"), "{e}");
    assert!(e.contains("line 4"), "{e}");
    assert!(e.contains("let total = compute(1, 2);"), "{e}");
}

#[tokio::test]
async fn edit_keeps_a_crlf_file_crlf_and_shows_a_diff() {
    let env = Env::new().await;
    env.write("win.txt", "one\r\ntwo\r\nthree\r\n");
    let out = env
        .ok(
            &EditFile,
            json!({"path": "win.txt", "old_string": "one\ntwo\n", "new_string": "uno\ndos\nmas\n"}),
        )
        .await;
    assert_eq!(env.read("win.txt"), "uno\r\ndos\r\nmas\r\nthree\r\n");
    assert!(out.contains("line endings"), "{out}");
    assert!(out.contains("--- a/win.txt\n+++ b/win.txt\n"), "{out}");
    assert!(out.contains("-one\n-two\n+uno\n+dos\n+mas\n"), "{out}");
    assert!(!out.contains('\r'), "diff shown with LF: {out:?}");
}

#[tokio::test]
async fn edit_exact_match_in_crlf_file_converts_new_line_endings() {
    let env = Env::new().await;
    env.write("win.txt", "a\r\nb\r\n");
    env.ok(
        &EditFile,
        json!({"path": "win.txt", "old_string": "b", "new_string": "b\nc"}),
    )
    .await;
    assert_eq!(env.read("win.txt"), "a\r\nb\r\nc\r\n");
}

#[tokio::test]
async fn edit_indentation_insensitive_match_reindents_the_replacement() {
    let env = Env::new().await;
    env.write(
        "lib.rs",
        "mod m {\n    impl A {\n        fn f(&self) -> u32 {\n            1\n        }\n    }\n}\n",
    );
    let out = env
        .ok(
            &EditFile,
            json!({
                "path": "lib.rs",
                "old_string": "fn f(&self) -> u32 {\n    1\n}",
                "new_string": "fn f(&self) -> u32 {\n    let x = 2;\n    x\n}"
            }),
        )
        .await;
    assert!(out.contains("indentation-insensitive"), "{out}");
    assert_eq!(
        env.read("lib.rs"),
        "mod m {\n    impl A {\n        fn f(&self) -> u32 {\n            let x = 2;\n            x\n        }\n    }\n}\n"
    );
}

#[tokio::test]
async fn edit_whitespace_trimmed_match_ignores_trailing_spaces() {
    let env = Env::new().await;
    env.write("t.py", "def f():  \n    return 1 \t\n\nprint(f())\n");
    let out = env
        .ok(
            &EditFile,
            json!({
                "path": "t.py",
                "old_string": "def f():\n    return 1\n",
                "new_string": "def f():\n    return 2\n"
            }),
        )
        .await;
    assert!(out.contains("whitespace-trimmed"), "{out}");
    assert!(out.contains("1 replacement"), "{out}");
    assert_eq!(env.read("t.py"), "def f():\n    return 2\n\nprint(f())\n");
}

#[tokio::test]
async fn edit_replace_all_changes_every_occurrence_and_counts_them() {
    let env = Env::new().await;
    env.write("c.txt", "foo bar\nbar foo\nfoo\n");
    let out = env
        .ok(
            &EditFile,
            json!({"path": "c.txt", "old_string": "foo", "new_string": "baz", "replace_all": true}),
        )
        .await;
    assert!(out.contains("3 replacements"), "{out}");
    assert_eq!(env.read("c.txt"), "baz bar\nbar baz\nbaz\n");
}

#[tokio::test]
async fn edit_refuses_empty_old_string_identical_strings_and_missing_files() {
    let env = Env::new().await;
    env.write("x.txt", "abc\n");
    let e = env
        .err(
            &EditFile,
            json!({"path": "x.txt", "old_string": "", "new_string": "z"}),
        )
        .await;
    assert!(e.contains("use write_file"), "{e}");
    let e = env
        .err(
            &EditFile,
            json!({"path": "x.txt", "old_string": "abc", "new_string": "abc"}),
        )
        .await;
    assert!(e.contains("identical"), "{e}");
    let e = env
        .err(
            &EditFile,
            json!({"path": "nope.txt", "old_string": "a", "new_string": "b"}),
        )
        .await;
    assert!(e.contains("does not exist"), "{e}");
}
