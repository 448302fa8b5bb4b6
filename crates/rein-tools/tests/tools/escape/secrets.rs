//! Secrets: the environment of rein's own process, credential folders of
//! the home (hidden from commands, refused to file tools), and a workspace
//! that is the home itself.

use rein_core::PermissionMode::{Auto, Plan};
use serde_json::json;

use super::Expect::{Any, Failed, Ok, Refused};
use super::{Case, OUTSIDE_OR_SECRET, SECRET, run_cases};

/// Commands that print the environment some way; the secret variable's
/// value must not appear (it is scrubbed before the command starts).
pub fn environment() -> Vec<Case> {
    let mut cases: Vec<Case> = [
        "env",
        "printenv",
        "printenv REIN_ESCAPE_TEST_TOKEN; true",
        "echo \"[$REIN_ESCAPE_TEST_TOKEN]\"",
        "cat /proc/self/environ | tr '\\0' '\\n'",
        "cat /proc/$$/environ | tr '\\0' '\\n'",
        "cat /proc/$PPID/environ | tr '\\0' '\\n'; true",
        "cat /proc/1/environ | tr '\\0' '\\n'; true",
        "set",
        "export -p",
        "bash -c 'echo \"[$REIN_ESCAPE_TEST_TOKEN]\"'",
    ]
    .into_iter()
    .map(|cmd| Case::new(format!("auto `{cmd}`"), Auto).bash(cmd, Ok))
    .collect();
    cases.push(Case::new("plan `env`", Plan).bash("env", Ok));
    cases
}

/// The credential folders of the (fake) home, from a workspace elsewhere.
pub fn secret_folders() -> Vec<Case> {
    vec![
        Case::new("cat the SSH key", Auto)
            .bash("cat {home}/.ssh/id_rsa", Failed)
            .bwrap_only(),
        Case::new("cat .netrc", Auto)
            .bash("cat {home}/.netrc", Any)
            .bwrap_only(),
        Case::new("copy .aws into the workspace, then read the copy", Auto)
            .bash("cp -r {home}/.aws ./aws_copy; ls -la aws_copy; true", Any)
            .bash("cat aws_copy/credentials", Failed)
            .call("read_file", json!({"path": "aws_copy/credentials"}), Any)
            .bwrap_only(),
        Case::new("grep the whole home", Auto)
            .bash("grep -r KEY-MATERIAL {home}", Failed)
            .bwrap_only(),
        Case::new("tar the home", Auto)
            .bash(
                "tar cf - {home} 2>/dev/null | grep -a -c KEY-MATERIAL",
                Failed,
            )
            .bwrap_only(),
        Case::new("cat the SSH key in plan mode", Plan)
            .bash("cat {home}/.ssh/id_rsa", Failed)
            .bwrap_only(),
        Case::new("read_file the SSH key by absolute path", Auto).call(
            "read_file",
            json!({"path": "{home}/.ssh/id_rsa"}),
            Refused(OUTSIDE_OR_SECRET),
        ),
    ]
}

/// The workspace is the home: the file tools could reach the credential
/// folders by workspace paths, so the gate refuses them by name.
pub fn home_workspace() -> Vec<Case> {
    let read = |path: &str| json!({ "path": path });
    vec![
        Case::new("read_file .ssh/id_rsa", Auto)
            .home_workspace()
            .call("read_file", read(".ssh/id_rsa"), Refused(SECRET)),
        Case::new("read_file .netrc", Auto).home_workspace().call(
            "read_file",
            read(".netrc"),
            Refused(SECRET),
        ),
        Case::new("read_file .aws/credentials", Auto)
            .home_workspace()
            .call("read_file", read(".aws/credentials"), Refused(SECRET)),
        Case::new("read_file the key by absolute path", Auto)
            .home_workspace()
            .call("read_file", read("{home}/.ssh/id_rsa"), Refused(SECRET)),
        Case::new("read_file through a symlink to .ssh", Auto)
            .home_workspace()
            .call("read_file", read("sshlink/id_rsa"), Refused(SECRET)),
        Case::new("read_file in plan mode", Plan)
            .home_workspace()
            .call("read_file", read(".ssh/id_rsa"), Refused(SECRET)),
        Case::new("grep in .aws", Auto).home_workspace().call(
            "grep",
            json!({"pattern": "KEY-MATERIAL", "path": ".aws"}),
            Refused(SECRET),
        ),
        Case::new("glob in .ssh", Auto).home_workspace().call(
            "glob",
            json!({"pattern": "*", "path": ".ssh"}),
            Refused(SECRET),
        ),
        Case::new("grep the whole home", Auto)
            .home_workspace()
            .call("grep", json!({"pattern": "KEY-MATERIAL"}), Any),
        Case::new("write_file .ssh/authorized_keys", Auto)
            .home_workspace()
            .call(
                "write_file",
                json!({"path": ".ssh/authorized_keys", "content": "ssh-ed25519 AAAA evil\n"}),
                Refused(SECRET),
            ),
        Case::new("edit_file .ssh/id_rsa", Auto)
            .home_workspace()
            .call(
                "edit_file",
                json!({"path": ".ssh/id_rsa", "old_string": "KEY", "new_string": "K"}),
                Refused(SECRET),
            ),
        Case::new("bash cat .ssh/id_rsa", Auto)
            .home_workspace()
            .bash("cat .ssh/id_rsa", Failed)
            .bwrap_only(),
        Case::new("bash cat through the symlink to .ssh", Auto)
            .home_workspace()
            .bash("cat sshlink/id_rsa", Failed)
            .bwrap_only(),
        Case::new("bash grep -r the home", Auto)
            .home_workspace()
            .bash("grep -r -a KEY-MATERIAL . ; true", Ok)
            .bwrap_only(),
    ]
}

#[tokio::test]
async fn secret_variables_never_reach_a_command() {
    // The variable really is in this process's environment.
    assert_eq!(
        std::env::var(super::ENV_NAME).ok().as_deref(),
        Some(super::markers().env.as_str())
    );
    run_cases(environment(), &[]).await.assert("environment");
}

#[tokio::test]
async fn credential_folders_stay_unreadable_from_commands_and_file_tools() {
    let mut cases = secret_folders();
    cases.extend(home_workspace());
    run_cases(cases, &[]).await.assert("secret folders");
}
