//! `rein plugin`: Claude Code plugins installed from a folder or a git
//! repository ([`git`]) into `$REIN_HOME/plugins/NAME/`, recorded with a
//! digest of their files (and the commit, from git)
//! ([`store`]), listed, removed, enabled and disabled. An enabled plugin's
//! commands, agents, skills and hooks load with the user's own ([`load`]),
//! its MCP servers with the user's servers (`mcp::plugins`).

use std::path::{Path, PathBuf};

use anyhow::anyhow;

use crate::exit::{COMPLETED, Failure};
use crate::output::{err, out};

mod copy;
mod git;
pub mod load;
pub mod manifest;
mod market;
mod store;
mod update;

use manifest::Part;
use store::{Installed, Registry, plugins_dir, root_of};

/// What `rein plugin` was asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Install(PathBuf),
    /// Add a marketplace from a folder or git URL.
    MarketAdd(String),
    MarketList,
    MarketRemove(String),
    List {
        json: bool,
    },
    Remove(String),
    /// Update a plugin from its source; `yes`: without asking.
    Update {
        name: String,
        yes: bool,
    },
    /// Enable (true) or disable (false).
    Enable(String, bool),
}

/// `rein plugin ...` against `$REIN_HOME`.
pub fn run(action: Action, home: &Path) -> Result<i32, Failure> {
    crate::home::secure(home);
    let mut registry = Registry::load(home).map_err(|e| Failure::usage(anyhow!(e)))?;
    match action {
        Action::Install(path) => install(&mut registry, home, &path)?,
        Action::MarketAdd(source) => market::add(home, &source).map_err(usage)?,
        Action::MarketList => market::list(home).map_err(usage)?,
        Action::MarketRemove(name) => market::remove(home, &name).map_err(usage)?,
        Action::List { json } => list(&registry, home, json),
        Action::Update { name, yes } => {
            known(&registry, &name)?;
            update::update(&mut registry, home, &name, yes)?;
        }
        Action::Remove(name) => {
            known(&registry, &name)?;
            registry.plugins.retain(|p| p.name != name);
            save(&registry, home)?;
            let root = root_of(home, &name);
            std::fs::remove_dir_all(&root)
                .or_else(|e| match e.kind() {
                    std::io::ErrorKind::NotFound => Ok(()),
                    _ => Err(e),
                })
                .map_err(|e| Failure::harness(anyhow!("{}: {e}", root.display())))?;
            out(&format!("removed {name}"));
        }
        Action::Enable(name, on) => {
            known(&registry, &name)?;
            if let Some(p) = registry.get_mut(&name) {
                p.enabled = on;
            }
            save(&registry, home)?;
            out(&format!(
                "{} {name}",
                if on { "enabled" } else { "disabled" }
            ));
        }
    }
    Ok(COMPLETED)
}

/// A one-line error as a usage failure.
fn usage(e: String) -> Failure {
    Failure::usage(anyhow!(e))
}

fn known(registry: &Registry, name: &str) -> Result<(), Failure> {
    match registry.get(name) {
        Some(_) => Ok(()),
        None => Err(Failure::usage(anyhow!(
            "no plugin named `{name}` is installed (`rein plugin list` shows them)"
        ))),
    }
}

fn save(registry: &Registry, home: &Path) -> Result<(), Failure> {
    registry
        .save(home)
        .map_err(|e| Failure::harness(anyhow!(e)))
}

/// A plugin fetched for installing: the folder holding it, and what the
/// record says of where it came from.
struct Origin {
    folder: PathBuf,
    source: String,
    commit: Option<String>,
}

/// A scratch folder beside the plugins' own, so that a failure leaves
/// nothing and a finished copy moves in with one rename.
fn staging(home: &Path) -> Result<tempfile::TempDir, Failure> {
    let dir = plugins_dir(home);
    let fail = |e: std::io::Error| Failure::usage(anyhow!("{}: {e}", dir.display()));
    std::fs::create_dir_all(&dir).map_err(fail)?;
    tempfile::tempdir_in(&dir).map_err(fail)
}

/// The plugin `text` names: a folder as it is, or a git URL cloned into
/// `staging`. The error is one line.
fn fetch(text: &str, staging: &Path) -> Result<Origin, String> {
    let path = Path::new(text);
    let is_folder = path.join(manifest::MANIFEST).symlink_metadata().is_ok();
    if let Some(repo) = git::parse(text).filter(|_| !is_folder) {
        let clone = staging.join(".clone");
        let commit = git::fetch(&repo, &clone)?;
        return Ok(Origin {
            folder: clone,
            source: recorded_git_source(&repo),
            commit: Some(commit),
        });
    }
    let folder = path
        .canonicalize()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Origin {
        source: folder.display().to_string(),
        folder,
        commit: None,
    })
}

/// A git source as the record keeps it: a local repository by its full
/// path, so `update` finds it again from any folder; a URL as given.
fn recorded_git_source(repo: &git::GitSource) -> String {
    let local = Path::new(&repo.url);
    let url = match (repo.url.contains("://"), local.canonicalize()) {
        (false, Ok(full)) => full.display().to_string(),
        _ => repo.url.clone(),
    };
    match &repo.reference {
        Some(r) => format!("{url}@{r}"),
        None => url,
    }
}

/// Install the plugin at `path`: a folder, or a git URL cloned first.
fn install(registry: &mut Registry, home: &Path, path: &Path) -> Result<(), Failure> {
    let text = path.to_string_lossy();
    let text = match market::parse_offer(&text) {
        Some((plugin, market)) => market::resolve(home, plugin, market).map_err(usage)?,
        None => text.to_string(),
    };
    let staging = staging(home)?;
    let origin = fetch(&text, staging.path()).map_err(usage)?;
    install_from(registry, home, staging.path(), origin)
}

/// Copy the plugin of `origin` in through `staging` and record it.
fn install_from(
    registry: &mut Registry,
    home: &Path,
    staging: &Path,
    origin: Origin,
) -> Result<(), Failure> {
    let bad = |e: String| Failure::usage(anyhow!(e));
    let source = origin.folder.as_path();
    let manifest = manifest::read(source)
        .map_err(|e| market::as_marketplace_hint(source).unwrap_or(e))
        .map_err(bad)?;
    let name = manifest.name.clone();
    let root = root_of(home, &name);
    if registry.get(&name).is_some() || root.symlink_metadata().is_ok() {
        return Err(bad(format!(
            "a plugin named `{name}` is already installed (`rein plugin remove {name}` first)"
        )));
    }
    let copied = staging.join(&name);
    copy::copy_tree(source, &copied).map_err(bad)?;
    let digest = copy::digest(&copied).map_err(bad)?;
    std::fs::rename(&copied, &root).map_err(|e| bad(format!("{}: {e}", root.display())))?;
    registry.plugins.push(Installed {
        name: name.clone(),
        version: manifest.version.clone(),
        description: manifest.description.clone(),
        source: origin.source,
        commit: origin.commit.clone(),
        digest,
        enabled: true,
    });
    save(registry, home)?;
    let parts = manifest::parts(&root);
    out(&format!(
        "installed {name}{}{} ({})",
        manifest
            .version
            .map(|v| format!(" {v}"))
            .unwrap_or_default(),
        origin
            .commit
            .map(|c| format!(" at {c}"))
            .unwrap_or_default(),
        describe(&parts)
    ));
    for problem in &manifest.problems {
        err(&format!(
            "rein: note: {name}: plugin.json's {problem}; it is not used"
        ));
    }
    Ok(())
}

/// The parts, for a listing.
fn describe(parts: &[Part]) -> String {
    if parts.is_empty() {
        return "no parts".to_string();
    }
    parts
        .iter()
        .map(|p| p.label())
        .collect::<Vec<_>>()
        .join(", ")
}

/// One line per installed plugin: name, version, enabled, source (and
/// commit), its parts, and whether its files changed since install. What
/// `rein plugin list` prints and the app's `/plugins` shows.
pub fn summary_lines(home: &Path) -> Vec<String> {
    match Registry::load(home) {
        Ok(registry) => registry
            .plugins
            .iter()
            .map(|p| summary_line(p, home))
            .collect(),
        Err(e) => vec![e],
    }
}

fn summary_line(p: &Installed, home: &Path) -> String {
    let root = root_of(home, &p.name);
    let changed = copy::digest(&root).map_or(true, |d| d != p.digest);
    format!(
        "{} {}  {}  from {}{}  {}{}",
        p.name,
        p.version.as_deref().unwrap_or("(no version)"),
        if p.enabled { "enabled" } else { "disabled" },
        p.source,
        p.commit
            .as_deref()
            .map(|c| format!(" at {}", &c[..c.len().min(12)]))
            .unwrap_or_default(),
        describe(&manifest::parts(&root)),
        if changed {
            "  (its files changed since install)"
        } else {
            ""
        }
    )
}

/// `rein plugin list`.
fn list(registry: &Registry, home: &Path, json: bool) {
    if registry.plugins.is_empty() && !json {
        out("no plugins installed (`rein plugin install PATH`)");
        return;
    }
    for p in &registry.plugins {
        if !json {
            out(&summary_line(p, home));
            continue;
        }
        let root = root_of(home, &p.name);
        let parts = manifest::parts(&root);
        let changed = copy::digest(&root).map_or(true, |d| d != p.digest);
        let line = serde_json::json!({
            "name": p.name,
            "version": p.version,
            "description": p.description,
            "source": p.source,
            "commit": p.commit,
            "digest": p.digest,
            "enabled": p.enabled,
            "changed_since_install": changed,
            "parts": parts.iter().map(|p| p.label()).collect::<Vec<_>>(),
        });
        out(&line.to_string());
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// A local repository is recorded by its full path (so `update` from
    /// another folder finds it); a URL as it was given, ref kept.
    #[test]
    fn a_local_git_source_is_recorded_by_its_full_path() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("tidy.git");
        std::fs::create_dir(&repo).unwrap();
        let relative = pathdiff(&repo);
        let parsed = git::parse(&format!("{relative}@v1")).unwrap();
        let full = repo.canonicalize().unwrap();
        assert_eq!(
            recorded_git_source(&parsed),
            format!("{}@v1", full.display())
        );
        let url = git::parse("https://example.org/tidy.git").unwrap();
        assert_eq!(recorded_git_source(&url), "https://example.org/tidy.git");
    }

    /// `path` relative to the current folder.
    fn pathdiff(path: &Path) -> String {
        let cwd = std::env::current_dir().unwrap().canonicalize().unwrap();
        let up = cwd.components().count() - 1;
        let mut out = "../".repeat(up);
        let full = path.canonicalize().unwrap();
        out.push_str(full.strip_prefix("/").unwrap().to_str().unwrap());
        out
    }

    /// What the app's `/plugins` shows is what `rein plugin list` prints:
    /// nothing before an install, then one line naming the plugin, its
    /// version, that it is enabled and its parts; a broken record is one
    /// line saying so, not a crash of the app.
    #[test]
    fn the_apps_plugin_lines_name_each_plugin_its_version_state_and_parts() {
        let home = tempfile::tempdir().unwrap();
        let src = tempfile::tempdir().unwrap();
        assert!(summary_lines(home.path()).is_empty());
        std::fs::create_dir_all(src.path().join(".claude-plugin")).unwrap();
        std::fs::write(
            src.path().join(manifest::MANIFEST),
            r#"{"name": "review", "version": "1.2.0"}"#,
        )
        .unwrap();
        std::fs::create_dir_all(src.path().join("commands")).unwrap();
        std::fs::write(src.path().join("commands/check.md"), "Check $ARGUMENTS").unwrap();
        run(Action::Install(src.path().to_path_buf()), home.path()).unwrap();
        let lines = summary_lines(home.path());
        assert_eq!(lines.len(), 1, "{lines:?}");
        let line = &lines[0];
        assert!(line.starts_with("review 1.2.0  enabled"), "{line}");
        assert!(line.contains("commands"), "{line}");
        assert!(!line.contains("changed since install"), "{line}");

        std::fs::write(home.path().join("plugins.json"), "{not json").unwrap();
        let lines = summary_lines(home.path());
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains("plugins.json"), "{lines:?}");
    }
}
