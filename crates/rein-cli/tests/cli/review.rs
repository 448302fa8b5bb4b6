//! `rein review` and `rein init` with the replay provider, as a user or a
//! CI job runs them: the review reads only (plan mode), its findings come
//! out as documented JSON, `--fail-on` decides the exit code; init writes
//! AGENTS.md and nothing else.

use serde_json::{Value, json};

use super::sandbox::dirs;
use super::support::stderr;

fn git(ws: &std::path::Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(ws)
        .output()
        .unwrap()
        .status
        .success();
    assert!(ok, "git {args:?}");
}

fn rein(d: &super::sandbox::Dirs, script: Value, args: &[&str]) -> std::process::Output {
    let path = d.home.join("script.json");
    std::fs::write(&path, script.to_string()).unwrap();
    std::process::Command::new(env!("CARGO_BIN_EXE_rein"))
        .env("REIN_HOME", &d.home)
        .env_remove("REIN_PROVIDER")
        .env_remove("REIN_MODEL")
        .current_dir(&d.ws)
        .stdin(std::process::Stdio::null())
        .args(args)
        .args(["--provider", "replay", "--script"])
        .arg(&path)
        .output()
        .unwrap()
}

const ANSWER: &str = "The change adds a cache.\n\n\
                      P1 src/cache.py:3 - the key ignores the user, so users see each other's data\n\
                      P3 src/cache.py:1 - unused import\n\n\
                      Risky until the key is fixed.";

#[test]
fn review_reads_the_diff_in_plan_mode_and_its_findings_decide_the_exit_code() {
    let d = dirs();
    git(&d.ws, &["init", "-q"]);
    std::fs::create_dir_all(d.ws.join("src")).unwrap();
    std::fs::write(d.ws.join("src/cache.py"), "import os\n").unwrap();
    git(&d.ws, &["add", "."]);
    git(&d.ws, &["commit", "-qm", "base"]);
    std::fs::write(
        d.ws.join("src/cache.py"),
        "import os\nCACHE = {}\nkey = 'all'\n",
    )
    .unwrap();
    let script = json!({"turns": [
        {"tool_calls": [
            {"name": "bash", "arguments": {"command": "git diff HEAD"}},
            {"name": "bash", "arguments": {"command": "echo x > src/cache.py"}}
        ]},
        {"text": ANSWER}
    ]});
    let o = rein(&d, script.clone(), &["review", "--json", "--fail-on", "P1"]);
    assert_eq!(o.status.code(), Some(11), "{}", stderr(&o));
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["stop_reason"], "completed");
    assert_eq!(report["findings"].as_array().unwrap().len(), 2, "{report}");
    assert_eq!(
        report["findings"][0],
        json!({"severity": "P1", "file": "src/cache.py", "line": 3,
               "reason": "the key ignores the user, so users see each other's data"})
    );
    assert!(
        report["summary"]
            .as_str()
            .unwrap()
            .ends_with("Risky until the key is fixed.")
    );
    // Plan mode: the diff ran, the write did not change the file.
    assert_eq!(
        std::fs::read_to_string(d.ws.join("src/cache.py")).unwrap(),
        "import os\nCACHE = {}\nkey = 'all'\n"
    );
    let err = stderr(&o);
    assert!(err.contains("plan mode"), "{err}");
    // Nothing at P0: the job passes; without --json the answer is printed.
    let o = rein(&d, script, &["review", "--fail-on", "P0"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim_end(), ANSWER);
}

#[test]
fn init_writes_agents_md_and_nothing_else() {
    let d = dirs();
    std::fs::write(d.ws.join("Makefile"), "test:\n\tpytest\n").unwrap();
    let script = json!({"turns": [
        {"tool_calls": [
            {"name": "write_file", "arguments": {"path": "AGENTS.md", "content": "# Agents\n\nRun `make test`.\n"}},
            {"name": "write_file", "arguments": {"path": "Makefile", "content": "evil:\n"}}
        ]},
        {"text": "Wrote AGENTS.md."}
    ]});
    let o = rein(&d, script, &["init"]);
    let err = stderr(&o);
    assert_eq!(
        std::fs::read_to_string(d.ws.join("AGENTS.md")).unwrap(),
        "# Agents\n\nRun `make test`.\n",
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(d.ws.join("Makefile")).unwrap(),
        "test:\n\tpytest\n"
    );
    // The other write needed an approval nobody could give.
    assert_eq!(o.status.code(), Some(9), "{err}");
}

const SCHEMA: &str = r#"{"type": "object", "properties": {"verdict": {"enum": ["pass", "fail"]}},
    "required": ["verdict"], "additionalProperties": false}"#;

#[test]
fn an_answer_that_misses_its_schema_is_asked_again_once_then_exits_12() {
    let d = dirs();
    std::fs::write(d.home.join("schema.json"), SCHEMA).unwrap();
    let schema = d.home.join("schema.json").display().to_string();
    let last = d.home.join("last.txt").display().to_string();
    // Told once, the model answers in the schema.
    let script = json!({"turns": [{"text": "It passes."}, {"text": "{\"verdict\": \"pass\"}"}]});
    let o = rein(
        &d,
        script,
        &["exec", "--output-schema", &schema, "-o", &last, "check it"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "{\"verdict\": \"pass\"}"
    );
    assert!(
        stderr(&o).contains("the answer is not JSON"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read_to_string(&last).unwrap(),
        "{\"verdict\": \"pass\"}"
    );
    // Twice wrong: exit 12, nothing on stdout.
    let script = json!({"turns": [{"text": "{\"verdict\": \"maybe\"}"}, {"text": "still maybe"}]});
    let o = rein(
        &d,
        script,
        &["exec", "--output-schema", &schema, "check it"],
    );
    assert_eq!(o.status.code(), Some(12), "{}", stderr(&o));
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(
        stderr(&o).contains("rein: the answer is not JSON"),
        "{}",
        stderr(&o)
    );
    // A schema that is not JSON is a usage error.
    std::fs::write(d.home.join("bad.json"), "{nope").unwrap();
    let bad = d.home.join("bad.json").display().to_string();
    let o = rein(
        &d,
        json!({"turns": []}),
        &["exec", "--output-schema", &bad, "x"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--output-schema") && stderr(&o).contains("not JSON"));
}
