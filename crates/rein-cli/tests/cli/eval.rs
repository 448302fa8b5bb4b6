//! `rein eval`: the public suite against its scripted solutions (every
//! check passes when a task is done right, and fails when it is not), each
//! failure kind from a model that makes it, `compare`, and bad suites.
//!
//! The real model runs the suite in the ignored
//! `the_public_suite_on_the_local_model` (see BENCHMARKS.md for figures).

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use super::support::*;

fn results(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn eval(env: &Env, args: &[&str]) -> Output {
    let o = env.rein(args);
    eprintln!("stdout: {}\nstderr: {}", stdout(&o), stderr(&o));
    o
}

fn by_task<'a>(records: &'a [Value], name: &str) -> &'a Value {
    records
        .iter()
        .find(|r| r["task"] == name)
        .unwrap_or_else(|| panic!("no record for {name}: {records:?}"))
}

#[test]
fn the_public_suite_is_solved_by_its_scripted_solutions() {
    let env = Env::new();
    let out = env.path("out");
    let suite = repo_root().join("evals");
    let o = eval(
        &env,
        &[
            "eval",
            suite.to_str().unwrap(),
            "--provider",
            "replay",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0));
    let records = results(&out);
    assert!(records.len() >= 30, "{} tasks", records.len());
    let unsolved: Vec<&Value> = records.iter().filter(|r| r["solved"] != true).collect();
    assert!(unsolved.is_empty(), "{unsolved:#?}");
    let kinds: std::collections::BTreeSet<&str> = records
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    for kind in [
        "read-and-answer",
        "count",
        "find-definition",
        "create-file",
        "change-constant",
        "fix-test",
        "rename",
        "agents-md",
        "multi-step",
    ] {
        assert!(kinds.contains(kind), "no {kind} task: {kinds:?}");
    }
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains(&format!("Solved **{0}/{0}**", records.len())),
        "{report}"
    );
    assert!(stdout(&o).starts_with(&format!("solved {0}/{0}", records.len())));
    // The tasks written the way users ask are a group of their own, and
    // every report totals each group apart.
    let group = |name: &str| records.iter().filter(|r| r["group"] == name).count();
    assert!(group("user-phrased") >= 10, "{records:?}");
    assert_eq!(group("original") + group("user-phrased"), records.len());
    let original = group("original");
    assert!(
        report.contains(&format!("- original: solved {original}/{original}")),
        "{report}"
    );
    let user = group("user-phrased");
    assert!(
        stdout(&o).contains(&format!("user-phrased: solved {user}/{user}")),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_model_that_answers_without_looking_solves_nothing_and_exits_1() {
    let env = Env::new();
    let out = env.path("out");
    let script = env.script("guess.json", &json!({"turns": [{"text": "42"}]}));
    let suite = repo_root().join("evals");
    let o = eval(
        &env,
        &[
            "eval",
            suite.to_str().unwrap(),
            "--provider",
            "replay",
            "--script",
            &script,
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    for r in results(&out) {
        assert_eq!(r["solved"], false, "{r}");
        assert_eq!(r["failure"], "no_tool_call", "{r}");
        assert!(
            r["checks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["passed"] == false)
        );
    }
}

/// A task file: a file to work on, checks, and the model's script.
fn task(dir: &Path, name: &str, checks: &[&str], max_turns: u32, turns: Value) {
    let replay = json!({ "turns": turns });
    let text = format!(
        "kind = \"probe\"\nprompt = \"Set x to 2 in a.py.\"\nchecks = {}\nmax_turns = {max_turns}\n\n[files]\n\"a.py\" = \"x = 1\\n\"\n\n[replay]\n{}",
        serde_json::to_string(checks).unwrap(),
        toml_of(&replay)
    );
    std::fs::write(dir.join(format!("{name}.toml")), text).unwrap();
}

/// `[replay]`'s body: the script as a TOML inline table of `turns`.
fn toml_of(replay: &Value) -> String {
    format!("turns = {}\n", inline(&replay["turns"]))
}

fn inline(v: &Value) -> String {
    match v {
        Value::Object(m) => format!(
            "{{ {} }}",
            m.iter()
                .map(|(k, v)| format!("{k} = {}", inline(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Array(a) => format!("[{}]", a.iter().map(inline).collect::<Vec<_>>().join(", ")),
        other => other.to_string(),
    }
}

fn call(name: &str, arguments: Value) -> Value {
    json!({ "tool_calls": [{ "name": name, "arguments": arguments }] })
}

/// A suite of nine tasks that change `x = 1` to `x = 2` in `a.py`: one
/// the model solves and one for each way a run can fail (an unknown tool,
/// invalid arguments, the turn limit, an answer without applying it,
/// giving up, a failing check, the service failing, running out of time).
fn write_a_task_per_outcome(suite: &Path) {
    let changed = "grep -q 'x = 2' a.py";
    let read = call("read_file", json!({"path": "a.py"}));
    let edit = call(
        "edit_file",
        json!({"path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}),
    );
    task(
        suite,
        "solved",
        &[changed],
        5,
        json!([read, edit, {"text": "Done."}]),
    );
    task(
        suite,
        "unknown-tool",
        &[changed],
        5,
        json!([call("apply_patch", json!({"patch": "x"})), {"text": "Done."}]),
    );
    task(
        suite,
        "invalid-arguments",
        &[changed],
        5,
        json!([call("read_file", json!({"file": "a.py"})), {"text": "Done."}]),
    );
    task(
        suite,
        "turn-limit",
        &[changed],
        2,
        json!([read, read, read, {"text": "x"}]),
    );
    task(
        suite,
        "without-applying",
        &[changed],
        5,
        json!([read, {"text": "Change it to:\n```python\nx = 2\nprint(x)\n```"}]),
    );
    task(
        suite,
        "gave-up",
        &[changed],
        5,
        json!([read, {"text": "I'm sorry, I cannot change that file."}]),
    );
    task(
        suite,
        "check-failed",
        &[changed, "grep -q never a.py"],
        5,
        json!([read, edit, {"text": "Done."}]),
    );
    // The service fails for good: what it said is kept.
    task(
        suite,
        "provider-error",
        &[changed],
        5,
        json!([read, {"error": {"kind": "invalid_request", "message": "the model's call | was\ncut off: <tool_call>"}}]),
    );
    // Out of time: a slow first answer, then the wall-time budget (1 s)
    // ends the run before its second turn.
    let slow = call("read_file", json!({"path": "a.py"}));
    let mut slow = slow.as_object().unwrap().clone();
    slow.insert("delay_ms".into(), json!(600));
    std::fs::write(
        suite.join("time-limit.toml"),
        format!(
            "kind = \"probe\"\nprompt = \"Set x to 2 in a.py.\"\nchecks = [\"{changed}\"]\ntimeout_secs = 1\n\n[files]\n\"a.py\" = \"x = 1\\n\"\n\n[replay]\n{}",
            toml_of(&json!({"turns": [Value::Object(slow), read, read, {"text": "x"}]}))
        ),
    )
    .unwrap();
}

#[test]
fn each_kind_of_failure_is_classified_from_what_the_model_did() {
    let env = Env::new();
    let suite = env.path("suite");
    std::fs::create_dir(&suite).unwrap();
    write_a_task_per_outcome(&suite);
    let out = env.path("out");
    let o = eval(
        &env,
        &[
            "eval",
            suite.to_str().unwrap(),
            "--provider",
            "replay",
            "--jobs",
            "3",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    // Off a terminal, one progress line per task.
    let err = stderr(&o);
    let progress: Vec<&str> = err.lines().filter(|l| l.contains(" · solved ")).collect();
    assert_eq!(progress.len(), 9, "{progress:?}");
    assert!(
        progress.last().unwrap().contains("9/9 · solved 1"),
        "{progress:?}"
    );
    // A run that stopped on an error says what the error was, everywhere.
    let said = "the model's call | was cut off: <tool_call>";
    assert!(
        progress
            .iter()
            .any(|l| l.contains("provider-error: error (") && l.ends_with(said)),
        "{progress:?}"
    );
    let records = results(&out);
    assert_eq!(by_task(&records, "solved")["solved"], true);
    for (name, kind) in [
        ("unknown-tool", "unknown_tool"),
        ("invalid-arguments", "invalid_arguments"),
        ("turn-limit", "turn_limit"),
        ("without-applying", "answered_without_applying"),
        ("gave-up", "gave_up"),
        ("check-failed", "check_failed"),
        ("time-limit", "time_limit"),
        ("provider-error", "error"),
    ] {
        let r = by_task(&records, name);
        assert_eq!(r["solved"], false, "{r}");
        assert_eq!(r["failure"], kind, "{r}");
    }
    let failed = by_task(&records, "check-failed");
    let checks = failed["checks"].as_array().unwrap();
    assert_eq!(
        (checks[0]["passed"].clone(), checks[1]["passed"].clone()),
        (json!(true), json!(false))
    );
    // The report groups the failures and lists every task.
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("Solved **1/9**"), "{report}");
    assert!(report.contains("unknown_tool 1"), "{report}");
    let errored = by_task(&records, "provider-error");
    let error = errored["error"].as_str().unwrap();
    assert!(
        error.contains("the model's call | was\ncut off: <tool_call>"),
        "{errored}"
    );
    assert!(
        report.contains(
            "- provider-error (provider_error): the model's call \\| was cut off: <tool_call>\n"
        ),
        "{report}"
    );
    assert!(by_task(&records, "check-failed").get("error").is_none());
}

#[test]
fn checks_run_in_the_sandbox_and_cannot_change_the_workspace_or_reach_the_home() {
    let env = Env::new();
    let suite = env.path("suite");
    std::fs::create_dir(&suite).unwrap();
    let marker = env.home.path().join("marker");
    std::fs::write(&marker, "secret").unwrap();
    let text = format!(
        "kind = \"probe\"\nprompt = \"Say hi.\"\nchecks = [\"touch written-by-check\", \"cat {}\"]\n\n[files]\n\"a.txt\" = \"x\"\n\n[replay]\nturns = [{{ text = \"hi\" }}]\n",
        marker.display()
    );
    std::fs::write(suite.join("probe.toml"), text).unwrap();
    let out = env.path("out");
    let o = eval(
        &env,
        &[
            "eval",
            suite.to_str().unwrap(),
            "--provider",
            "replay",
            "--keep",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let records = results(&out);
    let r = &records[0];
    let checks = r["checks"].as_array().unwrap();
    assert_eq!(checks[0]["passed"], false, "{r}");
    assert_eq!(checks[1]["passed"], false, "{r}");
    assert!(
        !checks[1]["output"].as_str().unwrap().contains("secret"),
        "{r}"
    );
    let kept = Path::new(r["workdir"].as_str().unwrap()).to_path_buf();
    assert!(kept.join("work/a.txt").is_file());
    assert!(!kept.join("work/written-by-check").exists());
    std::fs::remove_dir_all(kept).unwrap();
}

#[test]
fn compare_lists_what_was_solved_and_what_broke() {
    let env = Env::new();
    let record = |task: &str, solved: bool, failure: Value| {
        let group = if task == "a" { "new" } else { "original" };
        json!({"task": task, "kind": "k", "group": group, "solved": solved, "failure": failure,
               "provider": "local", "model": "m", "profile": "small", "stop_reason": "completed",
               "turns": 2, "tool_calls": 1, "unknown_tool_calls": 0, "invalid_argument_calls": 0,
               "nudges": 0, "input_tokens": 100, "output_tokens": 10, "cost_usd": 0.0,
               "wall_ms": 1000, "answer": "", "checks": []})
        .to_string()
    };
    let before = [
        record("a", false, json!("no_tool_call")),
        record("b", true, Value::Null),
        record("c", true, Value::Null),
    ]
    .join("\n");
    let after = [
        record("a", true, Value::Null),
        record("b", false, json!("check_failed")),
        record("c", true, Value::Null),
    ]
    .join("\n");
    std::fs::write(env.path("before.jsonl"), before).unwrap();
    std::fs::write(env.path("after.jsonl"), after).unwrap();
    let o = eval(&env, &["eval", "compare", "before.jsonl", "after.jsonl"]);
    assert_eq!(o.status.code(), Some(0));
    let text = stdout(&o);
    assert!(text.contains("| solved | 2/3 | 2/3 |"), "{text}");
    assert!(text.contains("| solved, original | 2/2 | 1/2 |"), "{text}");
    assert!(text.contains("| solved, new | 0/1 | 1/1 |"), "{text}");
    assert!(text.contains("- a: no_tool_call → solved"), "{text}");
    assert!(text.contains("- b: solved → check_failed"), "{text}");
    assert!(!text.contains("- c:"), "{text}");
}

#[test]
fn bad_suites_and_results_fail_with_one_clear_line() {
    let env = Env::new();
    let suite = env.path("suite");
    std::fs::create_dir(&suite).unwrap();
    let o = env.rein(&["eval", suite.to_str().unwrap(), "--provider", "replay"]);
    assert_clean_failure(&o, 2, "no tasks");
    std::fs::write(
        suite.join("escape.toml"),
        "kind = \"x\"\nprompt = \"p\"\nchecks = [\"true\"]\n[files]\n\"../outside.txt\" = \"x\"\n",
    )
    .unwrap();
    let o = env.rein(&["eval", suite.to_str().unwrap(), "--provider", "replay"]);
    assert_clean_failure(&o, 2, "must be a relative path inside the workspace");
    std::fs::write(
        suite.join("escape.toml"),
        "kind = \"x\"\nprompt = \"p\"\nchecks = [\"true\"]\ncolour = 1\n",
    )
    .unwrap();
    let o = env.rein(&["eval", suite.to_str().unwrap(), "--provider", "replay"]);
    assert_clean_failure(&o, 2, "escape.toml");
    std::fs::write(
        suite.join("escape.toml"),
        "kind = \"x\"\nprompt = \"p\"\nchecks = [\"true\"]\n",
    )
    .unwrap();
    let o = env.rein(&["eval", suite.to_str().unwrap(), "--provider", "replay"]);
    assert_clean_failure(&o, 2, "has no [replay] script");
    std::fs::write(env.path("bad.jsonl"), "{\"task\": 1}\n").unwrap();
    let o = env.rein(&["eval", "compare", "bad.jsonl", "bad.jsonl"]);
    assert_clean_failure(&o, 2, "is not a results file");
    assert!(!env.path("outside.txt").exists());
}

/// A suite (from a cloned repository, say) names `files_dir`: however it
/// spells a folder outside its own (`..`, an absolute path, a symlink),
/// nothing is copied and the task is named in one line.
#[test]
fn a_suites_files_dir_cannot_copy_a_folder_from_outside_the_suite() {
    let env = Env::new();
    let secret = env.home.path().join("dot-ssh");
    std::fs::create_dir(&secret).unwrap();
    std::fs::write(secret.join("id_rsa"), "PRIVATE KEY").unwrap();
    let suite = env.path("suite");
    std::fs::create_dir_all(suite.join("inside/sub")).unwrap();
    std::os::unix::fs::symlink(&secret, suite.join("keys")).unwrap();
    std::os::unix::fs::symlink(&secret, suite.join("inside/sub/deeper")).unwrap();
    let out = env.path("out");
    let spellings = [
        secret.display().to_string(),
        "../../home-secret".to_string(),
        "inside/../..".to_string(),
        "keys".to_string(),
        "./inside/sub/deeper".to_string(),
    ];
    for dir in spellings {
        std::fs::write(
            suite.join("steal.toml"),
            format!(
                "kind = \"x\"\nprompt = \"p\"\nchecks = [\"true\"]\nfiles_dir = {dir:?}\n\n[replay]\nturns = [{{ text = \"hi\" }}]\n"
            ),
        )
        .unwrap();
        let o = env.rein(&[
            "eval",
            suite.to_str().unwrap(),
            "--provider",
            "replay",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_clean_failure(&o, 2, "steal.toml: files_dir");
        assert!(!out.exists(), "{dir}: the suite ran");
    }
    // A folder inside the suite is copied.
    std::fs::write(suite.join("inside/data.txt"), "x").unwrap();
    std::fs::write(
        suite.join("steal.toml"),
        "kind = \"x\"\nprompt = \"p\"\nchecks = [\"test -f data.txt\"]\nfiles_dir = \"inside\"\n\n[replay]\nturns = [{ text = \"hi\" }]\n",
    )
    .unwrap();
    let o = eval(
        &env,
        &[
            "eval",
            suite.to_str().unwrap(),
            "--provider",
            "replay",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// The user's `store` (or `REIN_STORE`) may be a PostgreSQL database with
/// every session and global memory of theirs, and their config starts MCP
/// servers: an eval's run uses neither, only its fresh home.
#[test]
fn an_eval_task_runs_on_a_fresh_store_and_not_the_users_store_or_servers() {
    let env = Env::new();
    let started = env.home.path().join("server-started");
    std::fs::write(
        env.home.path().join("config.toml"),
        format!(
            "store = \"postgres://rein@127.0.0.1:1/users_sessions\"\n\n[mcp_servers.mine]\ncommand = \"sh\"\nargs = [\"-c\", \"touch {}\"]\n",
            started.display()
        ),
    )
    .unwrap();
    let suite = env.path("suite");
    std::fs::create_dir(&suite).unwrap();
    std::fs::write(
        suite.join("probe.toml"),
        "kind = \"x\"\nprompt = \"Say hi.\"\nchecks = [\"grep -q hi \\\"$ANSWER_FILE\\\"\"]\n\n[replay]\nturns = [{ text = \"hi\" }]\n",
    )
    .unwrap();
    let out = env.path("out");
    let o = env
        .command()
        .env("REIN_STORE", "postgres://rein@127.0.0.1:1/users_sessions")
        .args([
            "eval",
            suite.to_str().unwrap(),
            "--provider",
            "replay",
            "--keep",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    eprintln!("stdout: {}\nstderr: {}", stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{:?}", results(&out));
    let records = results(&out);
    let kept = Path::new(records[0]["workdir"].as_str().unwrap()).to_path_buf();
    let config = std::fs::read_to_string(kept.join("home/config.toml")).unwrap();
    assert!(
        !config.contains("postgres") && !config.contains("mcp_servers"),
        "{config}"
    );
    assert!(!started.exists(), "the user's MCP server ran for the eval");
    std::fs::remove_dir_all(kept).unwrap();
}

/// Floor under the default (1.5B) model's last recorded count on the public
/// suite, 10/34 (BENCHMARKS.md; greedy decoding, so a drop is a change).
const PUBLIC_SUITE_FLOOR: usize = 8;

/// The public suite on the real default local model (slow: tens of
/// minutes; the 1.5B model must be in the models folder). Run with
/// `cargo test --release -p rein-cli --test cli -- --ignored --nocapture the_public_suite_on`.
#[test]
#[ignore]
fn the_public_suite_on_the_local_model() {
    let env = Env::new();
    let out = repo_root().join("target/eval-local");
    let suite = repo_root().join("evals");
    let models = std::env::var("REIN_MODELS_DIR")
        .unwrap_or_else(|_| format!("{}/.cache/rein/models", std::env::var("HOME").unwrap()));
    let o = env
        .command()
        .env("REIN_MODELS_DIR", models)
        .args([
            "eval",
            suite.to_str().unwrap(),
            "--provider",
            "local",
            "--model",
            "medium",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    eprintln!("{}", stderr(&o));
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    println!("{report}");
    let records = results(&out);
    let tasks = std::fs::read_dir(&suite)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "toml")
        })
        .count();
    assert_eq!(records.len(), tasks, "every task of the suite has a record");
    let solved = records.iter().filter(|r| r["solved"] == true).count();
    assert!(
        solved >= PUBLIC_SUITE_FLOOR,
        "{solved}/{tasks} solved, floor {PUBLIC_SUITE_FLOOR}"
    );
}
