use super::super::*;

fn subjects(cmd: &str) -> Vec<String> {
    let parsed = parse(cmd).unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    rule_subjects(&parsed)
}

fn table(cases: &[(&str, &[&str])]) {
    let mut wrong = Vec::new();
    for (cmd, want) in cases {
        let got = subjects(cmd);
        if got != *want {
            wrong.push(format!("{cmd:?}:\n  want {want:?}\n  got  {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn simple_commands_are_their_own_subjects() {
    table(&[
        ("git status", &["git status"]),
        ("git status && git diff", &["git status", "git diff"]),
        ("git \"sta\"tus -s", &["git status -s"]),
        ("FOO=1 cargo test", &["cargo test"]),
        ("echo $(date)", &["echo $(date)", "date"]),
        ("ls; ls", &["ls"]),
        ("", &[]),
    ]);
}

#[test]
fn wrapped_commands_are_subjects_too() {
    table(&[
        ("command rm x", &["command rm x", "rm x"]),
        ("builtin echo x", &["builtin echo x", "echo x"]),
        ("exec rm x", &["exec rm x", "rm x"]),
        ("env rm x", &["env rm x", "rm x"]),
        ("env -i A=1 rm x", &["env -i A=1 rm x", "rm x"]),
        ("nice -n 5 rm x", &["nice -n 5 rm x", "rm x"]),
        ("nohup rm x", &["nohup rm x", "rm x"]),
        ("timeout 5 rm x", &["timeout 5 rm x", "rm x"]),
        (
            "timeout -s KILL 5 rm x",
            &["timeout -s KILL 5 rm x", "rm x"],
        ),
        ("time rm x", &["rm x"]),
        ("busybox rm x", &["busybox rm x", "rm x"]),
        ("sudo -u root rm x", &["sudo -u root rm x", "rm x"]),
        (
            "sudo env nice rm x",
            &["sudo env nice rm x", "env nice rm x", "nice rm x", "rm x"],
        ),
        ("watch -n 5 rm x", &["watch -n 5 rm x", "rm x"]),
        ("watch 'rm x; ls'", &["watch rm x; ls", "rm x", "ls"]),
        ("echo a | xargs rm", &["echo a", "xargs rm", "rm …"]),
        ("xargs -0 rm -f < list", &["xargs -0 rm -f", "rm -f …"]),
        ("xargs -I{} rm {}", &["xargs -I{} rm {}", "rm {}"]),
        ("echo a | xargs", &["echo a", "xargs", "echo …"]),
        (
            "find . -name '*.o' -exec rm {} \\;",
            &["find . -name *.o -exec rm {} ;", "rm ./*"],
        ),
        // Queries run nothing.
        ("command -v rm", &["command -v rm"]),
    ]);
}

#[test]
fn shell_code_given_as_text_is_parsed_into_subjects() {
    table(&[
        ("sh -c 'rm x'", &["sh -c rm x", "rm x"]),
        ("bash -c \"rm x\"", &["bash -c rm x", "rm x"]),
        (
            "bash -lc 'cd a && rm x'",
            &["bash -lc cd a && rm x", "cd a", "rm x"],
        ),
        ("eval 'rm x'", &["eval rm x", "rm x"]),
        ("eval rm x", &["eval rm x", "rm x"]),
        (
            "builtin eval 'rm x'",
            &["builtin eval rm x", "eval rm x", "rm x"],
        ),
        ("trap 'rm x' EXIT", &["trap rm x EXIT", "rm x"]),
        ("su -c 'rm x' root", &["su -c rm x root", "rm x"]),
        ("bash <<'EOF'\nrm x\nEOF\n", &["bash", "rm x"]),
        ("bash <<< 'rm x'", &["bash", "rm x"]),
        (
            "env sh -c 'rm x'",
            &["env sh -c rm x", "sh -c rm x", "rm x"],
        ),
        (
            "sh -c \"bash -c 'rm x'\"",
            &["sh -c bash -c 'rm x'", "bash -c rm x", "rm x"],
        ),
        // Code that does not parse stays text, which `bash(rm *)` matches.
        ("sh -c 'rm x \"'", &["sh -c rm x \"", "rm x \""]),
        // Code only known at run time has no subjects of its own.
        ("eval \"$CMD\"", &["eval $CMD"]),
        ("sh -c \"$CMD\"", &["sh -c $CMD"]),
        // Interpreters other than shells run no commands rules name.
        ("python3 -c 'print(1)'", &["python3 -c print(1)"]),
    ]);
}

/// `rm x` inside `levels` nested `sh -c '…'`.
fn nested(levels: usize) -> String {
    let mut code = "rm x".to_string();
    for _ in 0..levels {
        code = format!("sh -c '{}'", code.replace('\'', "'\\''"));
    }
    code
}

#[test]
fn shell_code_is_followed_as_deep_as_the_classifier_follows_it() {
    // Four levels are parsed; the code the fifth level is given stays text
    // (the classifier calls such a line high risk).
    for levels in [4, 5] {
        let got = subjects(&nested(levels));
        assert_eq!(got.len(), levels + 1, "{got:?}");
        assert_eq!(got.last().map(String::as_str), Some("rm x"), "{got:?}");
    }
    let six = subjects(&nested(6));
    assert!(!six.iter().any(|s| s == "rm x"), "{six:?}");
    assert_eq!(
        six.last().map(String::as_str),
        Some("sh -c 'rm x'"),
        "{six:?}"
    );
}

#[test]
fn programs_named_by_a_path_out_of_the_folder_are_also_named_by_base_name() {
    table(&[
        ("/bin/rm x", &["/bin/rm x", "rm x"]),
        (
            "/usr/bin/env rm x",
            &["/usr/bin/env rm x", "env rm x", "rm x"],
        ),
        ("env /bin/rm x", &["env /bin/rm x", "/bin/rm x", "rm x"]),
        (
            "sh -c '/bin/rm x'",
            &["sh -c /bin/rm x", "/bin/rm x", "rm x"],
        ),
        ("~/bin/tool x", &["~/bin/tool x", "tool x"]),
        ("../../bin/rm x", &["../../bin/rm x", "rm x"]),
        // A program of the project keeps its spelling only...
        ("./gradlew build", &["./gradlew build"]),
        ("scripts/check.sh --all", &["scripts/check.sh --all"]),
        // ...unless the line changes folders first.
        ("cd /bin && ./rm x", &["cd /bin", "./rm x", "rm x"]),
        (
            "env -C /bin ./rm x",
            &["env -C /bin ./rm x", "./rm x", "rm x"],
        ),
        // A folder is no program.
        ("/bin/ x", &["/bin/ x"]),
    ]);
}
