//! `[lsp]`: language servers that check the files the model edits.
//!
//! ```toml
//! [lsp]
//! enabled = true        # the built-in table's servers found on PATH
//! warnings = false      # add warnings too, not only errors
//! [lsp.python]          # a server of your own (before the built-in table)
//! command = ["basedpyright-langserver", "--stdio"]
//! extensions = ["py", "pyi"]
//! root_markers = ["pyproject.toml", "setup.py"]   # the project's root
//! ```
//!
//! A server's root is the nearest folder at or above the edited file,
//! inside the workspace, that holds one of its `root_markers`, else the
//! workspace (see `rein_tools::lsp::roots`); an entry without
//! `root_markers` gets those of the built-in language that serves one of
//! its extensions.
//!
//! Off unless `enabled = true` or a `[lsp.NAME]` entry names a server
//! (`enabled = false` turns both off): a server's first analysis can take
//! seconds, and whether the feedback pays for that is still to be
//! measured on `rein eval`. The full profile only. Read from the user's
//! config; a repository's is ignored until the folder is trusted (its
//! servers are programs to start).

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use serde::Deserialize;

/// `[lsp]` as written.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct LspSection {
    pub enabled: Option<bool>,
    pub warnings: Option<bool>,
    /// `[lsp.NAME]` entries.
    #[serde(flatten)]
    pub servers: BTreeMap<String, LspServerSection>,
}

/// `[lsp.NAME]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LspServerSection {
    pub command: Vec<String>,
    pub extensions: Vec<String>,
    /// The documents' `languageId` (default: the entry's name).
    pub language_id: Option<String>,
    /// Sent in the handshake.
    pub initialization_options: Option<toml::Value>,
    /// Files that mark a project's root folder (plain names).
    pub root_markers: Option<Vec<String>>,
}

/// `[lsp]` after layering.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LspConfig {
    /// `None`: on when an entry names a server.
    pub enabled: Option<bool>,
    pub warnings: bool,
    pub servers: Vec<rein_tools::lsp::ServerSpec>,
}

impl LspConfig {
    /// Whether edits get diagnostics.
    pub fn on(&self) -> bool {
        self.enabled.unwrap_or(!self.servers.is_empty())
    }

    /// Add one file's `[lsp]`.
    pub fn apply(&mut self, section: LspSection) -> Result<()> {
        if let Some(e) = section.enabled {
            self.enabled = Some(e);
        }
        if let Some(w) = section.warnings {
            self.warnings = w;
        }
        for (name, s) in section.servers {
            if s.command.first().is_none_or(|p| p.trim().is_empty()) {
                bail!("[lsp.{name}] needs `command`, the server's program and arguments");
            }
            if s.extensions.is_empty() {
                bail!("[lsp.{name}] needs `extensions`, the files it serves (\"py\", \"ts\")");
            }
            let init_options = s
                .initialization_options
                .map(serde_json::to_value)
                .transpose()?;
            if let Some(bad) = s
                .root_markers
                .iter()
                .flatten()
                .find(|m| m.is_empty() || m.contains('/') || *m == "." || *m == "..")
            {
                bail!("[lsp.{name}] root_markers: `{bad}` is not a file name");
            }
            let extensions: Vec<String> = s
                .extensions
                .iter()
                .map(|e| e.trim_start_matches('.').to_string())
                .collect();
            self.servers.retain(|x| x.name != name);
            self.servers.push(rein_tools::lsp::ServerSpec {
                language_id: s.language_id.unwrap_or_else(|| name.clone()),
                name,
                command: s.command,
                root_markers: s
                    .root_markers
                    .unwrap_or_else(|| rein_tools::lsp::languages::default_markers(&extensions)),
                extensions,
                init_options,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layered(text: &str) -> Result<LspConfig> {
        #[derive(Deserialize)]
        struct File {
            lsp: LspSection,
        }
        let mut c = LspConfig::default();
        c.apply(toml::from_str::<File>(text)?.lsp)?;
        Ok(c)
    }

    #[test]
    fn diagnostics_are_on_when_asked_or_when_a_server_is_named_and_off_when_turned_off() {
        assert!(!LspConfig::default().on());
        assert!(layered("[lsp]\nenabled = true\n").unwrap().on());
        let named = "[lsp.py]\ncommand = [\"pylsp\"]\nextensions = [\".py\"]\n";
        let c = layered(named).unwrap();
        assert!(c.on());
        assert_eq!(c.servers[0].extensions, vec!["py"]);
        assert_eq!(c.servers[0].language_id, "py");
        assert!(
            c.servers[0]
                .root_markers
                .contains(&"pyproject.toml".to_string())
        );
        assert!(
            !layered(&format!("[lsp]\nenabled = false\n{named}"))
                .unwrap()
                .on()
        );
    }

    #[test]
    fn an_entry_without_command_or_extensions_is_one_line() {
        let e = layered("[lsp.py]\ncommand = []\nextensions = [\"py\"]\n").unwrap_err();
        assert!(e.to_string().contains("[lsp.py] needs `command`"), "{e}");
        let e = layered("[lsp.py]\ncommand = [\"pylsp\"]\nextensions = []\n").unwrap_err();
        assert!(e.to_string().contains("[lsp.py] needs `extensions`"), "{e}");
        let e = layered(
            "[lsp.py]\ncommand = [\"pylsp\"]\nextensions = [\"py\"]\nroot_markers = [\"../x\"]\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("`../x` is not a file name"), "{e}");
        let own =
            "[lsp.py]\ncommand = [\"pylsp\"]\nextensions = [\"py\"]\nroot_markers = [\"BUILD\"]\n";
        assert_eq!(layered(own).unwrap().servers[0].root_markers, ["BUILD"]);
    }
}
