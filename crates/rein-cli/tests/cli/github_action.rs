//! The repository's GitHub Action: `action.yml` and the example workflow
//! pass a validator nobody here wrote (`@action-validator/cli`, which a
//! broken copy fails), and the action's run step drives the real binary
//! for `exec` and `review` as a workflow would.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::sandbox::dirs;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn validator() -> Option<PathBuf> {
    let p = PathBuf::from(std::env::var_os("HOME")?)
        .join(".cache/rein/action-validator/node_modules/.bin/action-validator");
    if p.exists() {
        return Some(p);
    }
    rein_test_support::skip(
        rein_test_support::Component::ActionValidator,
        "the validator is not installed",
    );
    None
}

#[test]
fn the_action_and_its_example_workflow_pass_the_validator_and_a_broken_copy_does_not() {
    let Some(validator) = validator() else { return };
    for file in ["action.yml", "examples/github/rein-review.yml"] {
        let o = std::process::Command::new(&validator)
            .arg(repo().join(file))
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{file}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("action.yml");
    let text = std::fs::read_to_string(repo().join("action.yml")).unwrap();
    std::fs::write(&broken, text.replace("using: composite", "using: nonsense")).unwrap();
    let o = std::process::Command::new(&validator)
        .arg(&broken)
        .output()
        .unwrap();
    assert!(
        !o.status.success(),
        "the validator accepted a broken action"
    );
}

/// Run the action's step with `env`; its exit code and the answer file.
fn step(d: &super::sandbox::Dirs, env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let bin = Path::new(env!("CARGO_BIN_EXE_rein")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = d.home.join("github_output");
    let _ = std::fs::remove_file(&output);
    let o = std::process::Command::new(repo().join("scripts/github-action.sh"))
        .env("PATH", path)
        .env("REIN_HOME", &d.home)
        .env("RUNNER_TEMP", &d.home)
        .env("GITHUB_OUTPUT", &output)
        .env_remove("REIN_PROVIDER")
        .env_remove("REIN_MODEL")
        .envs(env.iter().copied())
        .current_dir(&d.ws)
        .output()
        .unwrap();
    let outputs = std::fs::read_to_string(&output).unwrap_or_default();
    let answer = outputs
        .strip_prefix("answer-file=")
        .map(|f| std::fs::read_to_string(f.trim()).unwrap_or_default())
        .unwrap_or_default();
    (
        o.status.code(),
        answer,
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

#[test]
fn the_action_step_runs_exec_and_review_and_keeps_the_answer_for_the_comment() {
    let d = dirs();
    let script = d.home.join("script.json");
    std::fs::write(
        d.home.join("config.toml"),
        format!("[replay]\nscript = {:?}\n", script.display().to_string()),
    )
    .unwrap();
    std::fs::write(
        &script,
        json!({"turns": [{"text": "All good."}]}).to_string(),
    )
    .unwrap();
    let (code, answer, err) = step(
        &d,
        &[
            ("REIN_COMMAND", "exec"),
            ("REIN_TASK", "check"),
            ("REIN_RUN_PROVIDER", "replay"),
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(answer, "All good.");
    std::fs::write(
        &script,
        json!({"turns": [{"text": "P1 a.py:3 - the key ignores the user\n\nRisky."}]}).to_string(),
    )
    .unwrap();
    let (code, answer, err) = step(
        &d,
        &[
            ("REIN_COMMAND", "review"),
            ("REIN_FAIL_ON", "P1"),
            ("REIN_RUN_PROVIDER", "replay"),
        ],
    );
    assert_eq!(code, Some(11), "{err}");
    assert!(answer.starts_with("P1 a.py:3"), "{answer}");
    let (code, _, err) = step(&d, &[("REIN_COMMAND", "deploy")]);
    assert_eq!(code, Some(2));
    assert!(err.contains("command must be exec or review"), "{err}");
}
