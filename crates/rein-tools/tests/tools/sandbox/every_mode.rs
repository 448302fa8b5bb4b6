//! Every mode, the default: the sandbox this machine offers, `off`, and
//! the environment variables that reach a command.

use rein_core::{SandboxMode, Tool};
use rein_tools::Bash;
use rein_tools::bash::bash_is_sandboxed;
use rein_tools::sandbox::{self, SandboxKind};

use super::{ALLOW_NONE, Sbx, bwrap, landlock, none_allowed, policy, unique};

#[tokio::test]
async fn the_default_bash_tool_uses_the_sandbox_this_machine_offers() {
    let kind = sandbox::available();
    eprintln!("sandbox: {}", sandbox::describe(kind));
    if kind == SandboxKind::None {
        assert!(
            none_allowed(),
            "no sandbox works here; install bubblewrap, or set {ALLOW_NONE}=1 to skip knowingly"
        );
        rein_test_support::skip(
            rein_test_support::Component::AnySandbox,
            format!("{ALLOW_NONE}=1"),
        );
        return;
    }
    let sbx = Sbx::new().await;
    let p = policy(SandboxMode::WorkspaceWrite);
    assert!(bash_is_sandboxed(&p));
    assert!(bash_is_sandboxed(&policy(SandboxMode::ReadOnly)));
    sbx.ok(&Bash, &p, "echo x > f").await;
    sbx.fails(&Bash, &p, "touch OUT/x").await;
    assert!(!sbx.out.join("x").exists());
    // Off runs plainly: the outside is writable.
    sbx.ok(&Bash, &policy(SandboxMode::Off), "touch OUT/x")
        .await;
    assert!(sbx.out.join("x").exists());
}

#[test]
fn off_never_needs_a_sandbox() {
    assert!(bash_is_sandboxed(&policy(SandboxMode::Off)));
    assert_eq!(
        bash_is_sandboxed(&policy(SandboxMode::WorkspaceWrite)),
        sandbox::available() != SandboxKind::None
    );
}

/// Only allowlisted variables (and those the user names in `env_allow`)
/// reach a command, sandboxed or not: secret-looking names, and ordinary
/// ones that are not on the list (a database URL), stay out; locale
/// variables pass. (`DATABASE_URL` and `GH_PAT` themselves: the escape
/// corpus.)
#[tokio::test]
async fn only_allowlisted_environment_variables_reach_a_command_in_every_mode() {
    let n = unique();
    let vars = [
        (
            format!("REIN_TEST_SECRET_TOKEN_{n}"),
            format!("hidden-value-a-{n}"),
            false,
        ),
        (
            format!("REIN_TEST_MY_API_KEY_{n}"),
            format!("hidden-value-b-{n}"),
            false,
        ),
        (
            format!("rein_test_db_password_{n}"),
            format!("hidden-value-c-{n}"),
            false,
        ),
        (
            format!("REIN_TEST_ALLOWED_TOKEN_{n}"),
            format!("shown-value-d-{n}"),
            true,
        ),
        (
            format!("REIN_TEST_PLAIN_{n}"),
            format!("hidden-value-e-{n}"),
            false,
        ),
        (
            format!("REIN_TEST_DATABASE_URL_{n}"),
            format!("postgres://u:hidden-value-f-{n}@db"),
            false,
        ),
        (
            format!("LC_REIN_TEST_{}", "X".repeat(n as usize % 5 + 1)),
            format!("shown-value-h-{n}"),
            true,
        ),
    ];
    for (name, value, _) in &vars {
        // SAFETY: the names are unique to this test, and std serialises its
        // own environment reads (spawning included) with writes.
        unsafe { std::env::set_var(name, value) };
    }
    let sbx = Sbx::new().await;
    let mut tools: Vec<(SandboxMode, Box<dyn Tool>)> = vec![(SandboxMode::Off, Box::new(Bash))];
    if let Some(t) = bwrap() {
        tools.push((SandboxMode::WorkspaceWrite, Box::new(t)));
    }
    if let Some(t) = landlock() {
        tools.push((SandboxMode::ReadOnly, Box::new(t)));
    }
    for (mode, tool) in &tools {
        let mut p = policy(*mode);
        p.env_allow = vec![vars[3].0.clone()];
        let out = sbx
            .ok(
                tool.as_ref(),
                &p,
                "env; echo ---; printenv; echo ---; cat /proc/self/environ | tr '\\0' '\\n'; \
                 echo ---; cat /proc/$$/environ | tr '\\0' '\\n'",
            )
            .await;
        for (name, value, shown) in &vars {
            let count = out.matches(value.as_str()).count();
            if *shown {
                assert_eq!(count, 4, "{mode:?}: {name} should pass through: {out}");
            } else {
                assert_eq!(count, 0, "{mode:?}: {name} leaked: {out}");
            }
        }
    }
    for (name, _, _) in &vars {
        // SAFETY: as above.
        unsafe { std::env::remove_var(name) };
    }
}
