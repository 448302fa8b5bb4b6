//! Permission settings: `[permissions]` in config.toml and the JSON rules
//! files (`$REIN_HOME/settings.json`, `.rein/settings.json` and
//! `.rein/settings.local.json` in the workspace), and the writer that keeps
//! "always for this project" approvals.

use std::path::{Path, PathBuf};

mod ecosystems;

use anyhow::{Result, anyhow, bail};
use rein_core::{
    HostPattern, HostPolicy, NetworkAccess, PermissionMode, ProjectRules, ProjectRulesError, Rule,
    Rules,
};
use serde::Deserialize;
use serde_json::Value;

/// `[permissions]` in a config file, or the `permissions` object of a
/// rules file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionsSection {
    pub mode: Option<String>,
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub ask: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
    /// What network shell commands get: `false`, `true`, or a list of
    /// hosts reached through rein's proxy.
    pub network: Option<NetworkSetting>,
    /// Hosts commands never reach, even when `network` allows them.
    #[serde(default)]
    pub network_deny: Vec<String>,
    /// Hosts `web_fetch` reads without asking.
    #[serde(default)]
    pub web: Vec<String>,
    /// Named host lists (`@NAME` in the lists above); the user's own
    /// files only.
    #[serde(default)]
    pub presets: std::collections::BTreeMap<String, Vec<String>>,
    /// Secret-looking environment variables commands may still see.
    #[serde(default)]
    pub env_allow: Vec<String>,
}

/// `network` as written: a switch or a list of host patterns.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum NetworkSetting {
    Switch(bool),
    Hosts(Vec<String>),
}

/// A rules file: `{"permissions": {...}}`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SettingsFile {
    #[serde(default)]
    permissions: Option<PermissionsSection>,
    /// Claude Code's hooks block (read by `crate::hooks`).
    #[serde(default)]
    #[allow(dead_code)]
    hooks: Option<serde_json::Value>,
}

/// Permission settings after layering.
#[derive(Debug, Clone, Default)]
pub struct PermissionSettings {
    pub mode: Option<PermissionMode>,
    pub rules: Rules,
    /// The network commands get: the last layer's `network` with every
    /// layer's `network_deny`.
    pub network: NetworkAccess,
    pub env_allow: Vec<String>,
    /// Hosts `web_fetch` reads without asking (every layer's).
    pub web: HostPolicy,
    /// The user's named host lists.
    presets: std::collections::BTreeMap<String, Vec<HostPattern>>,
    /// The last layer's `network`, before the deny lists.
    network_set: NetworkAccess,
    network_deny: Vec<HostPattern>,
}

/// The host list `@name`: the user's own of that name, else a built-in
/// one, else an ecosystem's as its tools are set up on this machine.
fn named_list(
    presets: &std::collections::BTreeMap<String, Vec<HostPattern>>,
    name: &str,
    at: &str,
) -> Result<Vec<HostPattern>> {
    if let Some(list) = presets
        .get(name)
        .cloned()
        .or_else(|| rein_core::preset(name))
    {
        return Ok(list);
    }
    match ecosystems::preset(name) {
        Some(found) => found.map_err(|why| anyhow!("{at}: {why}")),
        None => Err(unknown_preset(at, name)),
    }
}

/// A preset nobody defined, and the ones there are.
fn unknown_preset(at: &str, name: &str) -> anyhow::Error {
    let built_in: Vec<String> = rein_core::PRESETS
        .iter()
        .map(|(n, _)| format!("@{n}"))
        .chain(
            ecosystems::Ecosystem::ALL
                .iter()
                .map(|e| format!("@{}", e.name())),
        )
        .collect();
    anyhow!(
        "{at}: no host list @{name} (built in: {}; define your own under [permissions.presets] \
         in your config)",
        built_in.join(", ")
    )
}

/// The line of `needle` (a quoted string) in `text`, for error messages.
fn line_of(text: &str, needle: &str) -> Option<usize> {
    let quoted = serde_json::to_string(needle).ok()?;
    let at = text
        .find(&quoted)
        .or_else(|| text.find(&format!("'{needle}'")))
        .or_else(|| text.find(needle))?;
    Some(text[..at].matches('\n').count() + 1)
}

impl PermissionSettings {
    /// Add one layer. `text` is the file's text (for line numbers), `file`
    /// its path (for messages).
    pub fn apply(&mut self, section: PermissionsSection, file: &Path, text: &str) -> Result<()> {
        let at = |needle: &str| match line_of(text, needle) {
            Some(line) => format!("{} (line {line})", file.display()),
            None => file.display().to_string(),
        };
        if let Some(mode) = &section.mode {
            let parsed: PermissionMode = mode
                .parse()
                .map_err(|e: rein_core::ParseModeError| anyhow!("{}: {e}", at(mode)))?;
            if parsed == PermissionMode::Bypass {
                bail!(
                    "{}: mode \"bypass\" turns the sandbox off and is only accepted as a command-line flag (--mode bypass)",
                    at(mode)
                );
            }
            self.mode = Some(parsed);
        }
        let parse = |list: &[String]| -> Result<Vec<Rule>> {
            list.iter()
                .map(|r| r.parse::<Rule>().map_err(|e| anyhow!("{}: {e}", at(r))))
                .collect()
        };
        let layer = Rules {
            allow: parse(&section.allow)?,
            ask: parse(&section.ask)?,
            deny: parse(&section.deny)?,
        };
        self.rules.extend(layer);
        let pattern = |h: &String| {
            h.parse::<HostPattern>()
                .map_err(|e| anyhow!("{}: network host {h:?}: {e}", at(h)))
        };
        for (name, list) in &section.presets {
            let parsed = list.iter().map(pattern).collect::<Result<Vec<_>>>()?;
            self.presets.insert(name.clone(), parsed);
        }
        let presets = self.presets.clone();
        let hosts = |list: &[String]| -> Result<Vec<HostPattern>> {
            let mut out = Vec::new();
            for h in list {
                match h.strip_prefix('@') {
                    Some(name) => out.extend(named_list(&presets, name, &at(h))?),
                    None => out.push(pattern(h)?),
                }
            }
            Ok(out)
        };
        match &section.network {
            Some(NetworkSetting::Switch(false)) => self.network_set = NetworkAccess::Off,
            Some(NetworkSetting::Switch(true)) => self.network_set = NetworkAccess::On,
            Some(NetworkSetting::Hosts(list)) => {
                self.network_set = NetworkAccess::Hosts(HostPolicy {
                    allow: hosts(list)?,
                    deny: Vec::new(),
                });
            }
            None => {}
        }
        self.network_deny.extend(hosts(&section.network_deny)?);
        self.web.allow.extend(hosts(&section.web)?);
        self.network = self.network_set.clone().with_deny(&self.network_deny);
        for name in section.env_allow {
            if name.trim().is_empty() || name.contains('=') {
                bail!(
                    "{}: env_allow takes variable names, got {name:?}",
                    at(&name)
                );
            }
            self.env_allow.push(name);
        }
        Ok(())
    }

    /// What `setting` would give as a layer over these settings (the
    /// user's presets known), or `None` when it does not parse.
    pub fn network_of(&self, setting: &NetworkSetting) -> Option<NetworkAccess> {
        let mut probe = PermissionSettings {
            presets: self.presets.clone(),
            ..Default::default()
        };
        let layer = PermissionsSection {
            network: Some(setting.clone()),
            ..Default::default()
        };
        probe.apply(layer, Path::new(""), "").ok()?;
        Some(probe.network)
    }

    /// Read a JSON rules file, if it exists, and add it as a layer.
    pub fn apply_json_file(&mut self, path: &Path) -> Result<()> {
        if let Some((section, text)) = read_json_file(path)? {
            self.apply(section, path, &text)?;
        }
        Ok(())
    }
}

/// The `permissions` object of a JSON rules file and the file's text, if
/// the file exists and has one.
pub fn read_json_file(path: &Path) -> Result<Option<(PermissionsSection, String)>> {
    let Some(text) = crate::settings_file::read_text(path, "rules file")? else {
        return Ok(None);
    };
    if text.trim().is_empty() {
        return Ok(None);
    }
    let file: SettingsFile = serde_json::from_str(&text).map_err(|e| {
        anyhow!(
            "invalid rules file {} (line {}): {}",
            path.display(),
            e.line(),
            strip_position(&e.to_string())
        )
    })?;
    Ok(file.permissions.map(|section| (section, text)))
}

/// serde_json appends " at line L column C"; the message already says it.
fn strip_position(msg: &str) -> &str {
    match msg.rfind(" at line ") {
        Some(i) => &msg[..i],
        None => msg,
    }
}

/// The rules files in a workspace's `.rein` folder, in layering order
/// (after `$REIN_HOME/settings.json`).
pub const PROJECT_RULES_FILES: [&str; 2] = ["settings.json", "settings.local.json"];

/// The user's own rules for one project, kept in `$REIN_HOME` (named by a
/// hash of the workspace's canonical path): approvals given in a folder
/// that is not trusted. Read as one of the user's layers.
pub fn user_project_rules(home: &Path, workspace: &Path) -> PathBuf {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(workspace.as_os_str().as_encoded_bytes());
    let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    home.join("projects").join(format!("{hex}.json"))
}

/// Writes "always for this project" approvals into
/// `.rein/settings.json`, keeping everything else in the file.
pub struct ProjectRulesFile {
    pub path: PathBuf,
}

impl ProjectRulesFile {
    /// The workspace's `.rein/settings.json`.
    pub fn for_workspace(workspace: &Path) -> Self {
        ProjectRulesFile {
            path: workspace.join(".rein").join("settings.json"),
        }
    }

    /// Where a run keeps "always for this project" approvals: the
    /// workspace's `.rein/settings.json` when the folder is trusted; else
    /// the user's own file for this project in `$REIN_HOME` (an untrusted
    /// folder's allow rules are ignored, the user's are not).
    pub fn for_run(home: &Path, workspace: &Path, trusted: bool) -> Self {
        if trusted {
            ProjectRulesFile::for_workspace(workspace)
        } else {
            ProjectRulesFile {
                path: user_project_rules(home, workspace),
            }
        }
    }

    fn add(&self, rule: &str) -> Result<()> {
        let mut doc: Value = match std::fs::read_to_string(&self.path) {
            Ok(t) if t.trim().is_empty() => Value::Object(Default::default()),
            Ok(t) => serde_json::from_str(&t).map_err(|e| {
                anyhow!(
                    "{} is not valid JSON (line {}); not touching it",
                    self.path.display(),
                    e.line()
                )
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Object(Default::default()),
            Err(e) => bail!("cannot read {}: {e}", self.path.display()),
        };
        let Some(root) = doc.as_object_mut() else {
            bail!("{} does not hold a JSON object", self.path.display());
        };
        let perms = root
            .entry("permissions")
            .or_insert_with(|| Value::Object(Default::default()));
        let Some(perms) = perms.as_object_mut() else {
            bail!("`permissions` in {} is not an object", self.path.display());
        };
        let allow = perms
            .entry("allow")
            .or_insert_with(|| Value::Array(Vec::new()));
        let Some(allow) = allow.as_array_mut() else {
            bail!(
                "`permissions.allow` in {} is not a list",
                self.path.display()
            );
        };
        if allow.iter().any(|v| v.as_str() == Some(rule)) {
            return Ok(());
        }
        allow.push(Value::String(rule.to_string()));
        let text = serde_json::to_string_pretty(&doc)? + "\n";
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| anyhow!("cannot create {}: {e}", dir.display()))?;
        }
        let tmp = self.path.with_extension("json.tmp");
        std::fs::write(&tmp, text).map_err(|e| anyhow!("cannot write {}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, &self.path)
            .map_err(|e| anyhow!("cannot replace {}: {e}", self.path.display()))?;
        Ok(())
    }
}

impl ProjectRules for ProjectRulesFile {
    fn add_allow(&self, rule: &Rule) -> Result<(), ProjectRulesError> {
        self.add(&rule.to_string())
            .map_err(|e| ProjectRulesError::Unwritable {
                path: self.path.clone(),
                reason: e.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(toml_text: &str) -> PermissionsSection {
        #[derive(Deserialize)]
        struct File {
            permissions: PermissionsSection,
        }
        toml::from_str::<File>(toml_text).unwrap().permissions
    }

    #[test]
    fn presets_expand_built_in_and_the_users_own_and_an_unknown_one_is_named() {
        let mut s = PermissionSettings::default();
        let text = "[permissions]\nnetwork = [\"@github\", \"@corp\"]\n\
                    [permissions.presets]\ncorp = [\"git.corp.example\"]\n";
        s.apply(layer(text), Path::new("config.toml"), text)
            .unwrap();
        let NetworkAccess::Hosts(h) = &s.network else {
            panic!("{:?}", s.network);
        };
        let names: Vec<String> = h.allow.iter().map(ToString::to_string).collect();
        assert!(names.contains(&"github.com".to_string()), "{names:?}");
        assert!(names.contains(&"git.corp.example".to_string()), "{names:?}");
        let text = "[permissions]\nweb = [\"@nope\"]\n";
        let err = s
            .apply(layer(text), Path::new("config.toml"), text)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no host list @nope (built in: @github, @python, @node, @rust;"),
            "{err}"
        );
        assert!(err.contains("config.toml (line 2)"), "{err}");
    }

    #[test]
    fn a_bad_rule_names_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(
            &path,
            "{\n  \"permissions\": {\n    \"allow\": [\n      \"bash(git status*)\",\n      \"bash(git\"\n    ]\n  }\n}\n",
        )
        .unwrap();
        let err = PermissionSettings::default()
            .apply_json_file(&path)
            .unwrap_err()
            .to_string();
        assert!(err.contains("settings.json (line 5)"), "{err}");
        assert!(err.contains("bad permission rule `bash(git`"), "{err}");
    }

    #[test]
    fn malformed_json_and_unknown_keys_are_one_line_errors_with_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(
            &path,
            "{\n  \"permissions\": {\n    \"allow\": [\"bash\",]\n",
        )
        .unwrap();
        let err = PermissionSettings::default()
            .apply_json_file(&path)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("invalid rules file"), "{err}");
        assert!(err.contains("(line 3)"), "{err}");
        assert!(!err.contains('\n'));
        std::fs::write(&path, "{\"permissions\": {\"alow\": []}}").unwrap();
        let err = PermissionSettings::default()
            .apply_json_file(&path)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown field `alow`"), "{err}");
    }

    #[test]
    fn bypass_and_unknown_modes_are_refused_in_files() {
        let mut s = PermissionSettings::default();
        let section = PermissionsSection {
            mode: Some("bypass".into()),
            ..Default::default()
        };
        let err = s
            .apply(section, Path::new("c.toml"), "mode = \"bypass\"")
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("only accepted as a command-line flag")
        );
        let section = PermissionsSection {
            mode: Some("yolo".into()),
            ..Default::default()
        };
        let err = s.apply(section, Path::new("c.toml"), "").unwrap_err();
        assert!(err.to_string().contains("unknown permission mode"), "{err}");
    }

    #[test]
    fn project_approvals_are_added_once_and_keep_the_rest_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = ProjectRulesFile::for_workspace(dir.path());
        std::fs::create_dir_all(file.path.parent().unwrap()).unwrap();
        std::fs::write(
            &file.path,
            "{\"permissions\": {\"deny\": [\"bash(rm *)\"], \"network\": true}}",
        )
        .unwrap();
        let rule: Rule = "bash(cargo test)".parse().unwrap();
        file.add_allow(&rule).unwrap();
        file.add_allow(&rule).unwrap();
        let doc: Value =
            serde_json::from_str(&std::fs::read_to_string(&file.path).unwrap()).unwrap();
        assert_eq!(
            doc["permissions"]["allow"],
            serde_json::json!(["bash(cargo test)"])
        );
        assert_eq!(
            doc["permissions"]["deny"],
            serde_json::json!(["bash(rm *)"])
        );
        assert_eq!(doc["permissions"]["network"], true);
        let mut s = PermissionSettings::default();
        s.apply_json_file(&file.path).unwrap();
        assert_eq!(s.rules.allow, vec![rule]);
        // A broken file is never overwritten.
        std::fs::write(&file.path, "{oops").unwrap();
        assert!(file.add_allow(&"bash(ls)".parse().unwrap()).is_err());
        assert_eq!(std::fs::read_to_string(&file.path).unwrap(), "{oops");
    }
}
