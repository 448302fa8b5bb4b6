use super::*;
use std::path::Path;

fn ws() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let real = std::fs::canonicalize(dir.path()).unwrap();
    (dir, real)
}

fn put(ws: &Path, rel: &str, text: &str) {
    let path = ws.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The named files, relative and sorted.
fn rel(named: &NamedFiles, ws: &Path) -> Vec<String> {
    let mut v: Vec<String> = named
        .files
        .iter()
        .map(|f| f.strip_prefix(ws).unwrap().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

#[test]
fn scripts_flag_values_and_project_variables_are_named() {
    let (_d, ws) = ws();
    put(&ws, "srv.py", "print()");
    put(&ws, "conf/server.toml", "");
    put(&ws, "data.json", "{}");
    let named = files_of_argv(
        &argv(&[
            "python3",
            "srv.py",
            "--config=conf/server.toml",
            "-f",
            "${REIN_PROJECT_DIR}/data.json",
        ]),
        &ws,
    );
    assert!(named.complete);
    assert_eq!(
        rel(&named, &ws),
        ["conf/server.toml", "data.json", "srv.py"]
    );
    let hook = files_of_shell(
        "cd \"$CLAUDE_PROJECT_DIR\" && sh ./srv.py 2>>log.txt; cat $REIN_PROJECT_DIR/data.json > out.txt",
        &ws,
    );
    assert_eq!(rel(&hook, &ws), ["data.json", "srv.py"]);
}

#[test]
fn python_m_resolves_modules_packages_and_dotted_names_in_the_workspace() {
    let (_d, ws) = ws();
    put(&ws, "guard.py", "");
    put(&ws, "tools/__init__.py", "");
    put(&ws, "tools/check/__init__.py", "");
    put(&ws, "tools/check/__main__.py", "");
    put(&ws, "tools/other.py", "");
    assert_eq!(
        rel(
            &files_of_argv(&argv(&["python3", "-I", "-m", "guard"]), &ws),
            &ws
        ),
        ["guard.py"]
    );
    assert_eq!(
        rel(&files_of_shell("python3 -mtools.check --fast", &ws), &ws),
        [
            "tools/__init__.py",
            "tools/check/__init__.py",
            "tools/check/__main__.py"
        ]
    );
    // A module that is not in the workspace names nothing; nor does `-c`.
    assert!(
        files_of_shell("python3 -m http.server", &ws)
            .files
            .is_empty()
    );
    assert!(
        files_of_shell("python3 -c 'import guard' -m guard", &ws)
            .files
            .is_empty()
    );
    // Hostile module names are not paths.
    assert!(
        files_of_shell("python3 -m ../../etc/passwd", &ws)
            .files
            .is_empty()
    );
    assert!(
        files_of_shell("python3 -m tools..other", &ws)
            .files
            .is_empty()
    );
}

#[test]
fn make_reads_its_makefile_with_dash_c_and_dash_f() {
    let (_d, ws) = ws();
    put(&ws, "Makefile", "all:\n");
    put(&ws, "sub/GNUmakefile", "all:\n");
    put(&ws, "sub/extra.mk", "x:\n");
    assert_eq!(rel(&files_of_shell("make lint", &ws), &ws), ["Makefile"]);
    assert_eq!(
        rel(
            &files_of_argv(&argv(&["make", "-C", "sub", "test"]), &ws),
            &ws
        ),
        ["sub/GNUmakefile"]
    );
    assert_eq!(
        rel(
            &files_of_shell("make --directory=sub -f extra.mk x", &ws),
            &ws
        ),
        ["sub/extra.mk"]
    );
}

#[test]
fn package_managers_name_package_json_and_what_the_script_runs() {
    let (_d, ws) = ws();
    put(
        &ws,
        "package.json",
        r#"{"scripts": {"start": "node server.js", "prestart": "sh scripts/pre.sh"}}"#,
    );
    put(&ws, "server.js", "");
    put(&ws, "scripts/pre.sh", "");
    put(
        &ws,
        "web/package.json",
        r#"{"scripts": {"dev": "node dev.js"}}"#,
    );
    put(&ws, "web/dev.js", "");
    assert_eq!(
        rel(&files_of_shell("npm start", &ws), &ws),
        ["package.json", "scripts/pre.sh", "server.js"]
    );
    assert_eq!(
        rel(
            &files_of_argv(&argv(&["pnpm", "--dir", "web", "dev"]), &ws),
            &ws
        ),
        ["web/dev.js", "web/package.json"]
    );
}

#[test]
fn digests_notice_a_changed_a_missing_and_a_newly_named_file() {
    let (_d, ws) = ws();
    put(&ws, "srv.py", "v1");
    let cmd = argv(&["python3", "srv.py", "-m", "x"]);
    let approved = FileDigests::of(&files_of_argv(&cmd, &ws), &ws);
    assert_eq!(approved.0.len(), 1);
    assert_eq!(
        approved.change_to(&FileDigests::of(&files_of_argv(&cmd, &ws), &ws)),
        None
    );
    put(&ws, "srv.py", "v2");
    let now = FileDigests::of(&files_of_argv(&cmd, &ws), &ws);
    assert_eq!(
        approved.change_to(&now),
        Some(FileChange::Changed("srv.py".into()))
    );
    std::fs::remove_file(ws.join("srv.py")).unwrap();
    let now = FileDigests::of(&files_of_argv(&cmd, &ws), &ws);
    assert_eq!(
        approved.change_to(&now),
        Some(FileChange::Gone("srv.py".into()))
    );
    put(&ws, "srv.py", "v1");
    put(&ws, "x.py", "new");
    let now = FileDigests::of(&files_of_argv(&cmd, &ws), &ws);
    // `python3 srv.py -m x`: `-m x` are the script's arguments, but the
    // word `x`… is no file; a `python3 -m x` would be.
    assert_eq!(approved.change_to(&now), None);
    let cmd = argv(&["python3", "-m", "x"]);
    let approved = FileDigests::of(&files_of_argv(&cmd, &ws), &ws);
    put(&ws, "x/__init__.py", "shadow");
    let now = FileDigests::of(&files_of_argv(&cmd, &ws), &ws);
    assert_eq!(
        approved.change_to(&now),
        Some(FileChange::New("x/__init__.py".into()))
    );
}

#[test]
fn symlinks_out_of_the_workspace_fifos_and_folders_name_nothing() {
    let (_d, ws) = ws();
    let (_o, outside) = super::tests::ws();
    put(&outside, "evil.py", "x");
    std::os::unix::fs::symlink(outside.join("evil.py"), ws.join("srv.py")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("lib")).unwrap();
    std::os::unix::fs::symlink(ws.join("loop"), ws.join("loop")).unwrap();
    let fifo = std::ffi::CString::new(ws.join("pipe").to_str().unwrap()).unwrap();
    // SAFETY: a valid C string and mode.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    std::fs::create_dir(ws.join("dir")).unwrap();
    let line = format!(
        "python3 srv.py lib/evil.py loop pipe dir {} ../{}",
        outside.join("evil.py").display(),
        "etc/passwd"
    );
    let named = files_of_shell(&line, &ws);
    assert!(named.files.is_empty(), "{named:?}");
    assert!(files_of_shell("cat pipe < pipe", &ws).files.is_empty());
    // A symlink to a file inside the workspace names that file.
    put(&ws, "real.sh", "");
    std::os::unix::fs::symlink(ws.join("real.sh"), ws.join("alias.sh")).unwrap();
    assert_eq!(rel(&files_of_shell("sh alias.sh", &ws), &ws), ["real.sh"]);
}

#[test]
fn odd_input_returns_without_panicking() {
    let (_d, ws) = ws();
    put(&ws, "a.sh", "");
    for line in [
        "sh 'a.sh",
        "sh \"a.sh",
        "sh a.sh\\",
        "$",
        "${",
        "${REIN_PROJECT_DIR",
        "$REIN_PROJECT_DIRX/a.sh",
        ">",
        ">&",
        "2>",
        "|||;;&&",
        "(((",
        "\u{0}\u{0}",
        "sh -c",
        "bash -c 'bash -c \"bash -c \\\"bash -c \\\\\\\"sh a.sh\\\\\\\"\\\"\"'",
        "python3 -m",
        "python3 -m ''",
        "make -C",
        "make -f",
        "npm run",
        "é\u{301}🙂 \u{202e}",
        "#",
        "cd",
        "cd /",
    ] {
        let _ = files_of_shell(line, &ws);
        let _ = files_of_argv(&argv(&line.split(' ').collect::<Vec<_>>()), &ws);
    }
    assert_eq!(rel(&files_of_shell("sh 'a.sh", &ws), &ws), ["a.sh"]);
    // Huge lines are cut (and then cannot be covered), quickly.
    let huge = "sh a.sh ".repeat(200_000);
    let started = std::time::Instant::now();
    let named = files_of_shell(&huge, &ws);
    assert!(!named.complete);
    let named = files_of_argv(&vec!["x".to_string(); MAX_WORDS + 1], &ws);
    assert!(!named.complete);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let digests = FileDigests::of(&named, &ws);
    assert!(matches!(
        FileDigests::default().change_to(&digests),
        Some(FileChange::Unverifiable { .. })
    ));
}

#[test]
fn too_many_files_or_a_huge_file_cannot_be_covered() {
    let (_d, ws) = ws();
    let mut line = String::from("cat");
    for i in 0..=MAX_FILES {
        put(&ws, &format!("f{i}"), "");
        line.push_str(&format!(" f{i}"));
    }
    let named = files_of_shell(&line, &ws);
    assert_eq!(named.files.len(), MAX_FILES);
    assert!(!named.complete);
    let d = FileDigests::of(&named, &ws);
    assert!(d.change_to(&d).is_some());
    let big = std::fs::File::create(ws.join("big.py")).unwrap();
    big.set_len(MAX_FILE_BYTES + 1).unwrap();
    let named = files_of_shell("python3 big.py", &ws);
    let d = FileDigests::of(&named, &ws);
    let change = d.change_to(&d).unwrap();
    assert!(
        change.to_string().contains("big.py cannot be checked"),
        "{change}"
    );
}

#[test]
fn the_splitter_keeps_quotes_expands_only_project_variables_and_drops_write_targets() {
    let (cmds, cut) = words::split(
        "A=1 sh \"$REIN_PROJECT_DIR/x y\" '$REIN_PROJECT_DIR' \\$HOME >o 2>&1 <in | b # c\nd",
        "/p",
        100,
    );
    assert!(!cut);
    assert_eq!(
        cmds,
        vec![
            argv(&["A=1", "sh", "/p/x y", "$REIN_PROJECT_DIR", "$HOME", "in"]),
            argv(&["b"]),
            argv(&["d"]),
        ]
    );
    assert_eq!(
        expand_project_vars("${CLAUDE_PROJECT_DIR}/a:$REIN_PROJECT_DIRS", "/p"),
        "/p/a:$REIN_PROJECT_DIRS"
    );
}
