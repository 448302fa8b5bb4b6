//! Trust: the settings files inside a workspace (`.rein/config.toml`,
//! `.rein/settings.json`, `.rein/settings.local.json`) are the repository's
//! words, not the user's. Until the user trusts the folder they may only
//! tighten: deny and ask rules, lower limits, a stricter mode,
//! `network = false`. Everything that loosens or redirects (provider,
//! model, `[providers.*]`, `[replay]`, `[local]`, allow rules, a looser
//! mode, `network = true`, `env_allow`, looser limits) is ignored and
//! reported.
//!
//! Every setting is classified here, in [`restrict_config`] and
//! [`restrict_permissions`]: `ConfigFile` is taken apart field by field, so
//! a new section does not compile until it is classified.
//!
//! Which folders are trusted is recorded in `$REIN_HOME/trusted.json`
//! ([`store`]); `rein trust` and the app's question are in [`command`].

pub mod store;

use std::fmt;

use rein_core::PermissionMode;

use crate::config::{CompactionSection, Config, ConfigFile, LoopGuardSection, TuiSection};
use crate::permissions::{PermissionSettings, PermissionsSection};
use crate::sandbox_config::SandboxSection;

/// One thing a project file asked for that an untrusted folder does not get.
#[derive(Debug, Clone, PartialEq)]
pub enum Ignored {
    /// `provider = "..."`.
    Provider(String),
    /// `model = "..."`.
    Model(String),
    /// A `[providers.NAME]` section (base URL, key variable, headers...).
    ProviderSection(String),
    /// `[replay] script`: a script would play the model.
    ReplayScript,
    /// A whole section, e.g. `[local]` (the local model's file and
    /// settings).
    Section(&'static str),
    /// A mode looser than the user's.
    Mode(PermissionMode),
    /// Allow rules (how many).
    AllowRules(usize),
    /// `network = true`.
    Network,
    /// `env_allow` names (how many).
    EnvAllow(usize),
    /// `web` hosts (how many): `web_fetch` would read them unasked.
    Web(usize),
    /// A limit or guard looser than the user's: the key and the value.
    Looser { key: &'static str, value: String },
    /// An `[mcp_servers.NAME]` section: a command rein would start.
    McpServer(String),
    /// `store`: where the conversation would be written (the value is
    /// not shown: it may hold a password).
    Store,
}

impl fmt::Display for Ignored {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ignored::Provider(p) => write!(f, "provider \"{}\"", shown(p)),
            Ignored::Model(m) => write!(f, "model \"{}\"", shown(m)),
            Ignored::ProviderSection(p) => write!(f, "[providers.{}]", shown(p)),
            Ignored::ReplayScript => f.write_str("[replay] script"),
            Ignored::Section(name) => f.write_str(name),
            Ignored::Mode(m) => write!(f, "mode \"{m}\""),
            Ignored::AllowRules(n) => write!(f, "allow rules ({n})"),
            Ignored::Network => f.write_str("network"),
            Ignored::EnvAllow(n) => write!(f, "env_allow ({n})"),
            Ignored::Web(n) => write!(f, "web hosts ({n})"),
            Ignored::Looser { key, value } => write!(f, "{key} = {value}"),
            Ignored::McpServer(name) => write!(f, "[mcp_servers.{}]", shown(name)),
            Ignored::Store => f.write_str("store"),
        }
    }
}

/// A name from a hostile file, safe to print: printable ASCII only, short.
fn shown(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(40)
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                '?'
            }
        })
        .collect();
    if text.chars().count() > 40 {
        out.push('…');
    }
    out
}

/// A project layer split in two: what an untrusted folder keeps (it only
/// tightens) and what it ignores.
#[derive(Debug, Default)]
pub struct Restricted<T> {
    /// The part that is applied in an untrusted folder.
    pub kept: T,
    /// What is left out, for the report.
    pub ignored: Vec<Ignored>,
}

/// What the project's files would change beyond tightening, file by file.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ProjectReport {
    /// `(file shown relative to the workspace, what it asked for)`; files
    /// with nothing ignored are left out.
    pub files: Vec<(String, Vec<Ignored>)>,
}

impl ProjectReport {
    /// Note what one file asked for.
    pub fn add(&mut self, file: &str, ignored: Vec<Ignored>) {
        if !ignored.is_empty() {
            self.files.push((file.to_string(), ignored));
        }
    }

    /// Nothing would change with trust.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// `from FILE: a, b; from FILE2: c`.
    pub fn listing(&self) -> String {
        self.files
            .iter()
            .map(|(file, items)| {
                let items: Vec<String> = items.iter().map(ToString::to_string).collect();
                format!("from {file}: {}", items.join(", "))
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// The one line an untrusted run prints (without the `rein: ` prefix),
    /// if anything was ignored.
    pub fn untrusted_line(&self) -> Option<String> {
        (!self.is_empty()).then(|| {
            format!(
                "this folder is not trusted; ignored {}; run `rein trust` to use them",
                self.listing()
            )
        })
    }
}

/// How a project value compares with the user's.
enum Compare {
    /// Stricter or the same: keep it.
    Keep,
    /// Looser: ignore it.
    Looser,
}

/// A limit where smaller is stricter and `None` means no limit.
fn limit<T: PartialOrd + Copy>(project: T, current: Option<T>) -> Compare {
    match current {
        Some(c) if project > c => Compare::Looser,
        _ => Compare::Keep,
    }
}

/// Collects the kept values and the ignored ones of one file.
#[derive(Default)]
struct Sorter {
    ignored: Vec<Ignored>,
}

impl Sorter {
    /// Keep `value` when `cmp` says so, else note it as looser.
    fn limit<T: fmt::Display>(&mut self, key: &'static str, value: T, cmp: Compare) -> Option<T> {
        match cmp {
            Compare::Keep => Some(value),
            Compare::Looser => {
                self.ignored.push(Ignored::Looser {
                    key,
                    value: value.to_string(),
                });
                None
            }
        }
    }

    /// Ignore `value` entirely (it loosens or redirects).
    fn ignore<T>(&mut self, value: Option<T>, what: impl FnOnce(T) -> Ignored) {
        if let Some(v) = value {
            self.ignored.push(what(v));
        }
    }
}

/// Split a project `config.toml` into what an untrusted folder keeps and
/// what it ignores, given the settings so far (`current`: the user's
/// layers and any project layer before this one).
pub fn restrict_config(file: ConfigFile, current: &Config) -> Restricted<ConfigFile> {
    // Every field by name: a new one must be classified here.
    let ConfigFile {
        provider,
        store,
        model,
        max_turns,
        tool_timeout_secs,
        max_concurrent_tools,
        max_tool_calls_per_turn,
        provider_retries,
        stream_idle_timeout_secs,
        max_tokens,
        max_cost_usd,
        max_wall_time_secs,
        compaction,
        loop_guard,
        replay,
        local,
        providers,
        permissions,
        tui,
        sandbox,
        mcp_servers,
        mcp_tool_search,
        checkpoints,
        web_search,
        lsp,
        candidates,
    } = file;
    let mut s = Sorter::default();
    // Redirects: who the model is and where requests and keys go.
    s.ignore(provider, Ignored::Provider);
    s.ignore(model, Ignored::Model);
    // Never reaches here from a project file (`Config::apply_project`
    // drops it, trusted or not); ignored all the same.
    s.ignore(store, |_| Ignored::Store);
    for name in providers.into_keys() {
        s.ignore(Some(name), Ignored::ProviderSection);
    }
    s.ignore(replay.and_then(|r| r.script), |_| Ignored::ReplayScript);
    s.ignore(local, |_| Ignored::Section("[local]"));
    // Where every search query goes.
    s.ignore(web_search, |_| Ignored::Section("[web_search]"));
    // Servers are programs to start.
    s.ignore(lsp, |_| Ignored::Section("[lsp]"));
    // Commands to start: only from the user's own config.
    for name in mcp_servers.into_keys() {
        s.ignore(Some(name), Ignored::McpServer);
    }
    // Limits: the smaller wins.
    let secs = |d: std::time::Duration| Some(d.as_secs());
    let kept = ConfigFile {
        max_turns: max_turns
            .and_then(|n| s.limit("max_turns", n, limit(n, Some(current.budget.max_turns)))),
        tool_timeout_secs: tool_timeout_secs
            .and_then(|n| s.limit("tool_timeout_secs", n, limit(n, secs(current.tool_timeout)))),
        max_concurrent_tools: max_concurrent_tools.and_then(|n| {
            s.limit(
                "max_concurrent_tools",
                n,
                limit(n, current.max_concurrent_tools),
            )
        }),
        max_tool_calls_per_turn: max_tool_calls_per_turn.and_then(|n| {
            let now = current
                .max_tool_calls_per_turn
                .unwrap_or(rein_core::DEFAULT_MAX_TOOL_CALLS_PER_TURN);
            s.limit("max_tool_calls_per_turn", n, limit(n, Some(now)))
        }),
        provider_retries: provider_retries.and_then(|n| {
            s.limit(
                "provider_retries",
                n,
                limit(n, Some(current.provider_retries)),
            )
        }),
        stream_idle_timeout_secs: stream_idle_timeout_secs.and_then(|n| {
            s.limit(
                "stream_idle_timeout_secs",
                n,
                limit(n, secs(current.stream_idle_timeout)),
            )
        }),
        max_tokens: max_tokens
            .and_then(|n| s.limit("max_tokens", n, limit(n, current.budget.max_tokens))),
        max_cost_usd: max_cost_usd
            .and_then(|n| s.limit("max_cost_usd", n, limit(n, current.budget.max_cost_usd))),
        max_wall_time_secs: max_wall_time_secs.and_then(|n| {
            s.limit(
                "max_wall_time_secs",
                n,
                limit(n, current.budget.max_wall_time.and_then(secs)),
            )
        }),
        compaction: compaction.map(|c| restrict_compaction(c, current, &mut s)),
        loop_guard: loop_guard.map(|g| restrict_loop_guard(g, current, &mut s)),
        permissions: permissions.map(|p| {
            let r = restrict_permissions(p, &current.permissions);
            s.ignored.extend(r.ignored);
            r.kept
        }),
        sandbox: sandbox.map(|x| restrict_sandbox(x, current, &mut s)),
        // How the app draws and how tools are offered have no authority:
        // kept, but a status command (a program to start).
        tui: tui.map(|t| restrict_tui(t, &mut s)),
        mcp_tool_search,
        checkpoints: checkpoints.and_then(|on| restrict_checkpoints(on, current, &mut s)),
        // Model time spent: a limit, the smaller wins.
        candidates: candidates.map(|c| restrict_candidates(c, current, &mut s)),
        ..ConfigFile::default()
    };
    Restricted {
        kept,
        ignored: s.ignored,
    }
}

/// `[candidates]`: each cap kept when no looser than the current one.
fn restrict_candidates(
    c: crate::config::candidates::CandidatesSection,
    current: &Config,
    s: &mut Sorter,
) -> crate::config::candidates::CandidatesSection {
    let mut looser = Vec::new();
    let kept = crate::config::candidates::restrict(c, &current.candidates, &mut looser);
    for (key, value) in looser {
        s.ignored.push(Ignored::Looser { key, value });
    }
    kept
}

/// `[tui]`: all kept but `status_command`, a program to start.
fn restrict_tui(mut t: TuiSection, s: &mut Sorter) -> TuiSection {
    if t.status_command.take().is_some() {
        s.ignored.push(Ignored::Section("[tui] status_command"));
    }
    t
}

/// Checkpoints are the user's way back: a project may turn them on,
/// never off.
fn restrict_checkpoints(on: bool, current: &Config, s: &mut Sorter) -> Option<bool> {
    let cmp = if on || !current.checkpoints {
        Compare::Keep
    } else {
        Compare::Looser
    };
    s.limit("checkpoints", on, cmp)
}

/// `[compaction]`: what keeps the context smaller is kept.
fn restrict_compaction(
    c: CompactionSection,
    current: &Config,
    s: &mut Sorter,
) -> CompactionSection {
    let now = &current.compaction;
    let enabled = c.enabled.and_then(|e| {
        let cmp = if e || !now.enabled {
            Compare::Keep
        } else {
            Compare::Looser
        };
        s.limit("[compaction] enabled", e, cmp)
    });
    CompactionSection {
        enabled,
        threshold: c
            .threshold
            .and_then(|t| s.limit("[compaction] threshold", t, limit(t, Some(now.threshold)))),
        keep_turns: c
            .keep_turns
            .and_then(|k| s.limit("[compaction] keep_turns", k, limit(k, Some(now.keep_turns)))),
    }
}

/// A guard where 0 (or none) is off and a smaller number is stricter.
fn guard(project: u32, current: Option<u32>) -> Compare {
    match (project, current.filter(|&c| c > 0)) {
        (0, None) => Compare::Keep,
        (0, Some(_)) => Compare::Looser,
        (p, current) => limit(p, current),
    }
}

/// A command limit where 0 means "no limit" and a smaller number is
/// stricter.
fn cap(project: u64, current: u64) -> Compare {
    match (project, current) {
        (0, 0) => Compare::Keep,
        (0, _) => Compare::Looser,
        (p, 0) => limit(p, None),
        (p, c) => limit(p, Some(c)),
    }
}

/// `[sandbox]`: limits may be lowered; `read_paths` (more for commands to
/// read) is ignored.
fn restrict_sandbox(x: SandboxSection, current: &Config, s: &mut Sorter) -> SandboxSection {
    if !x.read_paths.is_empty() {
        s.ignored.push(Ignored::Looser {
            key: "[sandbox] read_paths",
            value: format!("{} folders", x.read_paths.len()),
        });
    }
    let now = &current.sandbox.limits;
    let mib = |bytes: u64| bytes / (1024 * 1024);
    let mut size = |key: &'static str, value: Option<u64>, now_bytes: u64| {
        value.and_then(|n| s.limit(key, n, cap(n, mib(now_bytes))))
    };
    let address_space_mib = size(
        "[sandbox] address_space_mib",
        x.address_space_mib,
        now.address_space,
    );
    let memory_mib = size("[sandbox] memory_mib", x.memory_mib, now.memory);
    let file_size_mib = size("[sandbox] file_size_mib", x.file_size_mib, now.file_size);
    let tmp_size_mib = size("[sandbox] tmp_size_mib", x.tmp_size_mib, now.tmp_size);
    let processes = x
        .processes
        .and_then(|n| s.limit("[sandbox] processes", n, cap(n, now.processes)));
    SandboxSection {
        read_paths: Vec::new(),
        max_concurrent: x.max_concurrent.and_then(|n| {
            s.limit(
                "[sandbox] max_concurrent",
                n,
                limit(n, Some(now.max_concurrent)),
            )
        }),
        processes,
        address_space_mib,
        memory_mib,
        file_size_mib,
        tmp_size_mib,
    }
}

/// `[loop_guard]`: a guard may be made stricter, not turned off.
fn restrict_loop_guard(g: LoopGuardSection, current: &Config, s: &mut Sorter) -> LoopGuardSection {
    let now = &current.loop_guard;
    LoopGuardSection {
        repeat_limit: g.repeat_limit.and_then(|n| {
            s.limit(
                "[loop_guard] repeat_limit",
                n,
                guard(n, Some(now.repeat_limit)),
            )
        }),
        no_progress_turns: g.no_progress_turns.and_then(|n| {
            s.limit(
                "[loop_guard] no_progress_turns",
                n,
                guard(n, now.no_progress_turns),
            )
        }),
    }
}

/// Split a project `[permissions]` section (or rules file) into what an
/// untrusted folder keeps (deny and ask rules, a stricter mode,
/// `network = false`) and what it ignores.
pub fn restrict_permissions(
    section: PermissionsSection,
    current: &PermissionSettings,
) -> Restricted<PermissionsSection> {
    let PermissionsSection {
        mode,
        allow,
        ask,
        deny,
        network,
        network_deny,
        web,
        presets,
        env_allow,
    } = section;
    let mut ignored = Vec::new();
    let user_mode = current.mode.unwrap_or_default();
    // Modes were checked when the file was read; one that does not parse
    // is left out.
    let mode = mode.filter(|m| match m.parse::<PermissionMode>() {
        Ok(m) if m.looseness() <= user_mode.looseness() => true,
        Ok(m) => {
            ignored.push(Ignored::Mode(m));
            false
        }
        Err(_) => false,
    });
    if !allow.is_empty() {
        ignored.push(Ignored::AllowRules(allow.len()));
    }
    let network = network.filter(|setting| {
        // A list that does not parse keeps nothing: the layer's error
        // names it when it is applied.
        let looser = current
            .network_of(setting)
            .is_none_or(|n| n.loosens(&current.network));
        if looser {
            ignored.push(Ignored::Network);
        }
        !looser
    });
    if !env_allow.is_empty() {
        ignored.push(Ignored::EnvAllow(env_allow.len()));
    }
    if !web.is_empty() {
        ignored.push(Ignored::Web(web.len()));
    }
    // A project's `@github` could name any host.
    if !presets.is_empty() {
        ignored.push(Ignored::Section("[permissions.presets]"));
    }
    let kept = PermissionsSection {
        mode,
        allow: Vec::new(),
        ask,
        deny,
        network,
        network_deny,
        web: Vec::new(),
        presets: Default::default(),
        env_allow: Vec::new(),
    };
    Restricted { kept, ignored }
}

#[cfg(test)]
mod tests;
