//! Configuration: the user's files (`$REIN_HOME/config.toml`, then
//! `$REIN_HOME/settings.json`), then the project's files in the workspace
//! (`.rein/config.toml`, `.rein/settings.json`, `.rein/settings.local.json`),
//! then environment variables, then flags (later wins).
//!
//! The project's files are the repository's words: unless the folder is
//! trusted they may only tighten (see [`crate::trust`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};

mod file;
pub mod lsp;
mod status;
pub use status::StatusCommandSettings;
pub mod candidates;
pub mod web_search;

use file::read_file;
pub use file::{
    CompactionSection, ConfigFile, LocalSection, LoopGuardSection, ProviderSection,
    ToolSearchSetting, TuiSection,
};

use crate::permissions::PermissionSettings;
use crate::trust::{self, ProjectReport};

/// The settings a run uses, after layering.
#[derive(Debug, Clone)]
pub struct Config {
    pub home: PathBuf,
    pub provider: Option<String>,
    /// `store`, then `REIN_STORE`, then `--store`: see
    /// [`StoreChoice`].
    pub store: Option<String>,
    pub model: Option<String>,
    /// Turns, tokens, dollars and wall time a run may spend.
    pub budget: rein_core::Budget,
    /// Checkpoint the workspace for rewind.
    pub checkpoints: bool,
    pub tool_timeout: Duration,
    pub max_concurrent_tools: Option<usize>,
    /// `max_tool_calls_per_turn`; `None` keeps the engine's default.
    pub max_tool_calls_per_turn: Option<usize>,
    pub provider_retries: u32,
    pub stream_idle_timeout: Duration,
    pub replay_script: Option<PathBuf>,
    /// `--profile`; `None` picks one for the provider (see
    /// [`crate::setup::engine::profile_for`]).
    pub profile: Option<rein_core::Profile>,
    /// `--without`: levers of the profile switched off.
    pub without: Vec<rein_core::Lever>,
    /// `[local]`, merged across files, then `REIN_MODEL_PATH`.
    pub local: LocalSection,
    /// `[providers.NAME]` sections, merged across files.
    pub providers: BTreeMap<String, ProviderSection>,
    /// `[permissions]` and the rules files, layered.
    pub permissions: PermissionSettings,
    pub compaction: rein_core::compaction::CompactionConfig,
    pub loop_guard: rein_core::LoopGuardConfig,
    /// `[tui] alternate_screen`.
    pub alternate_screen: bool,
    /// `[tui] status_command` and its timing.
    pub status_command: StatusCommandSettings,
    /// `[tui] idle_notify_secs`.
    pub idle_notify: Duration,
    /// Whether the workspace's own settings counted in full (the folder is
    /// trusted, or `--trust`).
    pub trusted: bool,
    /// `[sandbox]`: extra readable folders and command limits, layered.
    pub sandbox: crate::sandbox_config::SandboxSettings,
    /// MCP servers from the user's config, by name.
    pub mcp_servers: Vec<rein_mcp::McpServerConfig>,
    /// MCP servers the project names (`.mcp.json`, `.rein/config.toml`),
    /// read in a trusted folder only; each starts once approved.
    pub project_mcp_servers: Vec<crate::mcp::project::ProjectServer>,
    /// What could not be used of the project's MCP servers.
    pub mcp_notes: Vec<String>,
    pub mcp_tool_search: ToolSearchSetting,
    /// `[web_search]`, merged across the user's files.
    pub web_search: Option<web_search::WebSearchSection>,
    /// `[lsp]`, layered.
    pub lsp: lsp::LspConfig,
    /// `[candidates]`, layered.
    pub candidates: candidates::CandidatesSettings,
}

/// `$REIN_HOME`, or `~/.rein`.
pub fn rein_home() -> Result<PathBuf> {
    if let Some(home) = std::env::var_os("REIN_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    let home = std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            anyhow!("neither REIN_HOME nor HOME is set: set REIN_HOME to a folder for rein's state")
        })?;
    Ok(PathBuf::from(home).join(".rein"))
}

impl Config {
    /// Built-in settings, before any file.
    pub fn defaults(home: PathBuf) -> Config {
        Config {
            home,
            provider: None,
            store: None,
            model: None,
            budget: rein_core::Budget::default(),
            checkpoints: true,
            tool_timeout: Duration::from_secs(120),
            max_concurrent_tools: None,
            max_tool_calls_per_turn: None,
            provider_retries: 4,
            stream_idle_timeout: Duration::from_secs(120),
            replay_script: None,
            profile: None,
            without: Vec::new(),
            local: LocalSection::default(),
            providers: BTreeMap::new(),
            permissions: PermissionSettings::default(),
            compaction: Default::default(),
            loop_guard: Default::default(),
            alternate_screen: false,
            idle_notify: Duration::from_secs(60),
            status_command: StatusCommandSettings::default(),
            trusted: false,
            sandbox: Default::default(),
            mcp_servers: Vec::new(),
            project_mcp_servers: Vec::new(),
            mcp_notes: Vec::new(),
            mcp_tool_search: ToolSearchSetting::Auto,
            web_search: None,
            candidates: Default::default(),
            lsp: lsp::LspConfig::default(),
        }
    }

    /// Layer the user's files, the project's files and the environment.
    /// The project's files count in full only when `trusted`; otherwise
    /// only what tightens is kept. The report says what an untrusted folder
    /// does not get (whether or not it was applied).
    pub fn load(workspace: &Path, trusted: bool) -> Result<(Config, ProjectReport)> {
        let home = rein_home()?;
        crate::home::secure(&home);
        let mut cfg = Config::defaults(home.clone());
        if let Some((file, text)) = read_file(&home.join("config.toml"))? {
            cfg.apply_layer(file, &home.join("config.toml"), &text)?;
        }
        cfg.apply_plugin_servers();
        cfg.permissions
            .apply_json_file(&home.join("settings.json"))?;
        // The user's own approvals for this project (see `for_run`).
        cfg.permissions
            .apply_json_file(&crate::permissions::user_project_rules(&home, workspace))?;
        cfg.trusted = trusted;
        let mut report = ProjectReport::default();
        cfg.apply_project(workspace, trusted, &mut report)?;
        cfg.apply_env()?;
        Ok((cfg, report))
    }

    /// The workspace's `.rein/config.toml` and rules files, in order.
    fn apply_project(
        &mut self,
        workspace: &Path,
        trusted: bool,
        report: &mut ProjectReport,
    ) -> Result<()> {
        let dir = workspace.join(".rein");
        let path = dir.join("config.toml");
        if let Some((mut file, text)) = read_file(&path)? {
            // Where sessions are stored is never the project's to say,
            // trusted or not (`rein sessions` and `rein memory` read the
            // user's store; a project's would hide its runs from them).
            file.store = None;
            // A trusted project's servers are its own list: each starts
            // once approved (see `mcp::project`).
            if trusted {
                for (name, mut server) in std::mem::take(&mut file.mcp_servers) {
                    server.name = name;
                    self.add_project_server(server, ".rein/config.toml");
                }
            }
            // Everything is checked as written, trusted or not.
            let mut full = self.clone();
            full.apply_layer(file.clone(), &path, &text)?;
            let restricted = trust::restrict_config(file, self);
            report.add(".rein/config.toml", restricted.ignored);
            if trusted {
                *self = full;
            } else {
                self.apply_layer(restricted.kept, &path, &text)?;
            }
        }
        self.apply_mcp_json(workspace, trusted, report);
        for name in crate::permissions::PROJECT_RULES_FILES {
            let path = dir.join(name);
            let Some((section, text)) = crate::permissions::read_json_file(&path)? else {
                continue;
            };
            let mut full = self.permissions.clone();
            full.apply(section.clone(), &path, &text)?;
            let restricted = trust::restrict_permissions(section, &self.permissions);
            report.add(&format!(".rein/{name}"), restricted.ignored);
            if trusted {
                self.permissions = full;
            } else {
                self.permissions.apply(restricted.kept, &path, &text)?;
            }
        }
        Ok(())
    }

    /// `REIN_PROVIDER`, `REIN_MODEL`, `REIN_MODEL_PATH`, `REIN_MAX_TURNS`,
    /// `REIN_STORE`.
    fn apply_env(&mut self) -> Result<()> {
        if let Some(s) = env_string("REIN_STORE") {
            self.store = Some(s);
        }
        if let Some(p) = env_string("REIN_PROVIDER") {
            self.provider = Some(p);
        }
        if let Some(m) = env_string("REIN_MODEL") {
            self.model = Some(m);
        }
        if let Some(p) = env_string("REIN_MODEL_PATH") {
            self.local.model_path = Some(PathBuf::from(p));
        }
        if let Some(n) = env_string("REIN_MAX_TURNS") {
            self.budget.max_turns = n
                .parse()
                .map_err(|_| anyhow!("REIN_MAX_TURNS must be a whole number, got {n:?}"))?;
        }
        Ok(())
    }

    /// One config file: its `[permissions]`, then the rest.
    fn apply_layer(&mut self, mut file: ConfigFile, path: &Path, text: &str) -> Result<()> {
        let base = path.parent().unwrap_or(Path::new("."));
        if let Some(section) = file.permissions.take() {
            self.permissions.apply(section, path, text)?;
        }
        self.apply(file, base)
            .with_context(|| format!("in config {}", path.display()))
    }

    /// One file's settings other than `[permissions]`; relative paths in it
    /// are relative to `base`.
    pub(crate) fn apply(&mut self, file: ConfigFile, base: &Path) -> Result<()> {
        // A file's limits replace the layers' below it (a project's in an
        // untrusted folder were already lowered to them: `restrict_config`).
        let cap = file.budget_cap();
        cap.validate()
            .map_err(|e| anyhow!("{} {e}", e.limit().key()))?;
        self.budget = self.budget.set_by(&cap);
        for (name, mut server) in file.mcp_servers {
            server.name = name;
            self.mcp_servers.retain(|s| s.name != server.name);
            self.mcp_servers.push(server);
        }
        if let Some(s) = file.mcp_tool_search {
            self.mcp_tool_search = s;
        }
        if let Some(t) = &file.tui {
            self.apply_tui(t);
        }
        if file.provider.is_some() {
            self.provider = file.provider;
        }
        if file.store.is_some() {
            self.store = file.store;
        }
        if file.model.is_some() {
            self.model = file.model;
        }
        if let Some(c) = file.checkpoints {
            self.checkpoints = c;
        }
        if let Some(s) = file.tool_timeout_secs {
            if s == 0 {
                bail!("tool_timeout_secs must be at least 1");
            }
            self.tool_timeout = Duration::from_secs(s);
        }
        if let Some(n) = file.max_concurrent_tools {
            if n == 0 {
                bail!("max_concurrent_tools must be at least 1");
            }
            self.max_concurrent_tools = Some(n);
        }
        if let Some(n) = file.max_tool_calls_per_turn {
            if n == 0 {
                bail!("max_tool_calls_per_turn must be at least 1");
            }
            self.max_tool_calls_per_turn = Some(n);
        }
        if let Some(n) = file.provider_retries {
            self.provider_retries = n;
        }
        if let Some(s) = file.stream_idle_timeout_secs {
            if s == 0 {
                bail!("stream_idle_timeout_secs must be at least 1");
            }
            self.stream_idle_timeout = Duration::from_secs(s);
        }
        if let Some(c) = file.compaction {
            if let Some(t) = c.threshold {
                if !(0.1..=0.95).contains(&t) {
                    bail!("[compaction] threshold must be between 0.1 and 0.95, got {t}");
                }
                self.compaction.threshold = t;
            }
            if let Some(k) = c.keep_turns {
                if k == 0 {
                    bail!("[compaction] keep_turns must be at least 1");
                }
                self.compaction.keep_turns = k;
            }
            if let Some(e) = c.enabled {
                self.compaction.enabled = e;
            }
        }
        if let Some(g) = file.loop_guard {
            if let Some(n) = g.repeat_limit {
                self.loop_guard.repeat_limit = n;
            }
            if let Some(n) = g.no_progress_turns {
                self.loop_guard.no_progress_turns = (n > 0).then_some(n);
            }
        }
        if let Some(section) = file.sandbox {
            let home = std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from);
            self.sandbox.apply(section, base, home.as_deref())?;
        }
        for (name, section) in file.providers {
            self.providers.entry(name).or_default().merge_from(section);
        }
        if let Some(script) = file.replay.and_then(|r| r.script) {
            self.replay_script = Some(base.join(script));
        }
        if let Some(mut local) = file.local {
            if local.context_size == Some(0) {
                bail!("[local] context_size must be at least 1");
            }
            if local.threads == Some(0) {
                bail!("[local] threads must be at least 1");
            }
            local.model_path = local.model_path.map(|p| base.join(p));
            self.local.merge_from(local);
        }
        if let Some(section) = file.lsp {
            self.lsp.apply(section)?;
        }
        if let Some(section) = file.candidates {
            self.candidates.apply(section)?;
        }
        if let Some(section) = file.web_search {
            self.web_search
                .get_or_insert_with(Default::default)
                .merge_from(section);
        }
        Ok(())
    }

    /// `[tui]`.
    fn apply_tui(&mut self, t: &TuiSection) {
        if let Some(a) = t.alternate_screen {
            self.alternate_screen = a;
        }
        if let Some(s) = t.idle_notify_secs {
            self.idle_notify = Duration::from_secs(s.max(1));
        }
        self.status_command.apply(t);
    }

    /// Check what no single layer could.
    pub fn validate(&self) -> Result<()> {
        self.budget
            .validate()
            .map_err(|e| anyhow!("{} {e}", e.limit().key()))?;
        if self.providers.contains_key("local") {
            bail!(
                "`local` is a built-in provider: configure it under [local], not [providers.local]"
            );
        }
        self.web_search_backend()?;
        Ok(())
    }

    /// The `web_search` tool's backend, when `[web_search]` names one.
    pub fn web_search_backend(&self) -> Result<Option<rein_tools::web_search::Backend>> {
        self.web_search.as_ref().map(|w| w.backend()).transpose()
    }

    pub fn sessions_db(&self) -> PathBuf {
        self.home.join("sessions.db")
    }
}

/// Where sessions and memories are kept, as the user said it: `store` in
/// their config.toml, then `REIN_STORE`, then `--store` (a project's
/// `store` never counts, trusted or not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreChoice {
    /// The SQLite files under the rein home: the default, or `sqlite`.
    Sqlite,
    /// A PostgreSQL database shared by several processes, by its
    /// connection string.
    Postgres(String),
}

impl StoreChoice {
    /// The choice `cfg` holds. Anything but `sqlite` or a PostgreSQL
    /// connection string is refused (never echoed: it may hold a password).
    pub fn of(cfg: &Config) -> anyhow::Result<StoreChoice> {
        match cfg.store.as_deref().map(str::trim) {
            None | Some("" | "sqlite") => Ok(StoreChoice::Sqlite),
            Some(url) if is_postgres(url) => Ok(StoreChoice::Postgres(url.to_string())),
            Some(_) => Err(anyhow::anyhow!(
                "the store (--store, REIN_STORE or `store` in config.toml) is neither `sqlite` \
                 nor a PostgreSQL connection string (postgres://… or host=… dbname=…)"
            )),
        }
    }
}

/// Whether `url` names a PostgreSQL database: a `postgres://` URL or
/// libpq's `key=value` form.
fn is_postgres(url: &str) -> bool {
    url.starts_with("postgres://")
        || url.starts_with("postgresql://")
        || url
            .split_whitespace()
            .any(|kv| kv.starts_with("host=") || kv.starts_with("dbname="))
}

fn env_string(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// A duration from the command line: seconds, or a number with s, m or h.
pub fn parse_duration(text: &str) -> Result<Duration> {
    let t = text.trim();
    let (num, unit) = match t.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => (&t[..i], &t[i..]),
        None => (t, "s"),
    };
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| anyhow!("`{text}` is not a duration: write seconds, or 90s, 10m, 2h"))?;
    let secs = match unit {
        "s" | "sec" | "secs" => n,
        "m" | "min" | "mins" => n * 60.0,
        "h" | "hour" | "hours" => n * 3600.0,
        _ => bail!("`{text}` is not a duration: write seconds, or 90s, 10m, 2h"),
    };
    if !(secs > 0.0 && secs.is_finite() && secs < 1e9) {
        bail!("`{text}` is not a positive duration");
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_readme_config_example_is_a_valid_config_file() {
        let readme = include_str!("../../../README.md");
        let section = readme.find("## Configuration").unwrap();
        let start = section + readme[section..].find("```toml\n").unwrap() + "```toml\n".len();
        let end = start + readme[start..].find("```").unwrap();
        let file: ConfigFile = toml::from_str(&readme[start..end]).unwrap();
        let mut cfg = Config::defaults(PathBuf::from("/h"));
        let text = &readme[start..end];
        let mut file = file;
        if let Some(p) = file.permissions.take() {
            cfg.permissions
                .apply(p, Path::new("README.md"), text)
                .unwrap();
        }
        cfg.apply(file, Path::new("/")).unwrap();
        assert_eq!(cfg.budget.max_tokens, Some(2_000_000));
        assert_eq!(cfg.compaction.keep_turns, 3);
    }

    #[test]
    fn durations_take_seconds_or_a_unit_and_refuse_nonsense() {
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_duration("1.5h").unwrap(), Duration::from_secs(5400));
        for bad in ["", "abc", "-5", "0", "10x", "inf"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn files_reject_unknown_keys_with_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "provider = \"replay\"\nmax_turn = 3\n").unwrap();
        let err = read_file(&path).map(|_| ()).unwrap_err().to_string();
        assert!(err.contains("line 2"), "{err}");
        assert!(err.contains("unknown field `max_turn`"), "{err}");
    }

    #[test]
    fn a_settings_file_that_is_a_device_a_fifo_or_huge_is_refused_without_reading_it() {
        let dir = tempfile::tempdir().unwrap();
        let zero = dir.path().join("zero.toml");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let err = read_file(&zero).map(|_| ()).unwrap_err().to_string();
        assert!(err.contains("is not a regular file"), "{err}");
        let fifo = dir.path().join("fifo.json");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let err = crate::permissions::read_json_file(&fifo)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("rules file") && err.contains("not a regular file"),
            "{err}"
        );
        let big = dir.path().join("big.toml");
        std::fs::write(
            &big,
            "#".repeat(crate::settings_file::MAX_BYTES as usize + 1),
        )
        .unwrap();
        let err = read_file(&big).map(|_| ()).unwrap_err().to_string();
        assert!(err.contains("larger than 1024 KiB"), "{err}");
        assert!(read_file(&dir.path().join("none.toml")).unwrap().is_none());
    }

    #[test]
    fn relative_script_paths_are_relative_to_the_config_file() {
        let mut cfg = Config::defaults(PathBuf::new());
        let file: ConfigFile =
            toml::from_str("[replay]\nscript = \"s.json\"\nmax_turns = 1").unwrap_or_default();
        assert!(
            file.replay.is_none(),
            "max_turns inside [replay] is unknown there"
        );
        let file: ConfigFile =
            toml::from_str("max_turns = 7\n[replay]\nscript = \"s.json\"").unwrap();
        cfg.apply(file, Path::new("/p/.rein")).unwrap();
        assert_eq!(cfg.replay_script, Some(PathBuf::from("/p/.rein/s.json")));
        assert_eq!(cfg.budget.max_turns, 7);
        let zero: ConfigFile = toml::from_str("tool_timeout_secs = 0").unwrap();
        assert!(cfg.apply(zero, Path::new("/")).is_err());
    }

    #[test]
    fn the_local_section_layers_and_resolves_its_model_path() {
        let mut cfg = Config::defaults(PathBuf::new());
        let file: ConfigFile = toml::from_str(
            "[local]\nmodel_path = \"m.gguf\"\ncontext_size = 4096\nthreads = 2\ngrammar = false\ntool_results_as_user = true\n",
        )
        .unwrap();
        cfg.apply(file, Path::new("/home/u/.rein")).unwrap();
        let file: ConfigFile = toml::from_str("[local]\ncontext_size = 2048\n").unwrap();
        cfg.apply(file, Path::new("/p/.rein")).unwrap();
        assert_eq!(
            cfg.local,
            LocalSection {
                model_path: Some(PathBuf::from("/home/u/.rein/m.gguf")),
                context_size: Some(2048),
                threads: Some(2),
                grammar: Some(false),
                tool_results_as_user: Some(true),
            }
        );
        let typo = toml::from_str::<ConfigFile>("[local]\nmodel = \"x\"\n").unwrap_err();
        assert!(typo.to_string().contains("unknown field `model`"), "{typo}");
        let zero: ConfigFile = toml::from_str("[local]\nthreads = 0\n").unwrap();
        assert!(cfg.apply(zero, Path::new("/")).is_err());
    }
}
