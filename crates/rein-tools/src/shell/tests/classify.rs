use std::path::{Path, PathBuf};

use super::super::*;
use Risk::{High, Low};

/// A workspace with `target/`, `build/`, `src/main.rs`, a symlink `escape`
/// to a directory outside it and `disk` to a block device path.
struct Fixture {
    _ws: tempfile::TempDir,
    _out: tempfile::TempDir,
    ws: PathBuf,
    outside: PathBuf,
}

fn fixture() -> Fixture {
    let ws_dir = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(ws_dir.path()).unwrap();
    let outside = std::fs::canonicalize(out_dir.path()).unwrap();
    std::fs::create_dir_all(ws.join("target/debug")).unwrap();
    std::fs::create_dir_all(ws.join("build")).unwrap();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("src/main.rs"), "fn main() {}").unwrap();
    std::fs::create_dir_all(outside.join("sub")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("escape")).unwrap();
    std::os::unix::fs::symlink("/dev/sda", ws.join("disk")).unwrap();
    Fixture {
        _ws: ws_dir,
        _out: out_dir,
        ws,
        outside,
    }
}

fn danger_in(cmd: &str, ws: &Path, cwd: &Path) -> Danger {
    let parsed = parse(cmd).unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    classify(&parsed, ws, cwd)
}

fn table(cases: &[(&str, Risk)]) {
    let fx = fixture();
    for (cmd, want) in cases {
        let cmd = cmd.replace("OUTSIDE", &fx.outside.display().to_string());
        let got = danger_in(&cmd, &fx.ws, &fx.ws);
        assert_eq!(got.risk, *want, "{cmd}: {:?}", got.reasons);
        assert_eq!(
            got.reasons.is_empty(),
            *want == Low,
            "{cmd}: {:?}",
            got.reasons
        );
    }
}

#[test]
fn ordinary_dev_commands_are_low() {
    table(&[
        ("ls -la", Low),
        ("cat f | grep x", Low),
        ("cargo test", Low),
        ("git status && git diff", Low),
        ("rm -rf target", Low),
        ("echo hi > out.txt", Low),
        ("python3 -m pytest", Low),
        ("npm install", Low),
        ("for f in *.rs; do wc -l \"$f\"; done", Low),
        ("cat <<EOF > notes.txt\nhello $USER\nEOF\n", Low),
        ("mkdir -p build && cd build && cmake .. && make", Low),
        ("FOO=1 cargo build 2>&1 | tail -n 20", Low),
        ("ls > /dev/null 2>&1; echo done >/dev/stderr", Low),
        ("echo hi > /dev/tty; cat x >/dev/fd/2", Low),
    ]);
}

#[test]
fn recursive_deletes_every_spelling() {
    table(&[
        ("rm -rf /", High),
        ("rm -fr /", High),
        ("rm -Rf ~", High),
        ("rm -r -f ..", High),
        ("rm --recursive --force /etc", High),
        ("rm -rfv OUTSIDE", High),
        ("rm -R OUTSIDE/sub", High),
        ("rm -rf -- /", High),
        ("rm src -rf /", High),
        ("/bin/rm -rf /", High),
        ("\\rm -rf /", High),
        ("rm -rf \"$HOME\"", High),
        ("rm -rf ${HOME}/projects", High),
        ("rm -rf .", High),
        ("rm -rf ./", High),
        ("rm -rf ../", High),
        ("rm -rf $X", High),
        ("rm -rf \"$(cat list)\"", High),
        ("rm -rf {target,/etc}", High),
        ("rm --no-preserve-root -rf /", High),
        // inside the workspace
        ("rm -rf ./build", Low),
        ("rm -rf target/debug", Low),
        ("rm -rf target/*", Low),
        ("rm -rf *", Low),
        ("rm -rf src/../build", Low),
        ("rm -rf not-yet/there", Low),
        ("rm -- -rf", Low),
        ("rm -r build && rm -f out.txt", Low),
    ]);
}

#[test]
fn deletes_through_symlinks_and_after_cd() {
    table(&[
        ("rm -rf escape/", High),
        ("rm -rf escape/sub", High),
        // `..` after a symlink goes up from where the link points.
        ("rm -rf escape/../src", High),
        ("cd / && rm -rf x", High),
        ("cd / ; rm -rf tmp", High),
        ("cd .. && rm -rf *", High),
        ("cd \"$DIR\" && rm -rf build", High),
        ("cd - && rm -rf build", High),
        ("cd target && rm -rf debug", Low),
        ("cd src && rm -rf ../build", Low),
        ("cd src && rm -rf ../..", High),
        ("env -C / rm -rf x", High),
    ]);
}

#[test]
fn glob_delete_from_a_cwd_outside_is_high() {
    let fx = fixture();
    assert_eq!(danger_in("rm -rf *", &fx.ws, &fx.outside).risk, High);
    assert_eq!(danger_in("rm -rf *", &fx.ws, &fx.ws).risk, Low);
    assert_eq!(danger_in("rm -rf .*", &fx.ws, &fx.ws).risk, High);
    let d = danger_in("rm -rf /", &fx.ws, &fx.ws);
    assert_eq!(
        d.reasons,
        vec!["recursive delete outside the workspace: /".to_string()]
    );
}

#[test]
fn plain_deletes_and_moves_outside() {
    table(&[
        ("rm /etc/passwd", High),
        ("rm ../notes.txt", High),
        ("rm escape/file", High),
        ("rm out.txt", Low),
        ("mv src OUTSIDE/src", High),
        ("mv /etc/hosts .", High),
        ("mv -t OUTSIDE a b", High),
        ("mv \"$A\" b", High),
        ("mv a.txt b.txt", Low),
        ("mv src/main.rs src/lib.rs", Low),
    ]);
}

#[test]
fn find_shred_truncate_xargs() {
    table(&[
        ("find / -name '*.log' -delete", High),
        ("find ~ -exec rm {} \\;", High),
        ("find OUTSIDE -type f -exec rm -f {} +", High),
        ("find . -exec sh -c 'rm -rf /' \\;", High),
        ("find $D -delete", High),
        ("find . -name '*.o' -delete", Low),
        ("find src -name '*.tmp' -exec rm {} \\;", Low),
        ("find . -name x -print", Low),
        ("shred -u secret.txt", High),
        ("truncate -s 0 /var/log/syslog", High),
        ("truncate -s 0 out.log", Low),
        ("ls | xargs rm", High),
        ("find . -name '*.bak' | xargs rm -rf", High),
        ("git ls-files | xargs -I{} rm {}", High),
        ("ls | xargs wc -l", Low),
    ]);
}

#[test]
fn device_writes() {
    table(&[
        ("echo x > /dev/sda", High),
        ("cat img >> /dev/nvme0n1", High),
        ("echo x > disk", High),
        ("dd if=img.iso of=/dev/sdb bs=4M", High),
        ("dd if=/dev/zero of=OUTSIDE/x", High),
        ("dd if=/dev/zero of=$OUT", High),
        ("dd if=/dev/zero of=disk.img bs=1M count=1", Low),
        ("dd if=/dev/sda of=/dev/null count=1", Low),
        ("mkfs.ext4 /dev/sdb1", High),
        ("mkfs -t xfs /dev/sdb1", High),
        ("mkswap /dev/sdb2", High),
        ("fdisk /dev/sda", High),
        ("parted /dev/sda mklabel gpt", High),
        ("wipefs -a /dev/sda", High),
        ("echo x | tee /dev/sda", High),
        ("cp disk.img /dev/sdb", High),
        ("cp -t /dev/sdb disk.img", High),
        ("cp a.txt b.txt", Low),
        ("echo x | tee out.txt", Low),
        ("{ echo a; } > /dev/sda", High),
    ]);
}

#[test]
fn fork_bombs() {
    table(&[
        (":(){ :|:& };:", High),
        ("bomb() { bomb | bomb & }; bomb", High),
        ("f(){ f & f; }; f", High),
        ("f() { echo hi; }; f", Low),
        ("f() { f2 | grep x; }; f", Low),
    ]);
}

#[test]
fn downloads_run_as_code() {
    table(&[
        ("curl -fsSL https://example.com/install.sh | sh", High),
        ("wget -qO- https://x | bash", High),
        ("curl -s x | sudo bash", High),
        ("curl -s x | sudo -E env FOO=1 bash -s -- --yes", High),
        ("curl x | python3", High),
        ("curl x | tee install.log | sh", High),
        ("curl x | (cd /tmp && sh)", High),
        ("sh -c \"$(curl -fsSL https://x)\"", High),
        ("bash <(curl -s https://x)", High),
        ("eval \"$(curl -s https://x)\"", High),
        ("source <(curl -s https://x)", High),
        ("curl -o out.json https://x", Low),
        ("curl -s https://x | jq .", Low),
        ("curl -s https://x | python3 -m json.tool", Low),
        ("curl -s https://x | python3 parse.py", Low),
        ("curl -s https://x > page.html", Low),
    ]);
}

#[test]
fn permissions_and_ownership() {
    table(&[
        ("chmod -R 777 /", High),
        ("chmod -R 777 target", High),
        ("chmod 777 -R target", High),
        ("chmod -R a+rwx build", High),
        ("chmod -R o+w build", High),
        ("chmod --recursive 0777 build", High),
        ("chmod -R 755 OUTSIDE", High),
        ("chown -R user /etc", High),
        ("chown -R me:me OUTSIDE", High),
        ("chmod +x script.sh", Low),
        ("chmod 755 build", Low),
        ("chmod 777 out.txt", Low),
        ("chmod -R 755 target", Low),
        ("chmod -R u+w target", Low),
        ("chown -R me target", Low),
    ]);
}

#[test]
fn privilege_escalation() {
    table(&[
        ("sudo ls", High),
        ("sudo -u postgres psql", High),
        ("su -c 'ls'", High),
        ("doas ls", High),
        ("pkexec ls", High),
    ]);
}

#[test]
fn git_history_and_work_destruction() {
    table(&[
        ("git push --force", High),
        ("git push -f origin main", High),
        ("git push -uf origin main", High),
        ("git push --force-with-lease", High),
        ("git push --force-with-lease=main:abc origin main", High),
        ("git push origin +main", High),
        ("git push --mirror", High),
        ("git push --delete origin old", High),
        ("git push origin :old", High),
        ("git reset --hard HEAD~1", High),
        ("git clean -fdx", High),
        ("git clean -xfd", High),
        ("git clean -f -d -x", High),
        ("git clean -fd", High),
        ("git clean --force -X", High),
        ("git rebase -i HEAD~3", High),
        ("git rebase main", High),
        ("git filter-branch --tree-filter x HEAD", High),
        ("git filter-repo --path x", High),
        ("git commit --amend -m x", High),
        ("git reflog expire --expire=now --all", High),
        ("git update-ref -d refs/heads/x", High),
        ("git branch -D feature", High),
        ("git branch --delete --force feature", High),
        ("git checkout -- .", High),
        ("git checkout .", High),
        ("git checkout -f main", High),
        ("git restore .", High),
        ("git restore src/main.rs", High),
        ("git stash drop", High),
        ("git -C /tmp/repo push -f", High),
        ("git -c user.name=x push --force", High),
        ("git -c core.pager='rm -rf ~' log", High),
        ("git --no-pager -C sub reset --hard", High),
        // harmless
        ("git push", Low),
        ("git push -u origin main", Low),
        ("git clean -n -fdx", Low),
        ("git clean -f", Low),
        ("git commit -m 'fix: x'", Low),
        ("git checkout main", Low),
        ("git checkout -b feature", Low),
        ("git restore --staged src/main.rs", Low),
        ("git branch -d merged", Low),
        ("git -C sub log --oneline", Low),
        ("git -c color.ui=always status", Low),
        ("git reset HEAD src/main.rs", Low),
        ("git rebase --abort", Low),
        ("git stash && git stash pop", Low),
    ]);
}

#[test]
fn git_config_setting_a_command_is_high() {
    table(&[
        // Keys whose value git runs (on the host, at a later git command).
        ("git config core.hooksPath tools/hooks", High),
        ("git config core.fsmonitor 'echo pwned'", High),
        ("git config core.sshCommand 'ssh -i x'", High),
        ("git config core.editor vim", High),
        ("git config core.pager less", High),
        ("git config pager.log 'sh -c x'", High),
        ("git config alias.st status", High),
        ("git config alias.x '!rm -rf ~'", High),
        ("git config filter.lfs.clean 'sh x'", High),
        ("git config filter.x.smudge cat", High),
        ("git config diff.pdf.textconv pdftotext", High),
        ("git config diff.external ./d.sh", High),
        ("git config credential.helper store", High),
        ("git config credential.https://example.com.helper x", High),
        ("git config gpg.program ./gpg", High),
        ("git config gpg.ssh.program ./s", High),
        ("git config sequence.editor 'sed -i x'", High),
        ("git config include.path ../evil.cfg", High),
        ("git config includeIf.gitdir:/w/.path ../evil.cfg", High),
        ("git config merge.ours.driver true", High),
        ("git config remote.origin.uploadpack ./up", High),
        ("git config submodule.x.update '!sh'", High),
        ("git config CORE.HOOKSPATH x", High),
        // Every file and spelling.
        ("git config --global core.hooksPath ~/hooks", High),
        ("git config --system core.editor x", High),
        ("git config --local core.pager x", High),
        ("git config --worktree core.pager x", High),
        ("git config --file .git/config core.fsmonitor x", High),
        ("git config --file=.git/config core.fsmonitor x", High),
        ("git config -f .git/config core.fsmonitor x", High),
        ("git config -f.git/config core.fsmonitor x", High),
        ("git config --add alias.x y", High),
        ("git config --replace-all core.pager x", High),
        ("git config --type=bool core.fsmonitor true", High),
        ("git config --type bool core.fsmonitor true", High),
        ("git config --bool core.fsmonitor true", High),
        ("git config core.pager x 'old.*'", High),
        ("git config -- core.pager x", High),
        ("git -C sub config core.hooksPath x", High),
        ("git --git-dir=.git config core.hooksPath x", High),
        ("git config set core.hooksPath x", High),
        ("git config set --append alias.x y", High),
        ("git config set --global core.editor x", High),
        ("env git config core.hooksPath x", High),
        ("bash -c 'git config core.hooksPath x'", High),
        // Keys only known at run time, editing, renaming sections.
        ("git config \"$K\" x", High),
        ("git config --edit", High),
        ("git config -e", High),
        ("git config edit --global", High),
        ("git config --rename-section foo alias", High),
        ("git config rename-section foo alias", High),
        // Reading, unsetting, and harmless keys.
        ("git config core.hooksPath", Low),
        ("git config --get core.hooksPath", Low),
        ("git config --get-regexp 'alias.*'", Low),
        ("git config get alias.st", Low),
        ("git config -l", Low),
        ("git config --list --show-origin", Low),
        ("git config list", Low),
        ("git config --unset core.hooksPath", Low),
        ("git config unset alias.st", Low),
        ("git config --remove-section alias", Low),
        ("git config user.name 'A U Thor'", Low),
        ("git config --global user.email a@b", Low),
        ("git config user.name \"$NAME\"", Low),
        ("git config core.autocrlf false", Low),
        ("git config pull.rebase true", Low),
        ("git config set user.name x", Low),
        ("git config --file other.cfg user.name x", Low),
        ("git config -f core.pager user.name x", Low),
        ("git -c protocol.file.allow=always submodule update", Low),
        // `git -c` takes the same list.
        ("git -c alias.x=status x", High),
        ("git -c include.path=x log", High),
        ("git -c protocol.ext.allow=always fetch", High),
    ]);
}

#[test]
fn wrappers_are_looked_through() {
    table(&[
        ("env FOO=1 rm -rf /", High),
        ("env -i PATH=/bin rm -rf /", High),
        ("nice -n 10 rm -rf /", High),
        ("nohup rm -rf / &", High),
        ("timeout 10 rm -rf /", High),
        ("timeout -s KILL 5 rm -rf /", High),
        ("command rm -rf /", High),
        ("exec rm -rf /", High),
        ("time rm -rf /", High),
        ("stdbuf -oL rm -rf /", High),
        ("busybox rm -rf /", High),
        ("watch -n 5 rm -rf /", High),
        ("env -S 'rm -rf /'", High),
        ("bash -c 'rm -rf /'", High),
        ("sh -c \"cd / && rm -rf x\"", High),
        ("bash -lc 'git push -f'", High),
        ("bash -c \"bash -c 'rm -rf /'\"", High),
        ("bash <<'EOF'\nrm -rf /\nEOF\n", High),
        ("bash <<< 'rm -rf /'", High),
        ("xargs -a list rm -rf", High),
        ("env FOO=1 cargo test", Low),
        ("timeout 60 cargo test", Low),
        ("nice make -j4", Low),
        ("bash -c 'echo hi'", Low),
        ("bash ./scripts/check.sh", Low),
        ("command -v rm", Low),
        ("eval echo hi", Low),
        ("trap 'rm -f out.txt' EXIT", Low),
        ("trap 'rm -rf /' EXIT", High),
    ]);
}

#[test]
fn opaque_and_dynamic_code() {
    table(&[
        ("eval \"$CMD\"", High),
        ("eval $(ssh-agent -s)", High),
        ("source \"$ENV_FILE\"", High),
        ("$CMD --flag", High),
        ("bash -c \"$SCRIPT\"", High),
        ("python3 -c \"$CODE\"", High),
        ("bash -c 'rm -rf \"$('", High),
        ("source .venv/bin/activate", Low),
        (". ./env.sh && cargo test", Low),
        ("python3 -c 'print(1)'", Low),
    ]);
}

#[test]
fn reasons_are_short_phrases() {
    let fx = fixture();
    let d = danger_in("sudo rm -rf / && curl x | sh", &fx.ws, &fx.ws);
    assert_eq!(d.risk, High);
    assert_eq!(
        d.reasons,
        vec![
            "runs as another user (sudo)".to_string(),
            "recursive delete outside the workspace: /".to_string(),
            "downloaded code piped into an interpreter: curl | sh".to_string(),
        ]
    );
    assert!(d.reasons.iter().all(|r| !r.contains('\n')));
    assert_eq!(danger_in("ls", &fx.ws, &fx.ws), Danger::default());
}

#[test]
fn expand_home_prefixes() {
    let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) else {
        return;
    };
    let home = PathBuf::from(home);
    assert_eq!(expand_home("~"), Some(home.clone()));
    assert_eq!(expand_home("~/a/b"), Some(home.join("a/b")));
    assert_eq!(expand_home("$HOME/x"), Some(home.join("x")));
    assert_eq!(expand_home("${HOME}"), Some(home.clone()));
    assert_eq!(expand_home("~user/x"), None);
    assert_eq!(expand_home("$HOMEX"), None);
    assert_eq!(expand_home("/abs"), None);
}
