//! Getting out of the workspace by path: `..`, absolute paths, symlinks,
//! hard links and `/proc/self/root`.

use rein_core::PermissionMode::{Auto, Bypass, Plan};
use serde_json::json;

use super::Expect::{Any, Failed, Refused};
use super::{Case, OUTSIDE, OUTSIDE_OR_SECRET, PROTECTED, run_cases};

fn write(path: &str) -> serde_json::Value {
    json!({ "path": path, "content": "escaped\n" })
}

fn edit(path: &str) -> serde_json::Value {
    json!({ "path": path, "old_string": "OUTSIDE", "new_string": "ESCAPED" })
}

pub fn paths() -> Vec<Case> {
    vec![
        Case::new("read_file ../ into the sibling folder", Auto).call(
            "read_file",
            json!({"path": "../outside/existing.txt"}),
            Refused(OUTSIDE),
        ),
        Case::new("read_file absolute outside path", Auto).call(
            "read_file",
            json!({"path": "{out}/existing.txt"}),
            Refused(OUTSIDE),
        ),
        Case::new("read_file ../ after a real folder", Auto).call(
            "read_file",
            json!({"path": "src/../../outside/existing.txt"}),
            Refused(OUTSIDE),
        ),
        Case::new("read_file of the fake REIN_HOME", Auto).call(
            "read_file",
            json!({"path": "{state}/settings.json"}),
            Refused(OUTSIDE),
        ),
        Case::new("write_file ../ new file", Auto).call(
            "write_file",
            write("../outside/new.txt"),
            Refused(OUTSIDE),
        ),
        Case::new("write_file ../ over an existing file", Auto).call(
            "write_file",
            write("../outside/existing.txt"),
            Refused(OUTSIDE),
        ),
        // The content is /etc/passwd's own: even a broken gate could not
        // damage the machine running the test.
        Case::new("write_file /etc/passwd", Auto).call(
            "write_file",
            json!({"path": "/etc/passwd", "content": "{passwd}"}),
            Refused(OUTSIDE),
        ),
        Case::new("write_file absolute outside path", Auto).call(
            "write_file",
            write("{out}/new.txt"),
            Refused(OUTSIDE),
        ),
        Case::new("write_file `..` after a missing folder", Auto).call(
            "write_file",
            write("nothere/../../outside/new.txt"),
            Refused(&["`..` is not allowed"]),
        ),
        Case::new("write_file ../ in bypass mode", Bypass).call(
            "write_file",
            write("../outside/new.txt"),
            Refused(OUTSIDE),
        ),
        Case::new("write_file into the fake REIN_HOME", Auto).call(
            "write_file",
            write("{state}/settings.json"),
            Refused(OUTSIDE),
        ),
        Case::new("edit_file ../", Auto).call(
            "edit_file",
            edit("../outside/existing.txt"),
            Refused(OUTSIDE),
        ),
        Case::new("edit_file absolute outside path", Auto).call(
            "edit_file",
            edit("{out}/existing.txt"),
            Refused(OUTSIDE),
        ),
        Case::new("glob path ..", Auto).call(
            "glob",
            json!({"pattern": "**/*", "path": ".."}),
            Refused(OUTSIDE),
        ),
        Case::new("glob absolute outside folder", Auto).call(
            "glob",
            json!({"pattern": "*", "path": "{out}"}),
            Refused(OUTSIDE),
        ),
        Case::new("glob absolute outside pattern", Auto).call(
            "glob",
            json!({"pattern": "{out}/*"}),
            Refused(&["is absolute"]),
        ),
        // A `..` pattern matches nothing under the root: no outside names.
        Case::new("glob ../ pattern", Auto).call("glob", json!({"pattern": "../outside/**"}), Any),
        Case::new("grep path ..", Auto).call(
            "grep",
            json!({"pattern": "OUTSIDE", "path": ".."}),
            Refused(OUTSIDE),
        ),
        Case::new("grep absolute outside file", Auto).call(
            "grep",
            json!({"pattern": "OUTSIDE", "path": "{out}/existing.txt"}),
            Refused(OUTSIDE),
        ),
        // The workspace holds symlinks to outside files and folders; the
        // walk does not follow them.
        Case::new("grep the workspace through its outward symlinks", Auto).call(
            "grep",
            json!({"pattern": "OUTSIDE-CONTENT"}),
            Any,
        ),
        Case::new("read_file ../ in plan mode", Plan).call(
            "read_file",
            json!({"path": "../outside/existing.txt"}),
            Refused(OUTSIDE),
        ),
        Case::new("read_file of a credential file outside", Auto).call(
            "read_file",
            json!({"path": "{home}/.ssh/id_rsa"}),
            Refused(OUTSIDE_OR_SECRET),
        ),
        Case::new("write_file into a credential folder outside", Auto).call(
            "write_file",
            write("{home}/.ssh/authorized_keys"),
            Refused(OUTSIDE_OR_SECRET),
        ),
    ]
}

pub fn symlinks() -> Vec<Case> {
    let through = &["through a symlink", "outside the workspace"][..];
    vec![
        Case::new("write_file through a file symlink", Auto).call(
            "write_file",
            write("link_file"),
            Refused(through),
        ),
        Case::new("edit_file through a file symlink", Auto).call(
            "edit_file",
            edit("link_file"),
            Refused(OUTSIDE),
        ),
        Case::new("write_file into a folder symlink", Auto).call(
            "write_file",
            write("link_dir/new.txt"),
            Refused(OUTSIDE),
        ),
        Case::new("edit_file inside a folder symlink", Auto).call(
            "edit_file",
            edit("link_dir/existing.txt"),
            Refused(OUTSIDE),
        ),
        Case::new("write_file through a chain of symlinks", Auto).call(
            "write_file",
            write("chain_a/sub/new.txt"),
            Refused(OUTSIDE),
        ),
        Case::new("read_file through a file symlink", Auto).call(
            "read_file",
            json!({"path": "link_file"}),
            Refused(OUTSIDE),
        ),
        Case::new("read_file through a chain of symlinks", Auto).call(
            "read_file",
            json!({"path": "chain_a/sub/inner.txt"}),
            Refused(OUTSIDE),
        ),
        Case::new("write_file through a dangling symlink", Auto).call(
            "write_file",
            write("dangling"),
            Refused(OUTSIDE),
        ),
        Case::new("write_file below a dangling folder symlink", Auto).call(
            "write_file",
            write("dangling_dir/new.txt"),
            Refused(OUTSIDE),
        ),
        Case::new("glob in a folder symlink", Auto).call(
            "glob",
            json!({"pattern": "*", "path": "link_dir"}),
            Refused(OUTSIDE),
        ),
        Case::new("grep in a chain of symlinks", Auto).call(
            "grep",
            json!({"pattern": "OUTSIDE", "path": "chain_a"}),
            Refused(OUTSIDE),
        ),
        Case::new("write_file into a folder symlink in bypass mode", Bypass).call(
            "write_file",
            write("link_dir/new.txt"),
            Refused(OUTSIDE),
        ),
        // The shell makes the link (inside the workspace, allowed), but
        // cannot write through it; a later file tool call cannot either.
        Case::new(
            "symlink made by the shell, then used by the file tools",
            Auto,
        )
        .bash("ln -s {out} link && echo x > link/f", Failed)
        .call("write_file", write("link/f"), Refused(OUTSIDE))
        .call("edit_file", edit("link/existing.txt"), Refused(OUTSIDE))
        .bash("echo y >> link/existing.txt", Failed),
        Case::new("bash appends through a file symlink", Auto).bash("echo x >> link_file", Failed),
        Case::new("bash copies into a folder symlink", Auto).bash("cp src/main.rs link_dir/", Any),
        Case::new("bash replaces a symlink's target", Auto)
            .bash("ln -sfn {out}/sub chain_b && echo x > chain_a/new", Failed),
    ]
}

/// A hard link to an outside file cannot be made: the workspace is its own
/// mount in the sandbox, so `link(2)` across it fails. A hard link that
/// already exists in the workspace (made outside the sandbox) is replaced by
/// the file tools, not written through (`gitmeta_files.rs` proves it); a
/// command can still write through it (known limit, `sandbox.rs` shows it).
pub fn hard_links() -> Vec<Case> {
    vec![
        Case::new("bash hard-links an outside file and appends", Auto)
            .bash("ln {out}/existing.txt h && echo y >> h", Failed),
        Case::new("bash hard-links an outside file by absolute paths", Auto)
            .bash("ln {out}/sacrificial {ws}/h2", Failed),
    ]
}

pub fn proc_paths() -> Vec<Case> {
    vec![
        Case::new("read_file via /proc/self/root", Auto).call(
            "read_file",
            json!({"path": "/proc/self/root{out}/existing.txt"}),
            Refused(OUTSIDE),
        ),
        Case::new("write_file via /proc/self/root", Auto).call(
            "write_file",
            write("/proc/self/root{out}/new.txt"),
            Refused(OUTSIDE),
        ),
        Case::new("edit_file via /proc/self/root", Auto).call(
            "edit_file",
            edit("/proc/self/root{out}/existing.txt"),
            Refused(OUTSIDE),
        ),
        Case::new("write_file via /proc/self/root onto .git/config", Auto).call(
            "write_file",
            write("/proc/self/root{ws}/.git/config"),
            Refused(PROTECTED),
        ),
        Case::new("write_file via /proc/self/cwd", Auto).call(
            "write_file",
            write("/proc/self/cwd/escaped.txt"),
            Refused(OUTSIDE),
        ),
        Case::new("bash writes via /proc/self/root", Auto)
            .bash("echo x > /proc/self/root{out}/q", Failed),
        Case::new("bash writes via /proc/1/root", Auto)
            .bash("echo x > /proc/1/root{out}/q", Failed),
        Case::new("bash appends via /proc/self/root", Auto)
            .bash("echo x >> /proc/self/root{out}/existing.txt", Failed),
        Case::new("bash reads a credential via /proc/self/root", Auto)
            .bash("cat /proc/self/root{home}/.ssh/id_rsa", Any)
            .bwrap_only(),
        Case::new("bash writes a hook via /proc/self/root", Auto)
            .bash(
                "echo evil >> /proc/self/root{ws}/.git/hooks/pre-commit",
                Failed,
            )
            .bwrap_only(),
    ]
}

#[tokio::test]
async fn file_tools_and_commands_cannot_escape_by_path() {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap();
    let extra = [("{passwd}", passwd.clone())];
    let mut cases = paths();
    cases.extend(proc_paths());
    run_cases(cases, &extra).await.assert("paths and /proc");
    assert_eq!(std::fs::read_to_string("/etc/passwd").unwrap(), passwd);
}

#[tokio::test]
async fn symlinks_and_hard_links_do_not_lead_outside() {
    let mut cases = symlinks();
    cases.extend(hard_links());
    run_cases(cases, &[])
        .await
        .assert("symlinks and hard links");
}
