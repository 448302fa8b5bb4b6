//! glob and grep.

use std::time::{Duration, SystemTime};

use rein_tools::{Glob, Grep};
use serde_json::json;

use crate::common::Env;

fn set_mtime(env: &Env, rel: &str, secs_ago: u64) {
    let file = std::fs::File::options()
        .write(true)
        .open(env.path(rel))
        .unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(secs_ago))
        .unwrap();
}

#[tokio::test]
async fn glob_honours_gitignore_skips_hidden_files_and_lists_newest_first() {
    let env = Env::new().await;
    env.write(".gitignore", "target/\n*.gen.rs\n");
    env.write("old.rs", "");
    env.write("src/new.rs", "");
    env.write("src/mid.rs", "");
    env.write("src/x.gen.rs", "");
    env.write("target/debug/build.rs", "");
    env.write(".hidden/h.rs", "");
    env.write(".dot.rs", "");
    env.write("notes.txt", "");
    set_mtime(&env, "old.rs", 3000);
    set_mtime(&env, "src/mid.rs", 2000);
    set_mtime(&env, "src/new.rs", 1000);

    let out = env.ok(&Glob, json!({"pattern": "*.rs"})).await;
    assert_eq!(out, "src/new.rs\nsrc/mid.rs\nold.rs");

    let out = env
        .ok(&Glob, json!({"pattern": "*.rs", "path": "src"}))
        .await;
    assert_eq!(out, "src/new.rs\nsrc/mid.rs");

    let out = env.ok(&Glob, json!({"pattern": "src/*.rs"})).await;
    assert_eq!(out, "src/new.rs\nsrc/mid.rs");
}

#[tokio::test]
async fn glob_with_no_match_says_so() {
    let env = Env::new().await;
    env.write("a.txt", "");
    let out = env.ok(&Glob, json!({"pattern": "**/*.go"})).await;
    assert_eq!(out, "No files match `**/*.go` under `.`.");
}

#[tokio::test]
async fn glob_caps_the_list_and_says_how_many_more() {
    let env = Env::new().await;
    for i in 0..205 {
        env.write(&format!("f{i:03}.txt"), "");
    }
    let out = env.ok(&Glob, json!({"pattern": "*.txt"})).await;
    assert_eq!(out.lines().count(), 201);
    assert!(
        out.ends_with("5 more. Use a narrower pattern or path to see them.]"),
        "{out}"
    );
}

#[tokio::test]
async fn glob_path_outside_the_workspace_is_refused() {
    let env = Env::new().await;
    let e = env.err(&Glob, json!({"pattern": "*", "path": ".."})).await;
    assert!(e.contains("outside the workspace"), "{e}");
}

#[tokio::test]
async fn grep_filters_by_glob_and_ignores_case_when_asked() {
    let env = Env::new().await;
    env.write("src/a.rs", "fn main() {\n    let Needle = 1;\n}\n");
    env.write("src/b.rs", "// needle here\nnothing\n");
    env.write("docs/n.md", "a needle in docs\n");
    env.write("bin.dat", b"needle\x00\x01\x02");

    let out = env
        .ok(
            &Grep::default(),
            json!({"pattern": "needle", "glob": "*.rs"}),
        )
        .await;
    assert_eq!(out, "src/b.rs:1:// needle here");

    let out = env
        .ok(
            &Grep::default(),
            json!({"pattern": "needle", "glob": "*.rs", "case_insensitive": true}),
        )
        .await;
    assert_eq!(
        out,
        "src/a.rs:2:    let Needle = 1;\nsrc/b.rs:1:// needle here"
    );

    // Without a filter every text file is searched in path order; binary files are skipped.
    let out = env.ok(&Grep::default(), json!({"pattern": "needle"})).await;
    assert_eq!(
        out,
        "docs/n.md:1:a needle in docs\nsrc/b.rs:1:// needle here"
    );
}

#[tokio::test]
async fn grep_searches_a_single_file_and_reports_no_matches() {
    let env = Env::new().await;
    env.write("one.txt", "alpha\nbeta\nalphabet\n");
    env.write("two.txt", "alpha\n");
    let out = env
        .ok(
            &Grep::default(),
            json!({"pattern": "^alpha", "path": "one.txt"}),
        )
        .await;
    assert_eq!(out, "one.txt:1:alpha\none.txt:3:alphabet");
    let out = env
        .ok(
            &Grep::default(),
            json!({"pattern": "gamma", "path": "one.txt"}),
        )
        .await;
    assert_eq!(out, "No matches for `gamma` in `one.txt`.");
}

#[tokio::test]
async fn grep_drops_a_newline_ending_the_pattern_and_says_so() {
    let env = Env::new().await;
    env.write("one.txt", "# TODO: a\nx = 1\n# TODO: b\n");
    let out = env
        .ok(&Grep::default(), json!({"pattern": "TODO\\n"}))
        .await;
    assert_eq!(
        out,
        "one.txt:1:# TODO: a\none.txt:3:# TODO: b\n\
         [The pattern's trailing \\n was dropped: lines are matched one at a time.]"
    );
    // A newline inside the pattern is still refused.
    let err = env.err(&Grep::default(), json!({"pattern": "a\\nb"})).await;
    assert!(err.contains("invalid regex"), "{err}");
}

#[tokio::test]
async fn grep_finding_nothing_in_a_folder_says_it_searched_contents_not_names() {
    let env = Env::new().await;
    env.write("pkg/core.py", "X = 1\n");
    let out = env.ok(&Grep::default(), json!({"pattern": "py$"})).await;
    assert_eq!(
        out,
        "No matches for `py$` in `.`. grep searches what files contain; glob finds files by name."
    );
}

/// The small profile's grep: a search for file names in the contents
/// says how many names match (the 1.5B model counted Python files with
/// `py$` and answered "none"); words searched in the wrong form show the
/// lines that hold them in any case (`DATABASE_URL=.*` for a variable
/// named `ORDERS_DB_URL`). The plain grep says none of it.
#[tokio::test]
async fn grep_with_hints_finding_nothing_shows_matching_names_and_lines_with_its_words() {
    let env = Env::new().await;
    env.write("main.py", "print('main')\n");
    env.write("pkg/core.py", "X = 1\n");
    env.write("README.txt", "not python\n");
    env.write(
        "store.py",
        "import os\nurl = os.environ.get(\"ORDERS_DB_URL\")\n",
    );
    let out = env.ok(&Grep::with_hints(), json!({"pattern": "py$"})).await;
    assert_eq!(
        out,
        "No matches for `py$` in `.`.\nNo file contains `py$`, but 3 file names match it (grep \
         searches what files contain; glob finds files by name):\nmain.py\npkg/core.py\nstore.py"
    );
    let out = env
        .ok(&Grep::with_hints(), json!({"pattern": "DATABASE_URL=.*"}))
        .await;
    assert_eq!(
        out,
        "No matches for `DATABASE_URL=.*` in `.`.\nLines with `DATABASE` or `URL` in any case \
         (near what was searched, not a match):\nstore.py:2:url = os.environ.get(\"ORDERS_DB_URL\")"
    );
    // Nothing near either: the plain note.
    let out = env
        .ok(&Grep::with_hints(), json!({"pattern": "zebra"}))
        .await;
    assert!(out.ends_with("glob finds files by name."), "{out}");
    let out = env
        .ok(&Grep::default(), json!({"pattern": "DATABASE_URL=.*"}))
        .await;
    assert!(!out.contains("any case"), "{out}");
}

/// Asked about the `src` folder, the model searched the whole project
/// and answered the total: matches in several folders are counted per
/// folder by the small profile's grep.
#[tokio::test]
async fn grep_with_hints_counts_matches_per_top_folder() {
    let env = Env::new().await;
    env.write("src/app.py", "# TODO: a\n# TODO: b\n");
    env.write("src/web/routes.py", "# TODO: c\n");
    env.write("docs/notes.md", "TODO: docs\n");
    let out = env
        .ok(&Grep::with_hints(), json!({"pattern": "TODO"}))
        .await;
    assert!(
        out.ends_with("\n[4 matching lines: 1 in docs/, 3 in src/]"),
        "{out}"
    );
    let out = env.ok(&Grep::default(), json!({"pattern": "TODO"})).await;
    assert!(!out.contains("matching lines"), "{out}");
}

#[tokio::test]
async fn grep_invalid_regex_is_a_clear_error() {
    let env = Env::new().await;
    let e = env
        .err(&Grep::default(), json!({"pattern": "fn (foo"}))
        .await;
    assert!(e.starts_with("invalid regex `fn (foo`:"), "{e}");
    assert!(e.contains("unclosed group"), "{e}");
}

#[tokio::test]
async fn grep_caps_matches_and_says_how_many_more_in_how_many_files() {
    let env = Env::new().await;
    let text: String = (0..150).map(|i| format!("hit {i}\n")).collect();
    env.write("a.txt", &text);
    env.write("b.txt", &text);
    env.write("c.txt", &text);
    let out = env.ok(&Grep::default(), json!({"pattern": "hit"})).await;
    assert_eq!(out.lines().count(), 201);
    assert!(
        out.ends_with("[200 of 450 matching lines shown; 250 more in 2 files. Narrow the pattern, path or glob to see them.]"),
        "{}",
        out.lines().last().unwrap()
    );
}
