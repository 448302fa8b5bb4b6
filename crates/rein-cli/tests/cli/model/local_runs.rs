//! Running on the local model: a path that is not a model, the config's
//! `[local]` section checked, a truncated file, and (with the `local`
//! feature) a real task.

use super::{SMALL_FILE, real_model};
use crate::cli::support::*;

#[test]
fn a_model_path_that_is_not_a_model_is_one_clear_line() {
    let env = Env::new();
    let text = env.home.path().join("notes.txt");
    std::fs::write(&text, "just some text\n").unwrap();
    let o = env.rein(&["exec", "--model-path", text.to_str().unwrap(), "hi"]);
    assert_clean_failure(&o, 2, "is not a GGUF model file");
    let o = env.rein(&["exec", "--model-path", "/no/model.gguf", "hi"]);
    assert_clean_failure(&o, 2, "the model file /no/model.gguf does not exist");
    let o = env
        .command()
        .args(["exec", "--provider", "local", "hi"])
        .env("REIN_MODEL_PATH", &text)
        .output()
        .unwrap();
    assert_clean_failure(&o, 2, "is not a GGUF model file");
    let o = env.rein(&["exec", "--provider", "local", "hi"]);
    assert_clean_failure(&o, 2, "the default local model is not in");
    // A known model's file name with the wrong size is called truncated.
    let short = env.home.path().join(SMALL_FILE);
    std::fs::write(&short, b"GGUF\x03\0\0\0").unwrap();
    let o = env.rein(&["exec", "--model-path", short.to_str().unwrap(), "hi"]);
    assert_clean_failure(
        &o,
        2,
        "is truncated or damaged (8 bytes, expected 491400064)",
    );
    let o = env.rein(&[
        "exec",
        "--provider",
        "openai",
        "--model-path",
        short.to_str().unwrap(),
        "hi",
    ]);
    assert_clean_failure(&o, 2, "--model-path is for the local provider");
}

#[test]
fn the_local_section_of_the_config_is_checked() {
    let env = Env::new();
    std::fs::write(
        env.home.path().join("config.toml"),
        "[local]\nmodel_path = \"m.gguf\"\ncontext = 4096\n",
    )
    .unwrap();
    let o = env.rein(&["exec", "hi"]);
    assert_clean_failure(&o, 2, "unknown field `context`");
    // A relative model_path is relative to the config file's folder.
    std::fs::write(
        env.home.path().join("config.toml"),
        "provider = \"local\"\n[local]\nmodel_path = \"m.gguf\"\ncontext_size = 4096\nthreads = 2\ngrammar = true\ntool_results_as_user = false\n",
    )
    .unwrap();
    let o = env.rein(&["exec", "hi"]);
    let want = format!(
        "the model file {} does not exist",
        env.home.path().join("m.gguf").display()
    );
    assert_clean_failure(&o, 2, &want);
}

/// A truncated GGUF file that passes the quick checks fails to load cleanly.
#[cfg(feature = "local")]
#[test]
fn a_truncated_model_fails_to_load_with_one_line() {
    let Some((model, _cores)) = real_model() else {
        return;
    };
    let env = Env::new();
    let cut = env.home.path().join("cut.gguf");
    let mut head = vec![0u8; 4 << 20];
    std::io::Read::read_exact(&mut std::fs::File::open(&model).unwrap(), &mut head).unwrap();
    std::fs::write(&cut, head).unwrap();
    let o = env.rein(&["exec", "--model-path", cut.to_str().unwrap(), "hi"]);
    assert_clean_failure(&o, 2, "cannot load the local model");
}

/// A real (tiny) task on the real model, with no key anywhere. Bounded:
/// one short answer is expected, three turns at most.
#[cfg(feature = "local")]
#[test]
fn exec_runs_a_task_on_the_local_model() {
    let Some((model, _cores)) = real_model() else {
        return;
    };
    let env = Env::new();
    let o = env.rein(&[
        "exec",
        "--json",
        "--max-turns",
        "3",
        "--model-path",
        model.to_str().unwrap(),
        "What is 2 + 3? Answer with just the number.",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let events = json_lines(&o);
    assert_eq!(events[0]["type"], "run_started");
    assert_eq!(events[0]["provider"], "local");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "stopped");
    assert_eq!(last["reason"], "completed");
    let answer = last["final_text"].as_str().unwrap();
    assert!(answer.contains('5'), "{answer}");
    // The model's progress is in the event stream: the whole prompt read,
    // before the first turn's answer.
    let progress: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["type"] == "model_progress")
        .map(|e| &e["progress"])
        .collect();
    assert!(
        progress.iter().any(|p| p["stage"] == "prompt"
            && p["done"] == p["total"]
            && p["total"].as_u64() > Some(0)),
        "{progress:?}"
    );
}

/// Piped (a log, not a terminal), `rein exec` writes no progress lines:
/// the model's progress is redrawn in place only on a terminal.
#[cfg(feature = "local")]
#[test]
fn exec_on_the_local_model_writes_no_progress_lines_to_a_pipe() {
    let Some((model, _cores)) = real_model() else {
        return;
    };
    let env = Env::new();
    let o = env.rein(&[
        "exec",
        "--max-turns",
        "2",
        "--model-path",
        model.to_str().unwrap(),
        "What is 2 + 3? Answer with just the number.",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        !err.contains("Ctrl-C to interrupt") && !err.contains('\r'),
        "{err}"
    );
    assert!(err.contains("done ·"), "{err}");
}
