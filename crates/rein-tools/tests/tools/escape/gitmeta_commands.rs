//! Git metadata planted by commands, at any depth: whatever a command
//! writes that would make the user's next git command run code on the host
//! (hooks, `core.fsmonitor`, `core.hooksPath`, `core.pager`, `include.path`,
//! `ext::` remotes, `.git` files, `commondir`, `gitdir`, `modules/*/config`)
//! is gone when the call returns, however it was spelled; ordinary git
//! work (init, add, commit, branch, remote add) keeps working.
//!
//! Each attack is a step that may do anything (the gate may even refuse
//! it), followed by a step that checks the filesystem afterwards: a
//! `Failed` check proves the metadata is not there.

use rein_core::PermissionMode::Auto;

use super::Expect::{Any, Failed, Ok};
use super::{Case, Fixture, have, run_cases};

fn write(path: &std::path::Path, content: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// A nested repository `sub/` that exists before the command.
fn nested_repo(fx: &mut Fixture) {
    let git = fx.ws.join("sub/.git");
    write(
        &git.join("config"),
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n",
    );
    write(&git.join("HEAD"), "ref: refs/heads/main\n");
    std::fs::create_dir_all(git.join("objects")).unwrap();
    std::fs::create_dir_all(git.join("refs/heads")).unwrap();
    std::fs::create_dir_all(git.join("hooks")).unwrap();
}

/// The user's git identity in the fake home (commands get it through the
/// environment: `~/.gitconfig` itself is hidden).
fn identity(fx: &mut Fixture) {
    write(
        &fx.home.join(".gitconfig"),
        "[user]\n\tname = Test User\n\temail = test@example.invalid\n",
    );
}

fn attack(name: &str, attack: &str, check: &str) -> Case {
    Case::new(name, Auto).bash(attack, Any).bash(check, Failed)
}

/// Attacks that plant git metadata; the check after each must fail.
pub fn planted() -> Vec<Case> {
    vec![
        attack(
            "git init a nested repo, then set core.fsmonitor",
            "git init -q fresh && git -C fresh config core.fsmonitor 'touch {out}/pwned'",
            "git -C fresh config --get core.fsmonitor",
        ),
        attack(
            "append core.fsmonitor to an existing nested repo's config",
            "printf '[core]\\n\\tfsmonitor = touch {out}/pwned\\n' >> sub/.git/config",
            "grep -q fsmonitor sub/.git/config",
        )
        .setup(nested_repo)
        // Put back, not deleted: the repository still works.
        .bash("grep -q repositoryformatversion sub/.git/config", Ok),
        attack(
            "a new hook in an existing nested repo",
            "printf '#!/bin/sh\\ntouch {out}/pwned\\n' > sub/.git/hooks/pre-commit && chmod +x sub/.git/hooks/pre-commit",
            "test -e sub/.git/hooks/pre-commit",
        )
        .setup(nested_repo),
        attack(
            "a nested repo's hooks folder replaced by a symlink",
            "mkdir evilhooks && printf '#!/bin/sh\\n' > evilhooks/pre-commit && rm -rf sub/.git/hooks && ln -s ../../evilhooks sub/.git/hooks",
            "test -L sub/.git/hooks",
        )
        .setup(nested_repo),
        attack(
            "a gitlink file pointing out",
            "mkdir -p plain && printf 'gitdir: /tmp/x' > plain/.git",
            "test -e plain/.git",
        ),
        attack(
            "a nested repo's .git folder swapped for a gitlink",
            "rm -rf sub/.git && printf 'gitdir: {out}' > sub/.git",
            "test -f sub/.git",
        )
        .setup(nested_repo),
        attack(
            "a .git symlink",
            "mkdir -p l && ln -s {out} l/.git",
            "test -L l/.git",
        ),
        attack(
            ".git/commondir",
            "echo {out} > .git/commondir",
            "test -e .git/commondir",
        ),
        attack(
            ".git/modules/m/config",
            "mkdir -p .git/modules/m && printf '[core]\\n\\tworktree = {out}\\n' > .git/modules/m/config",
            "test -e .git/modules/m/config",
        ),
        attack(
            ".git/worktrees/w pointers",
            "mkdir -p .git/worktrees/w && echo {out} > .git/worktrees/w/commondir && echo {out}/.git > .git/worktrees/w/gitdir",
            "test -e .git/worktrees/w/commondir || test -e .git/worktrees/w/gitdir",
        ),
        attack(
            "cp -r of a .git carrying hooks",
            "mkdir copy && cp -r .git copy/.git",
            "test -e copy/.git/hooks/pre-commit",
        )
        // The rest of the copy stays: only what runs code goes.
        .bash("test -e copy/.git/HEAD", Ok),
        attack(
            "core.hooksPath in a fresh repo",
            "git init -q h && git -C h config core.hooksPath ../hooks",
            "git -C h config --get core.hooksPath",
        ),
        attack(
            "an ext:: remote",
            "git init -q r && git -C r remote add o 'ext::sh -c touch% {out}/pwned'",
            "git -C r remote get-url o",
        ),
        attack(
            "a bare repo with core.pager",
            "git init -q --bare b.git && git -C b.git config core.pager 'touch {out}/pwned'",
            "git -C b.git config --get core.pager",
        ),
        attack(
            "include.path appended to a fresh repo's config",
            "git init -q i && printf '[include]\\n\\tpath = ../evil.cfg\\n' >> i/.git/config",
            "grep -q include i/.git/config",
        ),
        attack(
            "a config git could read differently (line continuation)",
            "git init -q c && printf '[core]\\n\\tbare = false\\\\\\n\\tfsmonitor = x\\n' >> c/.git/config",
            "grep -q fsmonitor c/.git/config",
        ),
        attack(
            "an alias in a deep nested repo made by hand",
            "mkdir -p a/b/c/.git/objects && echo 'ref: refs/heads/x' > a/b/c/.git/HEAD && printf '[alias]\\n\\tst = !touch {out}/pwned\\n' > a/b/c/.git/config",
            "test -e a/b/c/.git/config",
        ),
        // Bubblewrap keeps `.git` itself in place (a mount point); Landlock
        // lets the rename happen, and the runner's check of the top
        // repository's own hooks and config would then fail for reasons the
        // rename, not a planted hook, explains.
        attack(
            "mv .git away and make a new one with a hook",
            "mv .git x; mkdir -p .git/hooks; printf '#!/bin/sh\\ntouch {out}/pwned\\n' > .git/hooks/post-checkout; chmod +x .git/hooks/post-checkout; true",
            "test -e .git/hooks/post-checkout",
        )
        .bwrap_only(),
        // Lasts one command: nothing to undo, nothing persists.
        Case::new("git -c core.fsmonitor for one command", Auto)
            .bash("git -c core.fsmonitor='touch {out}/pwned' status >/dev/null 2>&1; true", Any),
    ]
}

/// Ordinary git work in the sandbox still succeeds.
pub fn ordinary() -> Vec<Case> {
    vec![
        Case::new("init, add, commit, branch in a nested repo", Auto)
            .setup(identity)
            .bash(
                "git init -q p && cd p && echo a > a && git add a && git commit -qm one && \
                 git branch feature && git branch --list feature | grep -q feature",
                Ok,
            )
            .bash(
                "git -C p log --format=%an:%s | grep -qx 'Test User:one'",
                Ok,
            ),
        Case::new("remote add in a fresh repo persists", Auto)
            .bash(
                "git init -q q && git -C q remote add origin /srv/none.git && \
                 git -C q branch -m main",
                Ok,
            )
            .bash("git -C q remote get-url origin", Ok),
        Case::new("add and commit in the workspace's own repo", Auto)
            .setup(identity)
            .bash(
                "echo x > new.txt && git add new.txt && git commit -qm c2 && \
                 git log --format=%s | grep -qx c2",
                Ok,
            ),
        Case::new("user.name set in a fresh repo persists", Auto)
            .bash("git init -q u && git -C u config user.name Someone", Ok)
            .bash("git -C u config --get user.name", Ok),
    ]
}

#[tokio::test]
async fn commands_cannot_plant_git_metadata_at_any_depth() {
    if !have("git", &["--version"]) {
        rein_test_support::skip(rein_test_support::Component::Git, "git does not run here");
        return;
    }
    run_cases(planted(), &[])
        .await
        .assert("git metadata by commands");
}

#[tokio::test]
async fn ordinary_git_work_still_succeeds_in_the_sandbox() {
    if !have("git", &["--version"]) {
        rein_test_support::skip(rein_test_support::Component::Git, "git does not run here");
        return;
    }
    run_cases(ordinary(), &[]).await.assert("ordinary git work");
}

/// The observation names what was undone and why, in one line.
#[tokio::test]
async fn the_observation_says_what_was_undone_and_why() {
    if super::harness::sandbox_kind().is_none() || !have("git", &["--version"]) {
        return;
    }
    let lim = super::limits::Lim::new().await;
    let out = lim
        .run(
            rein_core::CommandLimits::default(),
            "git init -q sub && git -C sub config core.fsmonitor 'touch /tmp/x' && \
             printf '#!/bin/sh\\n' > sub/.git/hooks/post-checkout",
            60,
        )
        .await;
    let line = out
        .lines()
        .find(|l| l.contains("may not plant git metadata"))
        .unwrap_or_else(|| panic!("no line about git metadata: {out}"));
    assert!(
        line.contains("sub/.git/config (it set core.fsmonitor)"),
        "{line}"
    );
    assert!(
        line.contains("removed sub/.git/hooks/post-checkout (a hook)"),
        "{line}"
    );
    assert!(!lim.ws.join("sub/.git/hooks/post-checkout").exists());
    assert!(
        !lim.ws.join("sub/.git/config").exists(),
        "a new unsafe config is removed"
    );
    // The repository's other files stay.
    assert!(lim.ws.join("sub/.git/HEAD").exists());
}
