//! Marketplaces: a folder or git repository with
//! `.claude-plugin/marketplace.json` (`name`, and `plugins`: each a `name`
//! and a `source`: a path inside the marketplace, under its
//! `metadata.pluginRoot` when it gives one; `{"source": "url", "url":
//! GIT-URL}`; or `{"source": "github", "repo": "OWNER/REPO"}`, either with
//! an optional `ref`). `rein plugin marketplace add` copies it into
//! `$REIN_HOME/marketplaces/NAME/` and records it in
//! `$REIN_HOME/marketplaces.json`; `rein plugin install PLUGIN@NAME`
//! installs one of its plugins.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::manifest::valid_name;

/// The marketplace file inside a marketplace.
const MANIFEST: &str = ".claude-plugin/marketplace.json";
/// The record's file under `$REIN_HOME`.
const FILE: &str = "marketplaces.json";

/// One added marketplace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Market {
    pub name: String,
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

/// What `marketplaces.json` holds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Markets {
    pub marketplaces: Vec<Market>,
}

/// The folder of marketplace copies.
pub fn markets_dir(home: &Path) -> PathBuf {
    home.join("marketplaces")
}

impl Markets {
    pub fn load(home: &Path) -> Result<Markets, String> {
        super::store::read_record(&home.join(FILE), "marketplace record")
    }

    pub fn save(&self, home: &Path) -> Result<(), String> {
        super::store::write_record(home, FILE, self)
    }

    pub fn get(&self, name: &str) -> Option<&Market> {
        self.marketplaces.iter().find(|m| m.name == name)
    }
}

/// One plugin a marketplace offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    pub name: String,
    /// What `install` is given: a folder inside the marketplace, or a git
    /// URL.
    pub source: String,
}

/// A marketplace's name and offers, read from its folder `root`. The
/// error is one line naming the file.
pub fn read(root: &Path) -> Result<(String, Vec<Offer>), String> {
    let path = root.join(MANIFEST);
    let shown = path.display();
    // Bounded, and a regular file only (a FIFO would hang the command).
    let text = crate::settings_file::read_text(&path, "marketplace file")
        .map_err(|e| format!("{e:#}"))?
        .ok_or_else(|| {
            format!(
                "{} is not a marketplace: it has no {MANIFEST}",
                root.display()
            )
        })?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{shown}: not valid JSON: {e}"))?;
    let name = value["name"].as_str().unwrap_or_default().to_string();
    if !valid_name(&name) {
        return Err(format!(
            "{shown}: `{name}` is not a marketplace name (letters, digits, `-`, `_`)"
        ));
    }
    // Relative sources are under the plugin root the marketplace names.
    let base = value["metadata"]["pluginRoot"].as_str().unwrap_or(".");
    let mut offers = Vec::new();
    for entry in value["plugins"].as_array().into_iter().flatten() {
        let Some(plugin) = entry["name"].as_str() else {
            continue;
        };
        let with_ref = |url: String, at: &serde_json::Value| match at["ref"].as_str() {
            Some(r) => format!("{url}@{r}"),
            None => url,
        };
        let source = match &entry["source"] {
            serde_json::Value::String(rel) => {
                inside(root, &Path::new(base).join(rel)).map(|p| p.display().to_string())
            }
            other if other["source"] == "url" => other["url"]
                .as_str()
                .map(|u| with_ref(u.to_string(), other)),
            other if other["source"] == "github" => other["repo"]
                .as_str()
                .filter(|r| github_repo(r))
                .map(|r| with_ref(format!("https://github.com/{r}.git"), other)),
            _ => None,
        };
        if let Some(source) = source {
            offers.push(Offer {
                name: plugin.to_string(),
                source,
            });
        }
    }
    Ok((name, offers))
}

/// Whether `repo` is `OWNER/REPO` and nothing more.
fn github_repo(repo: &str) -> bool {
    let part = |p: &str| {
        !p.is_empty()
            && !p.starts_with('.')
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    matches!(repo.split_once('/'), Some((owner, name)) if part(owner) && part(name))
}

/// When `folder` (given to `install`) is a marketplace and no plugin:
/// how to install from it instead.
pub fn as_marketplace_hint(folder: &Path) -> Option<String> {
    let (name, offers) = read(folder).ok()?;
    let names: Vec<&str> = offers.iter().map(|o| o.name.as_str()).collect();
    Some(format!(
        "{} is the marketplace `{name}`, not a plugin: add it with `rein plugin marketplace add`, \
         then install one of its plugins as PLUGIN@{name} ({})",
        folder.display(),
        if names.is_empty() {
            "it offers none".to_string()
        } else {
            names.join(", ")
        }
    ))
}

/// `rel` under `root` when it really is inside it.
fn inside(root: &Path, rel: &Path) -> Option<PathBuf> {
    let real_root = root.canonicalize().ok()?;
    let path = root.join(rel).canonicalize().ok()?;
    path.starts_with(&real_root).then_some(path)
}

/// `PLUGIN@MARKET` when `text` is one (two names, and no such folder).
pub fn parse_offer(text: &str) -> Option<(&str, &str)> {
    let (plugin, market) = text.split_once('@')?;
    (valid_name(plugin) && valid_name(market) && !Path::new(text).exists())
        .then_some((plugin, market))
}

/// The source `install PLUGIN@MARKET` installs from.
pub fn resolve(home: &Path, plugin: &str, market: &str) -> Result<String, String> {
    let markets = Markets::load(home)?;
    if markets.get(market).is_none() {
        return Err(format!(
            "no marketplace named `{market}` (`rein plugin marketplace add PATH|GIT-URL` first)"
        ));
    }
    let (_, offers) = read(&markets_dir(home).join(market))?;
    offers
        .into_iter()
        .find(|o| o.name == plugin)
        .map(|o| o.source)
        .ok_or_else(|| {
            format!("marketplace `{market}` offers no plugin `{plugin}` that rein can install")
        })
}

/// `rein plugin marketplace add SOURCE`: copy it in and record it.
pub fn add(home: &Path, text: &str) -> Result<(), String> {
    let dir = markets_dir(home);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let staging = tempfile::tempdir_in(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let origin = super::fetch(text, staging.path())?;
    let (name, offers) = read(&origin.folder)?;
    let mut markets = Markets::load(home)?;
    let root = dir.join(&name);
    if markets.get(&name).is_some() || root.symlink_metadata().is_ok() {
        return Err(format!("a marketplace named `{name}` is already added"));
    }
    let copied = staging.path().join(&name);
    super::copy::copy_tree(&origin.folder, &copied)?;
    std::fs::rename(&copied, &root).map_err(|e| format!("{}: {e}", root.display()))?;
    markets.marketplaces.push(Market {
        name: name.clone(),
        source: origin.source,
        commit: origin.commit,
    });
    markets.save(home)?;
    let names: Vec<&str> = offers.iter().map(|o| o.name.as_str()).collect();
    crate::output::out(&format!(
        "added marketplace {name}: {}",
        if names.is_empty() {
            "no plugins".to_string()
        } else {
            names.join(", ")
        }
    ));
    Ok(())
}

/// `rein plugin marketplace list`.
pub fn list(home: &Path) -> Result<(), String> {
    let markets = Markets::load(home)?;
    if markets.marketplaces.is_empty() {
        crate::output::out("no marketplaces added (`rein plugin marketplace add PATH|GIT-URL`)");
    }
    for m in &markets.marketplaces {
        let offers = read(&markets_dir(home).join(&m.name))
            .map(|(_, o)| o.into_iter().map(|o| o.name).collect::<Vec<_>>().join(", "))
            .unwrap_or_else(|e| e);
        crate::output::out(&format!("{}  from {}  offers: {offers}", m.name, m.source));
    }
    Ok(())
}

/// `rein plugin marketplace remove NAME` (its plugins stay installed).
pub fn remove(home: &Path, name: &str) -> Result<(), String> {
    let mut markets = Markets::load(home)?;
    if markets.get(name).is_none() {
        return Err(format!("no marketplace named `{name}`"));
    }
    markets.marketplaces.retain(|m| m.name != name);
    markets.save(home)?;
    let root = markets_dir(home).join(name);
    if root.exists() {
        std::fs::remove_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    }
    crate::output::out(&format!("removed marketplace {name}"));
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn market(json: serde_json::Value) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".claude-plugin")).unwrap();
        std::fs::write(dir.path().join(MANIFEST), json.to_string()).unwrap();
        dir
    }

    #[test]
    fn offers_come_from_the_plugin_root_a_git_url_or_a_github_repo_and_nothing_leads_out() {
        let dir = market(serde_json::json!({"name": "tools",
        "metadata": {"pluginRoot": "./plugins"},
        "plugins": [
            {"name": "fmt", "source": "fmt"},
            {"name": "out", "source": "../../etc"},
            {"name": "remote", "source": {"source": "url", "url": "/srv/fmt.git", "ref": "v1"}},
            {"name": "hub", "source": {"source": "github", "repo": "acme/lint"}},
            {"name": "badhub", "source": {"source": "github", "repo": "../x/y"}},
            {"name": "other", "source": {"source": "npm", "package": "x"}}
        ]}));
        std::fs::create_dir_all(dir.path().join("plugins/fmt")).unwrap();
        let (name, offers) = read(dir.path()).unwrap();
        assert_eq!(name, "tools");
        let real = dir.path().canonicalize().unwrap();
        let got: Vec<(&str, String)> = offers
            .iter()
            .map(|o| (o.name.as_str(), o.source.clone()))
            .collect();
        assert_eq!(
            got,
            [
                ("fmt", real.join("plugins/fmt").display().to_string()),
                ("remote", "/srv/fmt.git@v1".to_string()),
                ("hub", "https://github.com/acme/lint.git".to_string()),
            ]
        );
        let hint = as_marketplace_hint(dir.path()).unwrap();
        assert!(
            hint.contains("is the marketplace `tools`, not a plugin"),
            "{hint}"
        );
        assert!(hint.contains("PLUGIN@tools (fmt, remote, hub)"), "{hint}");
    }
}
