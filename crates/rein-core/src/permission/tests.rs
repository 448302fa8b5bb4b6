use super::*;

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
        let err = bad.parse::<Rule>().unwrap_err();
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
    let err = "yolo".parse::<PermissionMode>().unwrap_err();
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
fn protected_paths_are_refused_for_writes_unless_a_precise_rule_allows_them() {
    let p = perms(&["edit_file", "write_file"], &[], &[]);
    for rel in [
        ".git/config",
        ".git/hooks/pre-commit",
        ".rein/settings.json",
        ".env",
        "config/.env.production",
        "certs/server.pem",
        "keys/id_ed25519",
        "keys/id_rsa.pub",
    ] {
        let v = decide(&p, PermissionMode::Bypass, "write_file", &edit(rel));
        assert!(is_deny(&v), "{rel}: {v:?}");
    }
    // Ordinary files whose names only look like git's are not protected.
    for rel in [
        "src/git.rs",
        ".github/workflows/ci.yml",
        ".gitignore",
        "docs/.git-notes.md",
    ] {
        let v = decide(&p, PermissionMode::Auto, "write_file", &edit(rel));
        assert!(is_allow(&v), "{rel}: {v:?}");
    }
    // Not credentials: an ordinary source file whose name starts with id_.
    assert!(is_allow(&decide(
        &p,
        PermissionMode::Auto,
        "write_file",
        &edit("src/id_map.rs")
    )));
    let p = perms(&["write_file(**/.env.example)"], &[], &[]);
    assert!(is_allow(&decide(
        &p,
        PermissionMode::Auto,
        "write_file",
        &edit(".env.example")
    )));
}

#[test]
fn git_metadata_is_protected_at_any_depth_and_in_any_spelling() {
    let p = perms(&["write_file"], &[], &[]);
    for rel in [
        "sub/.git/config",
        "vendor/x/.git/hooks/post-checkout",
        ".git/modules/m/config",
        ".git/commondir",
        // A gitlink file (`gitdir: ...`), at the top and in a submodule.
        ".git",
        "sub/.git",
        // Case-insensitive filesystems treat these as `.git`.
        "sub/.GIT/config",
        ".Git/hooks/pre-commit",
        ".REIN/settings.json",
        // Other spellings of the same paths.
        "./a/../b/.git/config",
        "src/../.git/config",
        "a/./.git/info/exclude",
    ] {
        let v = decide(&p, PermissionMode::Bypass, "write_file", &edit(rel));
        assert!(is_deny(&v), "{rel}: {v:?}");
        let Verdict::Deny { why } = v else {
            unreachable!()
        };
        assert!(why.contains("is protected"), "{rel}: {why}");
    }
    assert_eq!(
        protected_write(Path::new("/work/proj/x/../.git/config"), &ws()),
        Some("git's internals change only through git itself")
    );
    // Outside the workspace nothing is "protected": that is refused
    // elsewhere, as outside.
    assert_eq!(
        protected_write(Path::new("/work/other/.git/config"), &ws()),
        None
    );
    // A precise rule still allows a nested repository's file.
    let p = perms(&["write_file(sub/.git/info/exclude)"], &[], &[]);
    assert!(is_allow(&decide(
        &p,
        PermissionMode::Auto,
        "write_file",
        &edit("sub/.git/info/exclude")
    )));
}

#[test]
fn writes_inside_the_state_folder_are_refused_even_with_a_rule() {
    let mut p = perms(&["write_file(**)", "write_file"], &[], &[]);
    p.state_dir = Some(ws().join("rein-home"));
    for rel in [
        "rein-home/settings.json",
        "rein-home/sessions/s/outputs/x",
        "x/../rein-home/a",
    ] {
        let v = decide(&p, PermissionMode::Bypass, "write_file", &edit(rel));
        let Verdict::Deny { why } = &v else {
            panic!("{rel}: {v:?}")
        };
        assert!(why.contains("REIN_HOME"), "{rel}: {why}");
    }
    assert!(is_allow(&decide(
        &p,
        PermissionMode::Auto,
        "write_file",
        &edit("rein-home-notes.md")
    )));
    // Reads are not concerned.
    let a = Assessment {
        reads: vec![ws().join("rein-home/settings.json")],
        ..Default::default()
    };
    assert!(is_allow(&decide(&p, PermissionMode::Auto, "read_file", &a)));
}

#[test]
fn secret_folders_in_home_are_never_read_even_in_bypass() {
    let p = perms(&["read_file"], &[], &[]);
    let a = Assessment {
        subjects: vec!["/home/u/.ssh/id_rsa".into()],
        kind: SubjectKind::Path,
        reads: vec![PathBuf::from("/home/u/.ssh/id_rsa")],
        ..Default::default()
    };
    assert!(is_deny(&decide(
        &p,
        PermissionMode::Bypass,
        "read_file",
        &a
    )));
    let a = Assessment {
        reads: vec![PathBuf::from("/home/u/.config/gcloud/credentials.db")],
        ..Default::default()
    };
    assert!(is_deny(&decide(&p, PermissionMode::Auto, "read_file", &a)));
}

#[test]
fn token_stores_of_git_forges_and_registries_are_never_read_even_in_bypass() {
    let p = perms(&["read_file"], &[], &[]);
    for secret in [
        "/home/u/.git-credentials",
        "/home/u/.config/gh/hosts.yml",
        "/home/u/.docker/config.json",
        "/home/u/.npmrc",
        "/home/u/.pypirc",
        "/home/u/.cargo/credentials.toml",
        "/home/u/.cargo/credentials",
        "/home/u/.config/glab-cli/config.yml",
        "/home/u/.terraform.d/credentials.tfrc.json",
    ] {
        let a = Assessment {
            reads: vec![PathBuf::from(secret)],
            ..Default::default()
        };
        assert!(
            is_deny(&decide(&p, PermissionMode::Bypass, "read_file", &a)),
            "{secret}"
        );
    }
    // Only those files: their neighbours are ordinary files.
    for fine in ["/home/u/.docker/daemon.json", "/home/u/.cargo/config.toml"] {
        let a = Assessment {
            reads: vec![PathBuf::from(fine)],
            ..Default::default()
        };
        assert!(
            is_allow(&decide(&p, PermissionMode::Plan, "read_file", &a)),
            "{fine}"
        );
    }
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
    p.network = true;
    assert!(!p.sandbox(PermissionMode::Plan).network);
    assert!(p.sandbox(PermissionMode::Default).network);
    assert!(p.sandbox(PermissionMode::Auto).network);
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
        assert!(
            is_ask(&exec(&server, m, "mcp__github__delete_repo", &destructive)),
            "{m}"
        );
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

#[test]
fn a_sub_agents_worktree_in_the_state_folder_is_writable_only_as_its_own_workspace() {
    let home = PathBuf::from("/home/u/.rein");
    let mut p = perms(&["write_file"], &[], &[]);
    p.state_dir = Some(home.clone());
    let tree = home.join("worktrees/0123abcd/agent-1-99");
    let write = |path: PathBuf| Assessment {
        writes: vec![path],
        ..Default::default()
    };
    let mode = PermissionMode::Bypass;
    let in_tree = write(tree.join("src/lib.rs"));
    assert!(is_allow(&p.decide(
        mode,
        "write_file",
        ToolAccess::Write,
        &in_tree,
        &[],
        &tree
    )));
    // Another agent's worktree, the folder above, the rest of the state:
    // refused, even from inside a worktree.
    for other in [
        home.join("worktrees/0123abcd/agent-2-99/x"),
        home.join("worktrees/0123abcd/x"),
        home.join("settings.json"),
    ] {
        let v = p.decide(
            mode,
            "write_file",
            ToolAccess::Write,
            &write(other.clone()),
            &[],
            &tree,
        );
        assert!(is_deny(&v), "{other:?}: {v:?}");
    }
    // The state folder as a workspace is not a worktree.
    let v = p.decide(
        mode,
        "write_file",
        ToolAccess::Write,
        &write(home.join("a")),
        &[],
        &home,
    );
    assert!(is_deny(&v), "{v:?}");
    // Nor is the worktrees folder itself.
    let top = home.join("worktrees/0123abcd");
    let v = p.decide(
        mode,
        "write_file",
        ToolAccess::Write,
        &write(top.join("a")),
        &[],
        &top,
    );
    assert!(is_deny(&v), "{v:?}");
}

/// A file a hook or an approved MCP server runs is written by no tool, in
/// any mode, whatever the rules say; commands see it read-only.
#[test]
fn files_that_hooks_and_servers_run_are_never_written_by_tools() {
    let mut p = perms(&["edit_file(srv.py)", "write_file"], &[], &[]);
    p.run_files = vec![ws().join("srv.py")];
    for mode in [PermissionMode::Auto, PermissionMode::Bypass] {
        let v = decide(&p, mode, "edit_file", &edit("./srv.py"));
        let Verdict::Deny { why } = v else {
            panic!("{v:?}")
        };
        assert!(why.contains("srv.py is run on the host by a hook"), "{why}");
        assert!(matches!(
            decide(&p, mode, "write_file", &edit("x/../srv.py")),
            Verdict::Deny { .. }
        ));
    }
    assert_eq!(
        decide(&p, PermissionMode::Auto, "write_file", &edit("srv2.py")),
        Verdict::Allow
    );
    let policy = p.sandbox(PermissionMode::Auto);
    assert!(policy.read_only.contains(&ws().join("srv.py")));
}
