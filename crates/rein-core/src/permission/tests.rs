//! The permission decision: modes, rules and risk, for every kind of call.

use std::path::PathBuf;

use super::*;
use crate::tool::ToolAccess;

mod paths;

fn ws() -> PathBuf {
    PathBuf::from("/work/proj")
}

fn perms(allow: &[&str], ask: &[&str], deny: &[&str]) -> Permissions {
    let parse = |v: &[&str]| v.iter().map(|r| r.parse::<Rule>().unwrap()).collect();
    Permissions {
        mode: PermissionMode::Default,
        rules: Rules {
            allow: parse(allow),
            ask: parse(ask),
            deny: parse(deny),
        },
        home: Some(PathBuf::from("/home/u")),
        ..Default::default()
    }
}

fn shell(cmds: &[&str]) -> Assessment {
    Assessment {
        subjects: cmds.iter().map(|s| s.to_string()).collect(),
        kind: SubjectKind::Command,
        summary: cmds.join(" && "),
        in_sandbox: true,
        ..Default::default()
    }
}

fn edit(rel: &str) -> Assessment {
    Assessment {
        subjects: vec![rel.to_string()],
        kind: SubjectKind::Path,
        writes: vec![ws().join(rel)],
        ..Default::default()
    }
}

fn decide(p: &Permissions, mode: PermissionMode, tool: &str, a: &Assessment) -> Verdict {
    let access = match tool {
        "bash" => ToolAccess::Execute,
        "read_file" | "grep" => ToolAccess::Read,
        _ => ToolAccess::Write,
    };
    p.decide(mode, tool, access, a, &[], &ws())
}

fn is_allow(v: &Verdict) -> bool {
    matches!(v, Verdict::Allow)
}
fn is_ask(v: &Verdict) -> bool {
    matches!(v, Verdict::Ask { .. })
}
fn is_deny(v: &Verdict) -> bool {
    matches!(v, Verdict::Deny { .. })
}

#[test]
fn rules_parse_bare_and_patterned_forms_and_reject_malformed_ones() {
    assert_eq!("bash".parse::<Rule>().unwrap(), Rule::new("bash", None));
    assert_eq!(
        "bash(git status*)".parse::<Rule>().unwrap(),
        Rule::new("bash", Some("git status*".into()))
    );
    // A pattern may itself contain parentheses.
    assert_eq!(
        "bash(echo (a))".parse::<Rule>().unwrap(),
        Rule::new("bash", Some("echo (a)".into()))
    );
    for bad in ["bash(git", "bash()", "(x)", "", "ba sh", "bash(x) y"] {
        let err = bad.parse::<Rule>().unwrap_err().to_string();
        assert!(err.starts_with("bad permission rule"), "{bad}: {err}");
    }
    assert_eq!(
        "edit_file(src/**)".parse::<Rule>().unwrap().to_string(),
        "edit_file(src/**)"
    );
}

#[test]
fn modes_parse_by_name_and_unknown_modes_are_rejected() {
    assert_eq!(
        "accept-edits".parse::<PermissionMode>().unwrap(),
        PermissionMode::AcceptEdits
    );
    assert_eq!(
        "acceptEdits".parse::<PermissionMode>().unwrap(),
        PermissionMode::AcceptEdits
    );
    assert_eq!(
        "AUTO".parse::<PermissionMode>().unwrap(),
        PermissionMode::Auto
    );
    let err = "yolo".parse::<PermissionMode>().unwrap_err().to_string();
    assert!(err.contains("unknown permission mode `yolo`"), "{err}");
    assert_eq!(PermissionMode::Default.cycle(), PermissionMode::AcceptEdits);
    assert_eq!(PermissionMode::Auto.cycle(), PermissionMode::Default);
}

#[test]
fn default_mode_reads_run_and_writes_and_commands_ask() {
    let p = perms(&[], &[], &[]);
    let read = Assessment {
        subjects: vec!["src/lib.rs".into()],
        kind: SubjectKind::Path,
        reads: vec![ws().join("src/lib.rs")],
        ..Default::default()
    };
    assert!(is_allow(&decide(
        &p,
        PermissionMode::Default,
        "read_file",
        &read
    )));
    let v = decide(
        &p,
        PermissionMode::Default,
        "edit_file",
        &edit("src/lib.rs"),
    );
    match v {
        Verdict::Ask {
            suggested_rules,
            suggested_mode,
            ..
        } => {
            assert_eq!(suggested_mode, Some(PermissionMode::AcceptEdits));
            assert_eq!(suggested_rules[0].to_string(), "edit_file(src/lib.rs)");
        }
        other => panic!("{other:?}"),
    }
    assert!(is_ask(&decide(
        &p,
        PermissionMode::Default,
        "bash",
        &shell(&["ls"])
    )));
}

#[test]
fn accept_edits_runs_edits_but_asks_for_commands() {
    let p = perms(&[], &[], &[]);
    let m = PermissionMode::AcceptEdits;
    assert!(is_allow(&decide(&p, m, "edit_file", &edit("src/lib.rs"))));
    assert!(is_ask(&decide(&p, m, "bash", &shell(&["cargo test"]))));
}

#[test]
fn compound_commands_need_every_part_allowed() {
    let p = perms(&["bash(git status*)", "bash(git diff*)"], &[], &[]);
    let m = PermissionMode::Default;
    assert!(is_allow(&decide(
        &p,
        m,
        "bash",
        &shell(&["git status", "git diff --stat"])
    )));
    let v = decide(&p, m, "bash", &shell(&["git status", "curl -s x.sh", "sh"]));
    match v {
        Verdict::Ask {
            suggested_rules, ..
        } => {
            let got: Vec<String> = suggested_rules.iter().map(|r| r.to_string()).collect();
            assert_eq!(got, vec!["bash(curl -s x.sh)", "bash(sh)"]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn deny_beats_ask_beats_allow() {
    let p = perms(&["bash"], &["bash(npm publish*)"], &["bash(rm *)"]);
    let m = PermissionMode::Auto;
    assert!(is_deny(&decide(&p, m, "bash", &shell(&["ls", "rm x"]))));
    assert!(is_ask(&decide(
        &p,
        m,
        "bash",
        &shell(&["npm publish --dry-run"])
    )));
    assert!(is_allow(&decide(&p, m, "bash", &shell(&["ls"]))));
    // Deny wins even in bypass mode.
    assert!(is_deny(&decide(
        &p,
        PermissionMode::Bypass,
        "bash",
        &shell(&["rm x"])
    )));
    // A bare deny denies every call of the tool.
    let p = perms(&["bash(ls)"], &[], &["bash"]);
    assert!(is_deny(&decide(&p, m, "bash", &shell(&["ls"]))));
}

#[test]
fn high_risk_asks_in_every_mode_but_bypass_unless_a_precise_rule_allows_it() {
    let mut a = shell(&["git push --force"]);
    a.risk = Risk::High;
    a.reasons = vec!["force push rewrites the remote's history".into()];
    let p = perms(&["bash"], &[], &[]);
    for m in [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Auto,
    ] {
        match decide(&p, m, "bash", &a) {
            Verdict::Ask { why, .. } => assert!(why.contains("force push"), "{why}"),
            other => panic!("{m}: {other:?}"),
        }
    }
    assert!(is_allow(&decide(&p, PermissionMode::Bypass, "bash", &a)));
    let precise = perms(&["bash(git push --force)"], &[], &[]);
    assert!(is_allow(&decide(
        &precise,
        PermissionMode::Default,
        "bash",
        &a
    )));
}

#[test]
fn an_opaque_command_is_covered_only_by_a_bare_rule() {
    let mut a = shell(&["echo 'unterminated"]);
    a.opaque = true;
    let p = perms(&["bash(echo*)"], &[], &[]);
    assert!(is_ask(&decide(&p, PermissionMode::Default, "bash", &a)));
    let p = perms(&["bash"], &[], &[]);
    assert!(is_allow(&decide(&p, PermissionMode::Default, "bash", &a)));
    // Deny rules still see its raw text.
    let p = perms(&["bash"], &[], &["bash(echo*)"]);
    assert!(is_deny(&decide(&p, PermissionMode::Default, "bash", &a)));
}

#[test]
fn plan_mode_refuses_writes_and_needs_a_read_only_sandbox_for_commands() {
    let p = perms(&["write_file"], &[], &[]);
    let m = PermissionMode::Plan;
    assert!(is_deny(&decide(&p, m, "write_file", &edit("a.txt"))));
    assert!(is_allow(&decide(&p, m, "bash", &shell(&["ls"]))));
    let mut a = shell(&["ls"]);
    a.unsandboxed = true;
    assert!(is_deny(&decide(&p, m, "bash", &a)));
}

/// A repository that may only tighten can set plan mode: that must never
/// run what default mode would ask about.
#[test]
fn plan_mode_asks_for_a_tool_that_is_not_read_only_and_not_sandboxed_as_default_mode_does() {
    let p = perms(&[], &[], &[]);
    let mcp = Assessment::default();
    let call = |mode| {
        p.decide(
            mode,
            "mcp__srv__send",
            ToolAccess::Execute,
            &mcp,
            &[],
            &ws(),
        )
    };
    assert!(is_ask(&call(PermissionMode::Default)));
    assert!(is_ask(&call(PermissionMode::Plan)));
    let rule = perms(&["mcp__srv__send"], &[], &[]);
    let allowed = rule.decide(
        PermissionMode::Plan,
        "mcp__srv__send",
        ToolAccess::Execute,
        &mcp,
        &[],
        &ws(),
    );
    assert!(is_allow(&allowed));
}

#[test]
fn plan_mode_commands_never_get_the_network() {
    let mut p = perms(&[], &[], &[]);
    p.network = NetworkAccess::On;
    assert!(!p.sandbox(PermissionMode::Plan).network.any());
    assert!(p.sandbox(PermissionMode::Default).network.any());
    assert!(p.sandbox(PermissionMode::Auto).network.any());
}

#[test]
fn without_a_sandbox_every_command_asks_even_in_auto_mode() {
    let p = perms(&["bash"], &[], &[]);
    let mut a = shell(&["ls"]);
    a.unsandboxed = true;
    assert!(is_ask(&decide(&p, PermissionMode::Auto, "bash", &a)));
    assert!(is_allow(&decide(&p, PermissionMode::Bypass, "bash", &a)));
}

#[test]
fn session_grants_allow_what_they_name() {
    let p = perms(&[], &[], &[]);
    let granted = vec!["bash(cargo test*)".parse::<Rule>().unwrap()];
    let v = p.decide(
        PermissionMode::Default,
        "bash",
        ToolAccess::Execute,
        &shell(&["cargo test --all"]),
        &granted,
        &ws(),
    );
    assert!(is_allow(&v));
}

/// MCP tools: `mcp__server__*` covers every tool of that server and no
/// other; a destructive one (high risk, nothing to match) asks in every
/// mode but bypass unless a rule spells its whole name.
#[test]
fn server_wide_rules_and_exact_names_for_tools_with_nothing_to_match() {
    let plain = Assessment::default();
    let exec = |p: &Permissions, m, tool, a: &Assessment| {
        p.decide(m, tool, ToolAccess::Execute, a, &[], &ws())
    };
    let server = perms(&["mcp__github__*"], &[], &[]);
    assert!(is_allow(&exec(
        &server,
        PermissionMode::Default,
        "mcp__github__create_issue",
        &plain
    )));
    assert!(is_ask(&exec(
        &server,
        PermissionMode::Default,
        "mcp__gitlab__create_issue",
        &plain
    )));
    let denied = perms(&["mcp__github__*"], &[], &["mcp__github__delete_repo"]);
    assert!(is_deny(&exec(
        &denied,
        PermissionMode::Auto,
        "mcp__github__delete_repo",
        &plain
    )));

    let destructive = Assessment {
        risk: Risk::High,
        reasons: vec!["the MCP server marks this tool destructive".into()],
        ..Default::default()
    };
    for m in [PermissionMode::Default, PermissionMode::Auto] {
        let asked = exec(&server, m, "mcp__github__delete_repo", &destructive);
        // What it suggests is the rule that allows it (applied below).
        let Verdict::Ask {
            suggested_rules, ..
        } = asked
        else {
            panic!("{m}: {asked:?}");
        };
        let got: Vec<String> = suggested_rules.iter().map(|r| r.to_string()).collect();
        assert_eq!(got, ["mcp__github__delete_repo"], "{m}");
    }
    let named = perms(&["mcp__github__delete_repo"], &[], &[]);
    assert!(is_allow(&exec(
        &named,
        PermissionMode::Default,
        "mcp__github__delete_repo",
        &destructive
    )));
    // A bare rule for bash is still no precise rule for a risky command.
    let mut risky = shell(&["rm -rf build"]);
    risky.risk = Risk::High;
    assert!(is_ask(&decide(
        &perms(&["bash"], &[], &[]),
        PermissionMode::Auto,
        "bash",
        &risky
    )));
}
