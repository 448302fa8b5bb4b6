//! A project's own MCP servers: `.mcp.json` at the workspace root (the
//! shape other agents read: `{"mcpServers": {NAME: {command, args, env} |
//! {type: "http", url, headers}}}`) and the `[mcp_servers.NAME]` of the
//! project's `.rein/config.toml`.
//!
//! They are the repository's words, not the user's: they are read only in
//! a trusted folder, and each starts only once the user approved it as it
//! is written. An approval records a digest of the server's command,
//! arguments, environment and folder (or its URL and headers), so a
//! repository that later changes what an approved name runs or reaches is
//! asked about again. It also records a digest of each workspace file the
//! command line names (the script it runs, a `-m` module, a config file:
//! see [`rein_core::command_files`]), so a server whose script was
//! rewritten (by the model, say) is asked about again too. Values are
//! taken as written: `${VAR}` is not expanded, so a project cannot send
//! the user's variables anywhere. Approvals live in
//! `$REIN_HOME/mcp-approvals.json`, by folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow, bail};

use crate::trust::ProjectReport;
use rein_core::command_files::{FileChange, FileDigests, files_of_argv};
use rein_mcp::{McpServerConfig, McpTransport};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The project file other agents use for MCP servers.
pub const MCP_JSON: &str = ".mcp.json";

/// The approvals file under `$REIN_HOME`.
const APPROVALS: &str = "mcp-approvals.json";

/// A server of the project's, and the file that named it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectServer {
    pub config: McpServerConfig,
    /// `.mcp.json` or `.rein/config.toml`.
    pub file: &'static str,
}

/// One entry of `.mcp.json`. Keys rein does not use are ignored (other
/// agents add their own).
#[derive(Debug, Deserialize)]
struct JsonServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
struct JsonFile {
    #[serde(rename = "mcpServers", default)]
    servers: BTreeMap<String, JsonServer>,
}

/// The servers of `workspace/.mcp.json`, with a note for each entry rein
/// cannot use; none when there is no file. A file that is not valid JSON
/// is an error naming it and the line.
pub fn read_mcp_json(workspace: &Path) -> Result<(Vec<McpServerConfig>, Vec<String>)> {
    read_mcp_file(&workspace.join(MCP_JSON))
}

/// The servers of an MCP server file in `.mcp.json`'s shape at `path` (a
/// plugin may name its own), as [`read_mcp_json`] reads them.
pub fn read_mcp_file(path: &Path) -> Result<(Vec<McpServerConfig>, Vec<String>)> {
    let Some(text) = crate::settings_file::read_text(path, "MCP server file")? else {
        return Ok((Vec::new(), Vec::new()));
    };
    let shown = path
        .file_name()
        .map_or(MCP_JSON.into(), |n| n.to_string_lossy());
    let file: JsonFile = serde_json::from_str(&text).map_err(|e| {
        anyhow!(
            "{shown} is not a valid MCP server file (line {}): {}",
            e.line(),
            e.to_string()
                .rsplit_once(" at line ")
                .map_or(e.to_string(), |m| m.0.to_string())
        )
    })?;
    Ok(servers_of(&shown, file.servers))
}

/// The servers of an `mcpServers` map written inline (a plugin's
/// `plugin.json`).
pub fn inline_servers(map: &serde_json::Value) -> Result<(Vec<McpServerConfig>, Vec<String>)> {
    let servers: BTreeMap<String, JsonServer> = serde_json::from_value(map.clone())
        .map_err(|e| anyhow!("its `mcpServers` is not a map of servers: {e}"))?;
    Ok(servers_of("plugin.json", servers))
}

fn servers_of(
    shown: &str,
    entries: BTreeMap<String, JsonServer>,
) -> (Vec<McpServerConfig>, Vec<String>) {
    let mut servers = Vec::new();
    let mut notes = Vec::new();
    for (name, entry) in entries {
        match entry_config(&name, entry) {
            Ok(config) => servers.push(config),
            Err(why) => notes.push(format!("{shown}: server `{name}` {why}; it is not started")),
        }
    }
    (servers, notes)
}

/// One `.mcp.json` entry as a server configuration, or why it cannot be.
fn entry_config(name: &str, entry: JsonServer) -> Result<McpServerConfig, String> {
    let remote = entry.url.is_some();
    let kind = entry
        .kind
        .as_deref()
        .unwrap_or(if remote { "http" } else { "stdio" });
    let value = match kind {
        "stdio" => serde_json::json!({
            "command": entry.command.ok_or("has no command")?,
            "args": entry.args, "env": entry.env,
        }),
        "http" | "streamable-http" | "streamableHttp" => serde_json::json!({
            "url": entry.url.ok_or("has no url")?, "headers": entry.headers,
        }),
        "sse" => return Err("uses the old SSE transport, which rein does not speak".into()),
        other => return Err(format!("has a transport rein does not know (`{other}`)")),
    };
    let mut config: McpServerConfig = serde_json::from_value(value).map_err(|e| e.to_string())?;
    config.name = name.to_string();
    Ok(config)
}

/// What an approval covers: a digest of everything that decides what runs
/// (or what is reached, and with which headers).
pub fn digest(config: &McpServerConfig) -> String {
    let what = match &config.transport {
        McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => serde_json::json!({"command": command, "args": args, "env": env, "cwd": cwd}),
        McpTransport::Http {
            url,
            headers,
            bearer_token_env_var,
        } => serde_json::json!({
            "url": url, "headers": headers, "bearer_token_env_var": bearer_token_env_var,
        }),
    };
    let hash = Sha256::digest(what.to_string().as_bytes());
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// How a server is shown when the user is asked: what it would run (or
/// reach), made safe for the terminal: "run: CMD ARGS" or "connect to: URL".
pub fn summary(config: &McpServerConfig) -> String {
    let verb = match config.transport {
        McpTransport::Stdio { .. } => "run",
        McpTransport::Http { .. } => "connect to",
    };
    format!("{verb}: {}", rein_tui::cells::sanitize(&config.describe()))
}

/// The workspace files a server's command line names, with their digests
/// now (none for a remote server).
pub fn file_digests(config: &McpServerConfig, workspace: &Path) -> FileDigests {
    match &config.transport {
        McpTransport::Stdio { command, args, .. } => {
            let argv: Vec<String> = std::iter::once(command.clone())
                .chain(args.iter().cloned())
                .collect();
            FileDigests::of(&files_of_argv(&argv, workspace), workspace)
        }
        McpTransport::Http { .. } => FileDigests::default(),
    }
}

/// One approval as recorded.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
enum Record {
    /// The digest of the configuration and of the files it runs.
    Full { config: String, files: FileDigests },
    /// Version 1: the digest of the configuration only.
    ConfigOnly(String),
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ApprovalsFile {
    version: u32,
    /// Folder → server name → what was approved.
    #[serde(default)]
    folders: BTreeMap<String, BTreeMap<String, Record>>,
}

/// Whether a project server may start as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Approved as it is written and with the files it runs as they were.
    Approved,
    /// Never approved, or approved with another command line.
    NotApproved,
    /// Approved by an older rein that did not record the files it runs
    /// (these, comma-separated).
    FilesNotRecorded(String),
    /// A file it runs changed, went away or is newly named.
    Changed(FileChange),
}

impl Standing {
    /// Why the server is asked about again, for the user, if it is.
    pub fn reason(&self) -> Option<String> {
        match self {
            Standing::Approved | Standing::NotApproved => None,
            Standing::FilesNotRecorded(files) => Some(format!(
                "it was approved before rein checked the files it runs ({})",
                rein_core::text::one_line(files, 200)
            )),
            Standing::Changed(change) => Some(format!("{change} since it was approved")),
        }
    }
}

/// The user's approvals of project servers.
pub struct Approvals {
    path: PathBuf,
    file: ApprovalsFile,
}

impl Approvals {
    /// Read `home/mcp-approvals.json`; a missing file approves nothing.
    pub fn load(home: &Path) -> Result<Approvals> {
        let path = home.join(APPROVALS);
        let text =
            crate::settings_file::read_text(&path, "MCP approvals file")?.unwrap_or_default();
        let file = if text.trim().is_empty() {
            ApprovalsFile::default()
        } else {
            serde_json::from_str(&text).map_err(|e| {
                anyhow!(
                    "invalid MCP approvals file {} (line {}); fix or delete it",
                    path.display(),
                    e.line()
                )
            })?
        };
        if file.version > 2 {
            bail!(
                "the MCP approvals file {} is newer than this rein understands",
                path.display()
            );
        }
        Ok(Approvals { path, file })
    }

    /// Whether `config` was approved in `folder`, as it is written now
    /// and with the files it runs as they are now.
    pub fn approved(&self, folder: &Path, config: &McpServerConfig) -> bool {
        self.standing(folder, config) == Standing::Approved
    }

    /// Whether `config` may start in `folder`, and if not, why.
    pub fn standing(&self, folder: &Path, config: &McpServerConfig) -> Standing {
        let record = folder
            .to_str()
            .and_then(|key| self.file.folders.get(key))
            .and_then(|servers| servers.get(&config.name));
        let (approved_config, then) = match record {
            Some(Record::Full { config, files }) => (config, Some(files)),
            Some(Record::ConfigOnly(config)) => (config, None),
            None => return Standing::NotApproved,
        };
        if *approved_config != digest(config) {
            return Standing::NotApproved;
        }
        let now = file_digests(config, folder);
        match then {
            // Nothing to cover: an old record of a server that names no
            // workspace file says all there is to say.
            None if now.is_empty() => Standing::Approved,
            None => Standing::FilesNotRecorded(now.paths().collect::<Vec<_>>().join(", ")),
            Some(then) => match then.change_to(&now) {
                None => Standing::Approved,
                Some(change) => Standing::Changed(change),
            },
        }
    }

    /// Approve `config` in `folder` and write the file.
    pub fn approve(&mut self, folder: &Path, config: &McpServerConfig) -> Result<()> {
        let key = folder
            .to_str()
            .filter(|_| folder.is_absolute())
            .ok_or_else(|| {
                anyhow!(
                    "cannot record {}: not a plain absolute path",
                    folder.display()
                )
            })?;
        self.file.version = 2;
        let record = Record::Full {
            config: digest(config),
            files: file_digests(config, folder),
        };
        self.file
            .folders
            .entry(key.to_string())
            .or_default()
            .insert(config.name.clone(), record);
        let text = serde_json::to_string_pretty(&self.file)? + "\n";
        crate::settings_file::write_private(&self.path, &text, "MCP approvals file")
    }
}

/// The project servers that may start (approved as written), and a note
/// for each that may not.
pub fn approved_only(
    home: &Path,
    workspace: &Path,
    servers: &[ProjectServer],
) -> (Vec<McpServerConfig>, Vec<String>) {
    if servers.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let approvals = match Approvals::load(home) {
        Ok(a) => a,
        Err(e) => {
            return (
                Vec::new(),
                vec![format!("{e:#}; no project MCP server is started")],
            );
        }
    };
    let mut ok = Vec::new();
    let mut notes = Vec::new();
    for s in servers.iter().filter(|s| s.config.enabled) {
        let standing = approvals.standing(workspace, &s.config);
        if standing == Standing::Approved {
            ok.push(s.config.clone());
        } else if let Some(why) = standing.reason() {
            notes.push(format!(
                "the project's MCP server `{}` ({}) is not started: its approval no longer holds: \
                 {}; approve it again with `rein mcp approve {}`",
                s.config.name,
                s.file,
                rein_tui::cells::sanitize(&why),
                s.config.name
            ));
        } else {
            notes.push(format!(
                "the project's MCP server `{}` ({}, would {}) is not approved, so it is not started; \
                 approve it with `rein mcp approve {}`",
                s.config.name,
                s.file,
                summary(&s.config),
                s.config.name
            ));
        }
    }
    (ok, notes)
}

/// The app, before it takes the terminal: ask once about each of the
/// project's servers that is not approved as written; `y` approves (and
/// remembers), anything else leaves it off for this session, end of input
/// stops asking. Nothing is asked in a folder that is not trusted (its
/// servers are not read).
pub fn ask_unapproved(
    home: &Path,
    workspace: &Path,
    servers: &[ProjectServer],
    input: &mut impl std::io::BufRead,
    output: &mut impl std::io::Write,
) -> Result<()> {
    let mut approvals = Approvals::load(home)?;
    for s in servers.iter().filter(|s| s.config.enabled) {
        let standing = approvals.standing(workspace, &s.config);
        if standing == Standing::Approved {
            continue;
        }
        if let Some(why) = standing.reason() {
            writeln!(
                output,
                "rein: the approval of the MCP server `{}` no longer holds: {}",
                rein_tui::cells::sanitize(&s.config.name),
                rein_tui::cells::sanitize(&why)
            )?;
        }
        write!(
            output,
            "rein: this project's {} names the MCP server `{}`, which would {}\n\
             Start it (now and in later sessions, while it stays as written)? [y] yes  [n] no: ",
            s.file,
            rein_tui::cells::sanitize(&s.config.name),
            summary(&s.config).replacen(": ", ":\n  ", 1)
        )?;
        output.flush()?;
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 {
            writeln!(output)?;
            return Ok(());
        }
        if matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
            approvals.approve(workspace, &s.config)?;
        }
    }
    Ok(())
}

impl crate::config::Config {
    /// The project's `.mcp.json`: its servers in a trusted folder, named
    /// as ignored in one that is not. A file rein cannot read is a note,
    /// not an error (other agents read it too).
    pub(crate) fn apply_mcp_json(
        &mut self,
        workspace: &Path,
        trusted: bool,
        report: &mut ProjectReport,
    ) {
        match read_mcp_json(workspace) {
            Ok((servers, notes)) if trusted => {
                for server in servers {
                    self.add_project_server(server, MCP_JSON);
                }
                self.mcp_notes.extend(notes);
            }
            Ok((servers, _)) => report.add(
                MCP_JSON,
                servers
                    .into_iter()
                    .map(|s| crate::trust::Ignored::McpServer(s.name))
                    .collect(),
            ),
            Err(e) if trusted => self
                .mcp_notes
                .push(format!("{e:#}; its servers are not started")),
            Err(_) => {}
        }
    }

    /// A project server, unless the user's own config has one of that
    /// name (the user's wins) or the project named it already.
    pub(crate) fn add_project_server(
        &mut self,
        config: rein_mcp::McpServerConfig,
        file: &'static str,
    ) {
        let name = config.name.clone();
        if let McpTransport::Http {
            bearer_token_env_var: Some(var),
            ..
        } = &config.transport
        {
            // The token would be the user's secret sent where the
            // repository says.
            self.mcp_notes.push(format!(
                "{file}: server `{name}` asks for your variable `{var}` as its token; only your \
                 own config may send a variable to a server, so it is not started"
            ));
            return;
        }
        if config.oauth.is_some() {
            // Client secrets and keys are the user's: a repository may not
            // set them, nor pick the client a server signs in as.
            self.mcp_notes.push(format!(
                "{file}: server `{name}` sets `oauth`, which only your own config may set; it \
                 is not started"
            ));
            return;
        }
        let mut config = config;
        if config.elicitation != rein_mcp::ElicitationPolicy::Decline {
            // Whether a server's questions are answered for you is yours to say.
            self.mcp_notes.push(format!(
                "{file}: server `{name}` sets `elicitation`, which only your own config may \
                 set; its questions are declined"
            ));
            config.elicitation = rein_mcp::ElicitationPolicy::Decline;
        }
        if self.mcp_servers.iter().any(|s| s.name == name) {
            self.mcp_notes.push(format!(
                "{file}: server `{name}` has the name of one of your own servers; yours is used"
            ));
            return;
        }
        self.project_mcp_servers.retain(|s| s.config.name != name);
        self.project_mcp_servers
            .push(ProjectServer { config, file });
    }
}

#[cfg(test)]
mod tests;
