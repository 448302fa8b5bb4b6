//! `rein model` on a home: its commands on an empty one, picking the small
//! model, finding a fetched file in the cache or a moved models folder,
//! verifying a file's hash.

use std::path::Path;

use super::{SMALL_FILE, SMALL_SHA256, SMALL_SIZE, real_model};
use crate::cli::support::*;

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

/// A temporary REIN_HOME whose models folder links to the real model.
fn home_with(model: &Path) -> Env {
    let env = Env::new();
    let models = env.home.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    std::os::unix::fs::symlink(model, models.join(SMALL_FILE)).unwrap();
    env
}

#[test]
fn the_real_model_verifies() {
    let Some((model, _cores)) = real_model() else {
        return;
    };
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

/// A fresh `rein exec` (no provider, no key, no model configured) picks the
/// default 1.5B model's file when both known files are in the models
/// folder; checked without downloading it: the files here are GGUF stubs of
/// the wrong size, so the run stops at the size check, naming the file it
/// chose.
#[test]
fn a_fresh_exec_picks_the_1_5b_model_by_default() {
    let env = Env::new();
    let models = tempfile::tempdir().unwrap();
    let medium = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf";
    for name in [SMALL_FILE, medium] {
        std::fs::write(models.path().join(name), b"GGUF stub").unwrap();
    }
    let o = env
        .command()
        .env("REIN_MODELS_DIR", models.path())
        .args(["exec", "hello"])
        .output()
        .unwrap();
    assert_ne!(o.status.code(), Some(0));
    let err = stderr(&o);
    assert!(
        err.contains(medium) && err.contains("expected 1117320768"),
        "{err}"
    );
    assert!(!err.contains(SMALL_FILE), "{err}");
    // With only the 0.5B file there, it is still not picked.
    std::fs::remove_file(models.path().join(medium)).unwrap();
    let o = env
        .command()
        .env("REIN_MODELS_DIR", models.path())
        .args(["exec", "hello"])
        .output()
        .unwrap();
    assert_ne!(o.status.code(), Some(0));
    assert!(!stderr(&o).contains(SMALL_FILE), "{}", stderr(&o));
}
