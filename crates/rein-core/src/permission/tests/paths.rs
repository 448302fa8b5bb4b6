//! Paths no rule opens: protected files, git metadata, rein's state
//! folder, credentials, and the files hooks and servers run.

use std::path::Path;

use super::*;

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
