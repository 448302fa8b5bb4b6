//! `@python`, `@node` and `@rust`: the package hosts an ecosystem's own
//! tools are set up to use on this machine, asked when a host list names
//! them (never at every start).
//!
//! rein ships no list of registry hosts: each preset asks the ecosystem.
//! - `@python`: the indexes pip is configured with (its global, user and
//!   site files, and `PIP_*` variables): `index-url`, `extra-index-url`,
//!   `find-links` and `trusted-host`; plus the default index and its file
//!   host as the installed pip names them, unless `index-url` replaces it.
//! - `@node`: npm's `registry` and every `@scope:registry`, as
//!   `npm config list --json` gives them (the default registry included
//!   when none is set).
//! - `@rust`: the registries cargo has used (the folders of
//!   `$CARGO_HOME/registry/index`, with the download and API hosts their
//!   `config.json` names) and those the user's `$CARGO_HOME/config.toml`
//!   names as sources or registries.
//!
//! pip and npm run as every host process does (rein's empty folder, the
//! allowlisted environment, `python3 -I`), so a project's `.npmrc`,
//! `pip.conf` or `.cargo/config.toml` is never read, and cannot point a
//! preset at a host of its choosing. A preset that finds nothing, or whose
//! tool is missing, is an error saying how to name the hosts instead.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use rein_core::HostPattern;
use rein_core::host_process::{HostLaunch, ProcessGroup};

/// The ecosystems these presets cover, by preset name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ecosystem {
    Python,
    Node,
    Rust,
}

impl Ecosystem {
    pub const ALL: [Ecosystem; 3] = [Ecosystem::Python, Ecosystem::Node, Ecosystem::Rust];

    pub fn from_name(name: &str) -> Option<Ecosystem> {
        Ecosystem::ALL.into_iter().find(|e| e.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            Ecosystem::Python => "python",
            Ecosystem::Node => "node",
            Ecosystem::Rust => "rust",
        }
    }

    /// The tool asked, for messages.
    fn tool(self) -> &'static str {
        match self {
            Ecosystem::Python => "pip",
            Ecosystem::Node => "npm",
            Ecosystem::Rust => "cargo",
        }
    }
}

/// An ecosystem's hosts, or why there are none.
type Found = Result<Vec<HostPattern>, String>;

/// The longest a tool may take to answer.
const TOOL_TIMEOUT: Duration = Duration::from_secs(20);

/// The hosts of preset `@name`, when it is an ecosystem's: asked once per
/// process. `Err` says why there are none.
pub fn preset(name: &str) -> Option<Found> {
    let ecosystem = Ecosystem::from_name(name)?;
    static FOUND: OnceLock<Mutex<Vec<(Ecosystem, Found)>>> = OnceLock::new();
    let found = FOUND.get_or_init(Default::default);
    let mut found = found.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, hosts)) = found.iter().find(|(e, _)| *e == ecosystem) {
        return Some(hosts.clone());
    }
    let hosts = ask(ecosystem).and_then(|hosts| {
        if hosts.is_empty() {
            Err(format!(
                "{} names no package host on this machine",
                ecosystem.tool()
            ))
        } else {
            Ok(hosts)
        }
    });
    let hosts = hosts.map_err(|why| {
        format!(
            "@{}: {why}; name the hosts in a preset of your own ([permissions.presets] {} = [...])",
            ecosystem.name(),
            ecosystem.name()
        )
    });
    found.push((ecosystem, hosts.clone()));
    Some(hosts)
}

fn ask(ecosystem: Ecosystem) -> Result<Vec<HostPattern>, String> {
    let urls = match ecosystem {
        Ecosystem::Python => pip_hosts()?,
        Ecosystem::Node => npm_hosts()?,
        Ecosystem::Rust => cargo_hosts(&cargo_home().ok_or("no CARGO_HOME or HOME")?),
    };
    Ok(patterns(&urls))
}

/// Host patterns of URLs or host names: each host once, in order;
/// anything that is not a plain host is left out.
fn patterns(found: &[String]) -> Vec<HostPattern> {
    let mut out: Vec<HostPattern> = Vec::new();
    for item in found {
        let Some(host) = host_of(item) else { continue };
        if let Ok(p) = host.parse::<HostPattern>()
            && !out.contains(&p)
        {
            out.push(p);
        }
    }
    out
}

/// The host (and port, when given) of a URL such as
/// `sparse+https://user@host:8080/path`, or of a bare `host[:port]`.
fn host_of(item: &str) -> Option<String> {
    let item = item.trim().trim_matches(|c| c == '"' || c == '\'');
    if item.is_empty() || item.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return None;
    }
    let rest = match item.split_once("://") {
        Some((scheme, rest)) => {
            let scheme = scheme.rsplit('+').next().unwrap_or(scheme);
            if !matches!(scheme, "http" | "https" | "git" | "ssh") {
                return None;
            }
            rest
        }
        None if item.starts_with('/') || item.starts_with('.') => return None,
        None => item,
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit('@').next()?;
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// Run a host process and take its standard output, within the timeout.
fn run(mut cmd: Command) -> Result<String, String> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().map_err(|e| format!("cannot run it: {e}"))?;
    let group = ProcessGroup::of(child.id());
    let mut stdout = child.stdout.take().ok_or("no output")?;
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(
            &mut std::io::Read::take(&mut stdout, 1 << 20),
            &mut text,
        );
        text
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < TOOL_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(20))
            }
            _ => {
                drop(group);
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "it did not answer within {} s",
                    TOOL_TIMEOUT.as_secs()
                ));
            }
        }
    };
    drop(group);
    let text = reader.join().unwrap_or_default();
    if !status.success() {
        return Err(format!("it failed ({status})"));
    }
    Ok(text)
}

/// What pip reads besides its files: its own variables and the network's.
fn pip_launch() -> HostLaunch {
    HostLaunch {
        env_allow: std::env::vars_os()
            .filter_map(|(name, _)| name.into_string().ok())
            .filter(|name| {
                name.starts_with("PIP_") || name == "XDG_CONFIG_DIRS" || name == "VIRTUAL_ENV"
            })
            .collect(),
        ..HostLaunch::default()
    }
}

/// Asks the installed pip for its configuration and its default index.
const PIP_SCRIPT: &str = r#"
from pip._internal.configuration import Configuration
from pip._internal.models.index import PyPI
conf = Configuration(isolated=False)
conf.load()
replaced = False
for key, value in conf.items():
    name = key.rsplit(".", 1)[-1]
    if name in ("index-url", "extra-index-url", "find-links", "trusted-host"):
        if name == "index-url":
            replaced = True
        for item in str(value).split():
            print(item)
if not replaced:
    print(PyPI.url)
    print(PyPI.file_storage_domain)
"#;

fn pip_hosts() -> Result<Vec<String>, String> {
    let mut cmd = pip_launch().command("python3");
    cmd.args(["-I", "-c", PIP_SCRIPT]);
    let out = run(cmd).map_err(|e| format!("asking pip: {e}"))?;
    Ok(out.lines().map(str::to_string).collect())
}

fn npm_hosts() -> Result<Vec<String>, String> {
    let launch = HostLaunch {
        env_allow: std::env::vars_os()
            .filter_map(|(name, _)| name.into_string().ok())
            .filter(|name| name.to_ascii_lowercase().starts_with("npm_config_"))
            .collect(),
        ..HostLaunch::default()
    };
    let mut cmd = launch.command("npm");
    cmd.args(["config", "list", "--json"]);
    let out = run(cmd).map_err(|e| format!("asking npm: {e}"))?;
    npm_registries(&out)
}

/// `registry` and every `@scope:registry` of npm's JSON configuration.
fn npm_registries(json: &str) -> Result<Vec<String>, String> {
    let config: serde_json::Value =
        serde_json::from_str(json).map_err(|e| format!("npm's configuration is not JSON: {e}"))?;
    let object = config
        .as_object()
        .ok_or("npm's configuration is not an object")?;
    Ok(object
        .iter()
        .filter(|(key, _)| *key == "registry" || key.ends_with(":registry"))
        .filter_map(|(_, value)| value.as_str().map(str::to_string))
        .collect())
}

fn cargo_home() -> Option<PathBuf> {
    std::env::var_os("CARGO_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))
}

/// The registries of cargo's home: the index folders it keeps (named
/// `HOST-HASH`) with their `config.json`, and the user's config file.
fn cargo_hosts(home: &Path) -> Vec<String> {
    let mut found = Vec::new();
    if let Ok(entries) = std::fs::read_dir(home.join("registry").join("index")) {
        let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        dirs.sort();
        for dir in dirs {
            let Some(name) = dir.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if let Some((host, _hash)) = name.rsplit_once('-') {
                found.push(host.to_string());
            }
            found.extend(cargo_index_config(&dir.join("config.json")));
        }
    }
    for file in ["config.toml", "config"] {
        found.extend(cargo_config_urls(&home.join(file)));
    }
    found
}

/// Small files only, and only regular ones.
fn read_small(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > 256 * 1024 {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// `dl` and `api` of an index's `config.json`.
fn cargo_index_config(path: &Path) -> Vec<String> {
    let Some(value) =
        read_small(path).and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
    else {
        return Vec::new();
    };
    ["dl", "api"]
        .iter()
        .filter_map(|k| value.get(k)?.as_str().map(str::to_string))
        .collect()
}

/// `registry`/`index` URLs of `[source.*]` and `[registries.*]` in a
/// cargo config file.
fn cargo_config_urls(path: &Path) -> Vec<String> {
    let Some(value) = read_small(path).and_then(|t| t.parse::<toml::Table>().ok()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (section, key) in [("source", "registry"), ("registries", "index")] {
        let Some(table) = value.get(section).and_then(|v| v.as_table()) else {
            continue;
        };
        for entry in table.values() {
            if let Some(url) = entry.get(key).and_then(|v| v.as_str()) {
                out.push(url.to_string());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
