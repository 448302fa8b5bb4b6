use super::super::*;

fn p(cmd: &str) -> ParsedCommand {
    parse(cmd).unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
}

fn texts(cmd: &str) -> Vec<String> {
    p(cmd).commands.iter().map(SimpleCommand::text).collect()
}

fn argv(cmd: &str) -> Vec<String> {
    p(cmd).commands[0].argv.clone()
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

#[test]
fn quote_removal_joins_adjacent_pieces() {
    assert_eq!(argv(r#"git "sta"tus"#), s(&["git", "status"]));
    assert_eq!(
        argv(r#"echo 'a b' "c d" e\ f"#),
        s(&["echo", "a b", "c d", "e f"])
    );
    assert_eq!(argv(r#"echo 'a'"b"c\d"#), s(&["echo", "abcd"]));
    assert_eq!(
        argv(r#"echo "a\"b" "x\y" "\$HOME" '\n'"#),
        s(&["echo", "a\"b", "x\\y", "$HOME", "\\n"])
    );
    assert_eq!(
        argv(r"echo $'a\tb\x41\n' $'it\'s'"),
        s(&["echo", "a\tbA\n", "it's"])
    );
    assert_eq!(argv("echo one \\\n two"), s(&["echo", "one", "two"]));
    assert_eq!(p(r#"g"it" st'at'us"#).commands[0].text(), "git status");
    assert!(!p(r#"git "sta"tus"#).commands[0].dynamic);
}

#[test]
fn lists_and_pipelines() {
    let parsed = p("a && b || c; d & e | f");
    assert_eq!(
        texts("a && b || c; d & e | f"),
        s(&["a", "b", "c", "d", "e", "f"])
    );
    assert_eq!(
        parsed.pipelines,
        vec![vec![0], vec![1], vec![2], vec![3], vec![4, 5]]
    );
    assert!(parsed.meta[3].background);
    assert!(!parsed.meta[4].background);
    assert!(parsed.meta[4].piped && parsed.meta[5].piped && !parsed.meta[0].piped);
    assert_eq!(p("cat f | grep x | wc -l").pipelines, vec![vec![0, 1, 2]]);
    assert!(!p("ls").opaque);
}

#[test]
fn subshells_and_brace_groups() {
    let parsed = p("(cd x && ls) | { grep y; sort; }");
    assert_eq!(
        texts("(cd x && ls) | { grep y; sort; }"),
        s(&["cd x", "ls", "grep y", "sort"])
    );
    assert!(parsed.pipelines.contains(&vec![0, 2]));
    assert_eq!(parsed.stages.last().unwrap(), &vec![0..2, 2..4]);
}

#[test]
fn command_substitutions_everywhere() {
    let parsed = p("echo $(date) `whoami`");
    assert_eq!(
        texts("echo $(date) `whoami`"),
        s(&["echo $(date) `whoami`", "date", "whoami"])
    );
    assert!(parsed.commands[0].dynamic);
    assert_eq!(parsed.meta[1].parent, Some(0));
    assert_eq!(
        texts("echo $(a $(b `c`))"),
        s(&["echo $(a $(b `c`))", "a $(b `c`)", "b `c`", "c"])
    );
    assert_eq!(
        texts(r#"echo "x $(id -u) y""#),
        s(&["echo x $(id -u) y", "id -u"])
    );
    assert_eq!(texts(r#"echo "$(echo "$(id)")""#)[2], "id");
    assert_eq!(texts("echo ${X:-$(pwd)}"), s(&["echo ${X:-$(pwd)}", "pwd"]));
    assert_eq!(texts("echo $(( $(nproc) + 1 ))")[1], "nproc");
    assert_eq!(
        texts("[[ -n $(git status) ]] && ls"),
        s(&["git status", "ls"])
    );
}

#[test]
fn substitutions_in_assignments() {
    let parsed = p("X=$(curl -s u) Y='a b' make all");
    assert_eq!(parsed.commands[0].argv, s(&["make", "all"]));
    assert_eq!(
        parsed.commands[0].assignments,
        s(&["X=$(curl -s u)", "Y=a b"])
    );
    assert!(!parsed.commands[0].dynamic);
    assert_eq!(parsed.commands[1].text(), "curl -s u");
    let alone = p("OUT=\"$(rm -rf /)\"");
    assert!(alone.commands[0].argv.is_empty());
    assert_eq!(alone.commands[0].text(), "");
    assert_eq!(alone.commands[1].argv, s(&["rm", "-rf", "/"]));
    assert_eq!(p("A+=(x $(y))").commands[1].text(), "y");
}

#[test]
fn process_substitutions() {
    let parsed = p("diff <(ls a) <(ls b) > >(tee log)");
    assert_eq!(parsed.commands[0].argv, s(&["diff", "<(ls a)", "<(ls b)"]));
    assert!(parsed.commands[0].dynamic);
    assert_eq!(
        parsed.commands[0].redirects,
        vec![Redirect {
            op: RedirectOp::Write,
            target: ">(tee log)".into()
        }]
    );
    let rest: Vec<String> = parsed.commands[1..]
        .iter()
        .map(SimpleCommand::text)
        .collect();
    assert_eq!(rest, s(&["ls a", "ls b", "tee log"]));
    assert!(parsed.meta[1..].iter().all(|m| m.parent == Some(0)));
}

#[test]
fn here_documents_and_strings() {
    let parsed = p("cat <<EOF > out.txt\nhello $(whoami)\nEOF\n");
    let c = &parsed.commands[0];
    assert_eq!(
        c.redirects[0],
        Redirect {
            op: RedirectOp::HereDoc,
            target: "hello $(whoami)\n".into()
        }
    );
    assert_eq!(
        c.redirects[1],
        Redirect {
            op: RedirectOp::Write,
            target: "out.txt".into()
        }
    );
    assert!(!c.dynamic, "a here-document body is data, not a word");
    assert_eq!(parsed.commands[1].text(), "whoami");
    let quoted = p("cat <<'EOF'\n$(rm -rf /) \"q\"\nEOF\n");
    assert_eq!(quoted.commands.len(), 1);
    assert_eq!(
        quoted.commands[0].redirects[0].target,
        "$(rm -rf /) \"q\"\n"
    );
    let hs = p("grep x <<< \"$(ls)\"");
    assert_eq!(hs.commands[0].redirects[0].op, RedirectOp::HereString);
    assert_eq!(hs.commands[1].text(), "ls");
}

#[test]
fn compound_commands() {
    assert_eq!(
        texts("if test -f a; then rm a; elif true; then :; else echo no; fi"),
        s(&["test -f a", "rm a", "true", ":", "echo no"])
    );
    assert_eq!(
        texts("for f in $(ls); do wc -l \"$f\"; done"),
        s(&["ls", "wc -l $f"])
    );
    assert_eq!(
        texts("while read l; do echo \"$l\"; done < in"),
        s(&["read l", "echo $l"])
    );
    assert_eq!(
        p("while read l; do echo; done < in").commands[1].redirects[0].target,
        "in"
    );
    assert_eq!(
        texts("until false; do sleep 1; done"),
        s(&["false", "sleep 1"])
    );
    assert_eq!(
        texts("case $x in a) rm -rf a;; *) ls;; esac"),
        s(&["rm -rf a", "ls"])
    );
    assert_eq!(
        texts("for ((i=0; i<3; i++)); do echo $i; done"),
        s(&["echo $i"])
    );
    assert_eq!(texts("{ echo a; echo b; } > out")[1], "echo b");
    assert_eq!(
        p("{ echo a; echo b; } > out").commands[1].redirects[0].target,
        "out"
    );
}

#[test]
fn spaced_double_parens_are_subshells_not_arithmetic() {
    assert_eq!(texts("( ( rm -rf / ) )"), s(&["rm -rf /"]));
    assert_eq!(texts("((rm -rf /) )"), s(&["rm -rf /"]));
    assert_eq!(texts("echo $( (id) )"), s(&["echo $( (id) )", "id"]));
    assert!(texts("((i++))").is_empty());
    assert_eq!(texts("(( x = $(nproc) ))"), s(&["nproc"]));
}

#[test]
fn functions_are_opaque_and_their_bodies_parsed() {
    let parsed = p("f() { rm -rf build; }; f");
    assert!(parsed.opaque);
    assert_eq!(texts("f() { rm -rf build; }; f"), s(&["rm -rf build", "f"]));
    assert_eq!(
        parsed.functions,
        vec![FunctionDef {
            name: "f".into(),
            body: 0..1
        }]
    );
    let bomb = p(":(){ :|:& };:");
    assert_eq!(bomb.functions[0].name, ":");
    assert!(bomb.meta[0].piped && bomb.meta[0].background);
    assert_eq!(p("function g { ls; }").functions[0].name, "g");
}

#[test]
fn opaque_constructs() {
    for cmd in [
        "eval \"$X\"",
        "source ./env.sh",
        ". ./env.sh",
        "exec ls",
        "trap 'rm x' EXIT",
        "$CMD arg",
        "sudo eval x",
        "bash -c \"$S\"",
    ] {
        assert!(p(cmd).opaque, "{cmd}");
    }
    for cmd in [
        "ls",
        "bash -c 'ls'",
        "echo eval",
        "command -v ls",
        "cargo test",
    ] {
        assert!(!p(cmd).opaque, "{cmd}");
    }
}

#[test]
fn redirects() {
    let c = &p("cmd > out 2>&1 >> app < in <> rw 3<&0 >&- &> all &>> both >| clob").commands[0];
    let got: Vec<(RedirectOp, &str)> = c
        .redirects
        .iter()
        .map(|r| (r.op, r.target.as_str()))
        .collect();
    use RedirectOp::*;
    assert_eq!(
        got,
        vec![
            (Write, "out"),
            (DupFd, "1"),
            (Append, "app"),
            (Read, "in"),
            (ReadWrite, "rw"),
            (DupFd, "0"),
            (DupFd, "-"),
            (Write, "all"),
            (Append, "both"),
            (Write, "clob")
        ]
    );
    assert_eq!(c.argv, s(&["cmd"]));
    let named = &p("echo x >& log.txt").commands[0];
    assert_eq!(
        named.redirects[0],
        Redirect {
            op: Write,
            target: "log.txt".into()
        }
    );
    assert!(p("echo > \"$OUT\"").commands[0].dynamic);
    assert!(RedirectOp::Append.writes() && !RedirectOp::DupFd.writes());
}

#[test]
fn assignments_prefix() {
    let c = &p("FOO=1 BAR=\"a b\" cargo test --lib").commands[0];
    assert_eq!(c.assignments, s(&["FOO=1", "BAR=a b"]));
    assert_eq!(c.text(), "cargo test --lib");
    assert_eq!(p("env FOO=1 ls").commands[0].text(), "env FOO=1 ls");
}

#[test]
fn dynamic_words() {
    let d = |cmd: &str| p(cmd).commands[0].dynamic;
    assert!(d("rm -rf $X"));
    assert!(d("rm -rf \"$(cat list)\""));
    assert!(d("ls *.rs"));
    assert!(d("ls {a,b}"));
    assert!(d("ls ~root"));
    assert!(!d("ls '*.rs' \"$HOME/x\" ~/y ${HOME}"));
    assert!(!d("find . -exec rm {} ;"));
    assert_eq!(p("ls $HOME/x").commands[0].argv, s(&["ls", "$HOME/x"]));
    assert_eq!(p("ls *.rs").meta[0].argv_dyn, vec![Dyn::Static, Dyn::Glob]);
    assert_eq!(
        p("ls a$X").meta[0].argv_dyn,
        vec![Dyn::Static, Dyn::Runtime]
    );
}

#[test]
fn comments_and_empty_input() {
    assert_eq!(texts("ls # rm -rf /"), s(&["ls"]));
    assert!(p("").commands.is_empty());
    assert!(p("  \n ").commands.is_empty());
}

#[test]
fn syntax_errors() {
    let err = |cmd: &str| parse(cmd).expect_err(cmd);
    assert_eq!(err("echo \"abc").to_string(), "unterminated quote");
    assert_eq!(err("echo 'abc").to_string(), "unterminated quote");
    for cmd in [
        "(echo hi",
        "echo hi)",
        "echo $(ls",
        "if true; then ls",
        "{ ls",
        "ls |",
        "echo `ls",
        "cat <<EOF\nx",
    ] {
        let e = err(cmd);
        assert!(matches!(e, ShellParseError::Syntax(_)), "{cmd}: {e:?}");
        assert!(!e.to_string().contains('\n'), "{cmd}: {e}");
    }
}

#[test]
fn deep_nesting_is_refused_without_blowing_the_stack() {
    let nested =
        |open: &str, close: &str, n: usize| format!("echo {}x{}", open.repeat(n), close.repeat(n));
    // Within the bound.
    assert_eq!(p(&nested("$(", ")", 20)).commands.len(), 21);
    // Past our own bound.
    assert_eq!(
        parse(&nested("$(", ")", 200)),
        Err(ShellParseError::TooDeep)
    );
    assert_eq!(
        parse(&format!("{}ls{}", "( ".repeat(200), " )".repeat(200))),
        Err(ShellParseError::TooDeep)
    );
    assert_eq!(
        parse(&format!("{}ls;{}", "{ ".repeat(300), " }".repeat(300))),
        Err(ShellParseError::TooDeep)
    );
    assert_eq!(
        parse(&format!(
            "{}ls;{}",
            "if true; then ".repeat(300),
            " fi;".repeat(300)
        )),
        Err(ShellParseError::TooDeep)
    );
    // Past what brush could parse on its stack: refused before parsing.
    assert_eq!(
        parse(&nested("$(", ")", 20_000)),
        Err(ShellParseError::TooLarge)
    );
    assert_eq!(
        parse(&format!("[[ {}x ]]", "! ".repeat(20_000))),
        Err(ShellParseError::TooLarge)
    );
    assert!(parse(&"x".repeat(2 << 20)).is_err());
    // Deep but within brush's stack: parsed, then refused by our walk.
    assert_eq!(
        parse(&nested("\"$(", ")\"", 2_000)),
        Err(ShellParseError::TooDeep)
    );
}

#[test]
fn long_flat_input_parses() {
    let cmd = "ls; ".repeat(5_000);
    assert_eq!(p(&cmd).commands.len(), 5_000);
    let pipe = vec!["cat"; 2_000].join(" | ");
    assert_eq!(p(&pipe).pipelines[0].len(), 2_000);
}
