//! The settings of a run, resolved in one place: the command line over
//! the environment over the files. The files and the environment are
//! layered by [`crate::config`]; the flags go over them here, checked
//! once: the model flags ([`load_config`]), then the permission mode, the
//! session to continue and the budget ([`RunSettings::resolve`]).

use std::path::Path;

use anyhow::anyhow;
use rein_core::{Budget, BudgetCap, BudgetLimit, PermissionMode};

use crate::cli::{BudgetArgs, ModelArgs, SessionArgs};
use crate::config::Config;
use crate::exit::Failure;
use crate::output;
use crate::trust::ProjectReport;

/// Which session a run continues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume {
    /// A new session.
    Fresh,
    /// The newest session of the workspace (`--last`).
    Last,
    /// A session by id or unique prefix (`--resume ID`).
    Session(String),
}

/// What a run starts with, flags over config.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSettings {
    pub mode: PermissionMode,
    pub resume: Resume,
    pub budget: Budget,
}

impl RunSettings {
    /// `--mode`/`--plan`, `--resume`/`--last` and the limit flags over
    /// `cfg` (`budget`: `None` where a command has no limit flags).
    pub fn resolve(
        session: &SessionArgs,
        budget: Option<&BudgetArgs>,
        cfg: &Config,
    ) -> Result<RunSettings, Failure> {
        let flag_mode = match (session.mode.as_deref(), session.plan) {
            (Some(m), _) => parse_mode(Some(m))?,
            (None, true) => Some(PermissionMode::Plan),
            (None, false) => None,
        };
        let resume = match (&session.resume, session.last) {
            (_, true) => Resume::Last,
            (Some(id), false) => Resume::Session(id.clone()),
            (None, false) => Resume::Fresh,
        };
        let budget = match budget {
            Some(flags) => flags.over(cfg.budget)?,
            None => cfg.budget,
        };
        Ok(RunSettings {
            mode: mode_over(flag_mode, cfg),
            resume,
            budget,
        })
    }
}

/// The mode a `--mode` flag names, if one was given.
pub fn parse_mode(flag: Option<&str>) -> Result<Option<PermissionMode>, Failure> {
    flag.map(|m| {
        m.parse::<PermissionMode>()
            .map_err(|e| Failure::usage(anyhow!("--mode: {e}")))
    })
    .transpose()
}

/// The mode a run starts in: the flag's, else the config's, else default.
pub fn mode_over(flag: Option<PermissionMode>, cfg: &Config) -> PermissionMode {
    flag.or(cfg.permissions.mode).unwrap_or_default()
}

impl BudgetArgs {
    /// `--max-turns`, `--max-tokens`, `--max-cost` and `--max-wall-time`
    /// over `budget`: each flag given replaces the config's limit.
    pub fn over(&self, budget: Budget) -> Result<Budget, Failure> {
        let wall = match &self.max_wall_time {
            Some(t) => Some(
                crate::config::parse_duration(t)
                    .map_err(|e| Failure::usage(anyhow!("--max-wall-time: {e}")))?,
            ),
            None => None,
        };
        let cap = BudgetCap {
            max_turns: self.max_turns,
            max_tokens: self.max_tokens,
            max_cost_usd: self.max_cost,
            max_wall_time: wall,
        };
        cap.validate()
            .map_err(|e| Failure::usage(anyhow!("{} {e}", flag_of(e.limit()))))?;
        Ok(budget.set_by(&cap))
    }
}

/// The flag that sets `limit`.
fn flag_of(limit: BudgetLimit) -> &'static str {
    match limit {
        BudgetLimit::Turns => "--max-turns",
        BudgetLimit::Tokens => "--max-tokens",
        BudgetLimit::Cost => "--max-cost",
        BudgetLimit::WallTime => "--max-wall-time",
    }
}

/// What the user must know before a run in `mode` on this machine: bypass
/// turns every protection off; with no sandbox every command asks.
pub fn safety_warning(mode: PermissionMode) -> Option<String> {
    if mode == PermissionMode::Bypass {
        Some(
            "warning: --mode bypass: no sandbox and no permission checks; commands can change \
             anything this user can"
                .into(),
        )
    } else if rein_tools::sandbox::available() == rein_tools::sandbox::SandboxKind::None {
        Some(
            "note: no sandbox works on this machine (bubblewrap missing or unable to create \
             namespaces, and no Landlock in the kernel): every shell command needs approval. \
             Install bubblewrap (apt-get install bubblewrap) to sandbox them."
                .into(),
        )
    } else {
        None
    }
}

/// The layered config of `workspace` with the model flags over it, and
/// what its project settings would change if it were trusted.
pub fn load_config(
    workspace: &Path,
    models: ModelArgs,
    trusted: bool,
) -> Result<(Config, ProjectReport), Failure> {
    let (mut cfg, report) = Config::load(workspace, trusted).map_err(Failure::usage)?;
    apply_model_flags(&mut cfg, models)?;
    Ok((cfg, report))
}

/// [`load_config`] for a headless command: in an untrusted folder, one
/// stderr line names what its project settings asked for and did not get.
pub fn load_config_noting(
    workspace: &Path,
    models: ModelArgs,
    trusted: bool,
) -> Result<Config, Failure> {
    let (cfg, report) = load_config(workspace, models, trusted)?;
    if !trusted && let Some(line) = report.untrusted_line() {
        output::err(&format!("rein: {line}"));
    }
    Ok(cfg)
}

/// `--provider`, `--model`, `--model-path`, `--script`, `--profile` and
/// `--without` over the config.
fn apply_model_flags(cfg: &mut Config, flags: ModelArgs) -> Result<(), Failure> {
    let ModelArgs {
        provider,
        model,
        model_path,
        script,
        profile,
        without,
    } = flags;
    if profile.is_some() {
        cfg.profile = profile;
    }
    cfg.without.extend(without);
    if let Some(path) = model_path {
        if let Some(known) = model.as_deref().and_then(crate::model::find) {
            return Err(Failure::usage(anyhow!(
                "--model {} names a known local model and --model-path a file: pass one of them",
                known.name
            )));
        }
        match provider.as_deref() {
            None | Some("local") => {}
            Some(other) => {
                return Err(Failure::usage(anyhow!(
                    "--model-path is for the local provider, not `{other}`: drop --provider or pass --provider local"
                )));
            }
        }
        cfg.provider = Some("local".into());
        cfg.local.model_path = Some(path);
    }
    let provider_given = provider.is_some();
    if let Some(p) = provider {
        cfg.provider = Some(p);
    }
    if let Some(m) = model {
        cfg.model = Some(m);
    }
    if let Some(s) = script {
        // A script is played by the replay provider: the flag implies it.
        match cfg.provider.as_deref() {
            Some("replay") => {}
            Some(other) if provider_given => {
                return Err(Failure::usage(anyhow!(
                    "--script is played by the replay provider, not `{other}`: drop --provider or pass --provider replay"
                )));
            }
            _ => cfg.provider = Some("replay".into()),
        }
        cfg.replay_script = Some(s);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn config() -> Config {
        let mut cfg = Config::defaults(std::path::PathBuf::from("/nonexistent"));
        cfg.budget.max_turns = 7;
        cfg.budget.max_tokens = Some(100);
        cfg.permissions.mode = Some(PermissionMode::AcceptEdits);
        cfg
    }

    #[test]
    fn flags_go_over_the_config_and_the_config_over_the_defaults() {
        let cfg = config();
        let none = RunSettings::resolve(&SessionArgs::default(), None, &cfg).unwrap();
        assert_eq!(none.mode, PermissionMode::AcceptEdits);
        assert_eq!(none.resume, Resume::Fresh);
        assert_eq!(none.budget, cfg.budget);
        let session = SessionArgs {
            plan: true,
            last: true,
            ..Default::default()
        };
        let budget = BudgetArgs {
            max_turns: Some(20),
            max_cost: Some(0.5),
            ..Default::default()
        };
        let s = RunSettings::resolve(&session, Some(&budget), &cfg).unwrap();
        assert_eq!(s.mode, PermissionMode::Plan);
        assert_eq!(s.resume, Resume::Last);
        // A flag replaces the config's limit, higher or lower.
        assert_eq!(s.budget.max_turns, 20);
        assert_eq!(s.budget.max_tokens, Some(100));
        assert_eq!(s.budget.max_cost_usd, Some(0.5));
    }

    #[test]
    fn a_bad_limit_flag_is_a_usage_error_naming_the_flag() {
        let cfg = config();
        let cases = [
            (
                BudgetArgs {
                    max_turns: Some(0),
                    ..Default::default()
                },
                "--max-turns must be at least 1",
            ),
            (
                BudgetArgs {
                    max_cost: Some(-2.0),
                    ..Default::default()
                },
                "--max-cost must be a positive number of dollars, got -2",
            ),
            (
                BudgetArgs {
                    max_wall_time: Some("soon".into()),
                    ..Default::default()
                },
                "--max-wall-time: ",
            ),
        ];
        for (flags, message) in cases {
            let e = RunSettings::resolve(&SessionArgs::default(), Some(&flags), &cfg).unwrap_err();
            assert_eq!(e.code, crate::exit::USAGE);
            assert!(
                format!("{:#}", e.error).starts_with(message),
                "{:#}",
                e.error
            );
        }
    }
}
