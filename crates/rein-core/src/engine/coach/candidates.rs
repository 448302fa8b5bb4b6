//! Candidates, verified (the `candidates` lever of [`crate::profile`]):
//! what a candidate is asked, how warm it is sampled, and which files
//! are the check's own (a candidate may not change them). The run's side
//! is `engine/run/candidates.rs`; the scratch copies, `engine/scratch.rs`.
//!
//! Steps (for candidate `i`):
//! 1. [`instruction`]: the check's failure, worded one of
//!    [`WORDINGS`]' ways, asking for a different fix.
//! 2. [`temperature`]: warmer than the turns' own sampling, and warmer
//!    with each candidate.
//! 3. [`is_check_file`]: a file the command names, a test file by its
//!    name or folder, or a test runner's settings: these must be the same
//!    in the scratch copy as in the workspace for a candidate to count.

use std::path::{Component, Path};

/// Bytes of the check's output a candidate is shown (its end).
const OUTPUT_BYTES: usize = 1200;

/// The ways a candidate is asked (one each, in turn): differently worded
/// so that a greedy model does not answer the same twice.
const WORDINGS: [&str; 3] = [
    "[rein] Your fix did not make `{command}` pass:\n{output}\nWrite a different fix: \
     re-read what the check expects and edit the code under test with edit_file (not the test).",
    "[rein] `{command}` still fails after your change:\n{output}\nTry another approach to \
     the bug: find the line the error points to and change the source, never the check.",
    "[rein] The check `{command}` fails with:\n{output}\nMake one edit to the code it tests \
     so that it passes. Do not edit or delete the test.",
];

/// Temperatures of the candidates, in turn (the last repeats).
const TEMPERATURES: [f32; 3] = [0.6, 0.8, 1.0];

/// Runner settings a check reads besides its own files.
const RUNNER_FILES: &[&str] = &[
    "Makefile",
    "makefile",
    "GNUmakefile",
    "pytest.ini",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
    "conftest.py",
    "package.json",
    "Cargo.toml",
    "go.mod",
    "AGENTS.md",
];

/// What candidate `i` (from 0) is asked, after `command` failed with
/// `output`.
pub(crate) fn instruction(i: u32, command: &str, output: &str) -> String {
    let wording = WORDINGS[i as usize % WORDINGS.len()];
    wording
        .replace("{command}", command)
        .replace("{output}", tail(output, OUTPUT_BYTES))
}

/// The temperature candidate `i` (from 0) is sampled at.
pub(crate) fn temperature(i: u32) -> f32 {
    TEMPERATURES[(i as usize).min(TEMPERATURES.len() - 1)]
}

/// The last `bytes` of `text` (at a character boundary).
fn tail(text: &str, bytes: usize) -> &str {
    let mut start = text.len().saturating_sub(bytes);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// Whether the file at `rel` (relative to the workspace) is one of the
/// check's own: named by `command` (or inside a folder it names), a test
/// file by its name (`test_*`, `*_test.*`, `*.test.*`, `*_spec.*`) or its
/// folder (`test`, `tests`, `spec`), or a runner's settings. Python's
/// byte-code caches are none of them (running the tests makes them).
pub(crate) fn is_check_file(rel: &Path, command: &str) -> bool {
    let cache = rel.extension().is_some_and(|e| e == "pyc")
        || rel.components().any(|c| c.as_os_str() == "__pycache__");
    if cache {
        return false;
    }
    let named = command.split_whitespace().any(|word| {
        let word = word.trim_matches(|c| c == '"' || c == '\'');
        let word = word.strip_prefix("./").unwrap_or(word);
        let word = Path::new(word.trim_end_matches('/'));
        !word.as_os_str().is_empty() && rel.starts_with(word)
    });
    if named {
        return true;
    }
    let in_test_folder = rel.parent().is_some_and(|p| {
        p.components().any(|c| match c {
            Component::Normal(n) => matches!(n.to_str(), Some("test" | "tests" | "spec")),
            _ => false,
        })
    });
    let Some(name) = rel.file_name().and_then(|n| n.to_str()) else {
        return in_test_folder;
    };
    let stem = name.split('.').next().unwrap_or(name);
    in_test_folder
        || RUNNER_FILES.contains(&name)
        || stem.starts_with("test_")
        || stem == "test"
        || stem.ends_with("_test")
        || stem.ends_with("_spec")
        || name.contains(".test.")
        || name.contains(".spec.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_candidate_is_asked_differently_and_sampled_warmer() {
        let asked: Vec<String> = (0..3)
            .map(|i| instruction(i, "python3 test_calc.py", "AssertionError\n[exit code: 1]"))
            .collect();
        for text in &asked {
            assert!(text.contains("`python3 test_calc.py`") && text.contains("AssertionError"));
        }
        assert!(asked[0] != asked[1] && asked[1] != asked[2] && asked[0] != asked[2]);
        assert_eq!(instruction(3, "c", "o"), instruction(0, "c", "o"));
        assert!(temperature(0) > 0.0 && temperature(0) < temperature(1));
        assert_eq!(temperature(9), temperature(2));
        // A long output is cut to its end, where the error is.
        let long = format!("{}END", "é".repeat(2000));
        let text = instruction(0, "c", &long);
        assert!(text.contains("END") && text.len() < 2000);
    }

    #[test]
    fn the_checks_own_files_are_named_test_files_and_runner_settings() {
        let cmd = "python3 -m pytest -q checks/ && sh ./run_it.sh";
        for yes in [
            "checks/a.py",
            "run_it.sh",
            "test_calc.py",
            "calc_test.go",
            "src/tests/helpers.py",
            "web/app.test.js",
            "conftest.py",
            "sub/conftest.py",
            "Makefile",
            "AGENTS.md",
        ] {
            assert!(is_check_file(Path::new(yes), cmd), "{yes}");
        }
        for no in [
            "calc.py",
            "src/app.py",
            "latest.py",
            "contest.py",
            "checksum.py",
            "__pycache__/test_calc.cpython-312.pyc",
            "tests/__pycache__/conftest.cpython-312.pyc",
        ] {
            assert!(!is_check_file(Path::new(no), cmd), "{no}");
        }
    }
}
