//! `rein exec`: one task, headless.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, anyhow};
use rein_core::{
    AgentEngine, CancellationToken, Event, FnSink, PermissionMode, Permissions, RunRequest,
    SessionStore,
};
use rein_store::SqliteStore;

use crate::cli::{ExecArgs, ModelArgs, SessionArgs};
use crate::config::Config;
use crate::exit::{self, Failure};
use crate::output::{self, HumanOutput, Refusals};
use crate::trust::ProjectReport;

pub use crate::run_setup::{RunExtras, engine_builder, mcp_servers};

/// Canonical workspace from `-C` or the current directory.
pub fn resolve_workspace(dir: Option<&Path>) -> Result<PathBuf, Failure> {
    let dir = match dir {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir()
            .map_err(|e| Failure::usage(anyhow!("cannot read the current directory: {e}")))?,
    };
    match std::fs::canonicalize(&dir) {
        Ok(p) if p.is_dir() => Ok(p),
        Ok(_) => Err(Failure::usage(anyhow!(
            "workspace {} is not a directory",
            dir.display()
        ))),
        Err(e) => Err(Failure::usage(anyhow!(
            "workspace {} does not exist or cannot be read: {e}",
            dir.display()
        ))),
    }
}

/// Open the SQLite session database under the configured home (see
/// [`crate::hosting::open_store`] for the store the user chose).
pub fn open_sqlite(cfg: &Config) -> Result<Arc<SqliteStore>, Failure> {
    let path = cfg.sessions_db();
    SqliteStore::open(&path)
        .map(Arc::new)
        .map_err(|e| Failure::harness(anyhow!("{e}")))
}

fn read_prompt(arg: &str) -> Result<String, Failure> {
    let prompt = if arg == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| Failure::usage(anyhow!("cannot read the prompt from stdin: {e}")))?;
        // A prompt piped in ends with a newline (or several): not part of it.
        text.trim().to_string()
    } else {
        arg.to_string()
    };
    if prompt.trim().is_empty() {
        return Err(Failure::usage(anyhow!("the prompt is empty")));
    }
    Ok(prompt)
}

/// The engine's permission settings from the layered config.
pub fn permissions(cfg: &Config, mode: PermissionMode) -> Permissions {
    let mut p = Permissions::new(mode);
    p.rules = cfg.permissions.rules.clone();
    p.network = cfg.permissions.network;
    p.env_allow = cfg.permissions.env_allow.clone();
    p.state_dir = Some(cfg.home.clone());
    p.read_paths = cfg.sandbox.read_paths.clone();
    p.limits = cfg.sandbox.limits;
    p
}

/// Cancel on the first Ctrl-C or SIGTERM; exit at once on the second.
fn watch_signals(cancel: CancellationToken, quiet: bool) {
    tokio::spawn(async move {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let mut presses = 0;
        loop {
            let term_fut = async {
                match term.as_mut() {
                    Some(t) => {
                        t.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                r = tokio::signal::ctrl_c() => if r.is_err() { return },
                _ = term_fut => {}
            }
            presses += 1;
            if presses == 1 {
                cancel.cancel();
                if !quiet {
                    output::err("cancelling… (press Ctrl-C again to quit at once)");
                }
            } else {
                // Exiting now skips every drop guard: take the running
                // commands down explicitly.
                rein_tools::bash::kill_running_commands();
                std::process::exit(exit::CANCELLED);
            }
        }
    });
}

/// `rein exec`. With `--json`, a run that fails before it starts still
/// ends its output with a `stopped` event (reason `usage_error` or
/// `harness_error`, the message in `error`), so a consumer always gets one.
pub async fn run(args: ExecArgs) -> Result<i32, Failure> {
    let json = args.json;
    let result = run_task(args).await;
    if json && let Err(failure) = &result {
        let reason = if failure.code == exit::USAGE {
            rein_core::StopReason::UsageError
        } else {
            rein_core::StopReason::HarnessError
        };
        let stopped = Event::Stopped {
            reason,
            turns: 0,
            usage: Default::default(),
            final_text: String::new(),
            error: Some(format!("{:#}", failure.error)),
            totals: Default::default(),
            refused: Vec::new(),
        };
        if let Ok(line) = serde_json::to_string(&stopped) {
            output::out(&line);
        }
    }
    result
}

async fn run_task(args: ExecArgs) -> Result<i32, Failure> {
    let workspace = crate::workspace_check::session_workspace(args.workspace.as_deref())?;
    let trusted = crate::trust::command::trusted_for_run(&workspace, args.trust)?;
    let model_chosen = args.models.model.is_some() || args.models.model_path.is_some();
    let mut cfg = load_config_noting(&workspace, args.models, trusted)?;
    if let Some(n) = args.max_turns {
        if n == 0 {
            return Err(Failure::usage(anyhow!("--max-turns must be at least 1")));
        }
        cfg.max_turns = n;
    }
    if let Some(n) = args.max_tokens {
        if n == 0 {
            return Err(Failure::usage(anyhow!("--max-tokens must be at least 1")));
        }
        cfg.max_tokens = Some(n);
    }
    if let Some(c) = args.max_cost {
        if !(c > 0.0 && c.is_finite()) {
            return Err(Failure::usage(anyhow!(
                "--max-cost must be a positive number of dollars, got {c}"
            )));
        }
        cfg.max_cost_usd = Some(c);
    }
    if let Some(t) = &args.max_wall_time {
        cfg.max_wall_time = Some(
            crate::config::parse_duration(t)
                .map_err(|e| Failure::usage(anyhow!("--max-wall-time: {e}")))?,
        );
    }
    cfg.validate().map_err(Failure::usage)?;
    let telemetry = crate::otel::start(args.otel)?;
    let mode = start_mode(&cfg, &args.session)?;
    let words = args.prompt.join(" ");
    let command = match &args.command {
        Some(name) => Some(crate::commands::expand(&cfg, &workspace, name, &words)?),
        None => None,
    };
    let prompt = match &command {
        Some((_, message)) => message.clone(),
        None => read_prompt(&words)?,
    };
    // A command's `model` is used when none was chosen on the command line.
    if let Some((c, _)) = &command
        && let Some(model) = c.model.as_ref().filter(|_| !model_chosen)
    {
        output::err(&format!(
            "note: the command `{}` runs on its model `{model}`",
            c.name
        ));
        cfg.model = Some(model.clone());
    }
    if let Some(warning) = safety_warning(mode) {
        output::err(&warning);
    }
    let provider = crate::providers::build_or_offer(&cfg).map_err(Failure::usage)?;
    // Building a tokenizer's tables takes a moment: off the async threads.
    let model = provider.model().to_string();
    tokio::task::spawn_blocking(move || rein_providers::tokens::warm_up(&model));
    // The SQLite file, or the PostgreSQL database REIN_STORE names.
    let (store, _) = crate::hosting::open_store(&cfg, 2).await?;

    let resume = resume_target(store.as_ref(), &workspace, &args.session).await?;

    let loaded = crate::run_setup::LoadedExtras::load(&cfg, &workspace, provider.as_ref()).await;
    for note in &loaded.notes {
        output::err(&format!("note: {note}"));
    }
    let mcp = loaded.mcp.clone();
    let skills = loaded.skills.clone();
    let extras = loaded.extras();
    let builder = engine_builder(&cfg, &workspace, mode, provider, store, &extras);
    let engine = builder
        .build()
        .context("cannot start the engine")
        .map_err(Failure::usage)?;
    // A command's `allowed-tools` narrows what the model is offered
    // (Claude's names are read as rein's; a `Bash(git:*)` pattern as the
    // whole tool).
    if let Some((command, _)) = &command {
        let allowed: Vec<String> = command
            .allowed_tools
            .iter()
            .map(|t| rein_tools::claude_names::rein_name(t))
            .collect();
        if !allowed.is_empty() {
            engine.replace_tools(|name| !allowed.iter().any(|a| a == name), Vec::new());
        }
    }
    // Skills the prompt names (`$name`) and resources (`@server:uri`) go
    // with it.
    let mut prompt = skills.attach_mentions(&prompt);
    if let Some(hub) = &mcp {
        let (attached, notes) = hub.attach_mentions(&prompt).await;
        prompt = attached;
        for note in notes {
            output::err(&format!("note: {note}"));
        }
    }
    if let Some(hub) = &mcp {
        let lazy = crate::mcp::lazy_tools(&cfg, &engine);
        crate::mcp::follow(hub, &engine, lazy, |line| {
            output::err(&format!("note: {line}"));
        });
    }

    let mut observer = telemetry.as_ref().map(|t| t.observer());
    let cancel = CancellationToken::new();
    watch_signals(cancel.clone(), args.json);
    let request = RunRequest {
        prompt,
        resume,
        mode: Some(mode),
        control: None,
    };
    let outcome = if args.json {
        let mut refusals = Refusals::default();
        let mut sink = FnSink(|event: Event| {
            crate::otel::observe(&mut observer, &event);
            refusals.note(&event);
            match serde_json::to_string(&event) {
                Ok(line) => output::out(&line),
                Err(e) => output::err(&format!("cannot encode event: {e}")),
            }
        });
        let outcome = engine.run(request, cancel, &mut sink).await;
        end_session(&engine, &outcome, &mut sink).await;
        refusals.report();
        outcome
    } else {
        let mut human = HumanOutput::default();
        let mut sink = FnSink(|event: Event| {
            crate::otel::observe(&mut observer, &event);
            human.show(&event)
        });
        let outcome = engine.run(request, cancel, &mut sink).await;
        end_session(&engine, &outcome, &mut sink).await;
        outcome
    };
    drop(observer);
    crate::otel::finish(telemetry).await;
    Ok(exit::for_outcome(&outcome))
}

/// The `SessionEnd` hooks of a headless run's session.
async fn end_session(
    engine: &rein_core::AgentEngine,
    outcome: &rein_core::RunOutcome,
    sink: &mut dyn rein_core::EventSink,
) {
    if let Some(id) = &outcome.session_id {
        engine
            .end_session(id, rein_core::EndReason::Other, sink)
            .await;
    }
}

/// `rein compact [SESSION]`.
pub async fn compact(args: crate::cli::CompactArgs) -> Result<i32, Failure> {
    let workspace = resolve_workspace(args.workspace.as_deref())?;
    let trusted = crate::trust::command::trusted_for_run(&workspace, false)?;
    let cfg = load_config_noting(&workspace, args.models, trusted)?;
    cfg.validate().map_err(Failure::usage)?;
    let (store, _) = crate::hosting::open_store(&cfg, 2).await?;
    let id = match args.session {
        Some(id) => find_session(store.as_ref(), &id, "").await?,
        None => latest_session(store.as_ref(), &workspace, "no session to compact").await?,
    };
    let provider = crate::providers::build(&cfg).map_err(Failure::usage)?;
    let engine = AgentEngine::builder(provider, store)
        .workspace(&workspace)
        .tools(rein_tools::builtin_tools())
        .compaction(cfg.compaction.clone())
        .build()
        .context("cannot start the engine")
        .map_err(Failure::usage)?;
    let cancel = CancellationToken::new();
    watch_signals(cancel.clone(), true);
    let mut note = None;
    let mut sink = FnSink(|event: Event| {
        if let Event::Compaction {
            summarized,
            replaced_messages,
            tokens_before,
            tokens_after,
            note: why,
            ..
        } = event
        {
            note = Some(format!(
                "compacted session {id}: {replaced_messages} messages {} (about {tokens_before} → {tokens_after} tokens){}",
                if summarized { "summarized" } else { "dropped" },
                why.map(|w| format!("; {w}")).unwrap_or_default()
            ));
        }
    });
    let changed = engine
        .compact_session(&id, cancel, &mut sink)
        .await
        .map_err(|e| Failure::harness(anyhow!("{e}")))?;
    match note {
        Some(n) => output::out(&n),
        None if !changed => output::out(&format!(
            "session {id}: nothing to compact (it has no turns older than the ones kept)"
        )),
        None => {}
    }
    Ok(exit::COMPLETED)
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
fn load_config_noting(
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

/// The permission mode a run starts in: `--mode`, `--plan`, then config.
pub fn start_mode(cfg: &Config, args: &SessionArgs) -> Result<PermissionMode, Failure> {
    Ok(match (args.mode.as_deref(), args.plan) {
        (Some(m), _) => m
            .parse::<PermissionMode>()
            .map_err(|e| Failure::usage(anyhow!("--mode: {e}")))?,
        (None, true) => PermissionMode::Plan,
        (None, false) => cfg.permissions.mode.unwrap_or_default(),
    })
}

/// The session `--last` or `--resume ID` names, if any.
pub async fn resume_target(
    store: &dyn SessionStore,
    workspace: &Path,
    args: &SessionArgs,
) -> Result<Option<String>, Failure> {
    if args.last {
        Ok(Some(
            latest_session(store, workspace, "--last: no session to resume").await?,
        ))
    } else if let Some(id) = &args.resume {
        Ok(Some(find_session(store, id, "--resume: ").await?))
    } else {
        Ok(None)
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

/// `--provider`, `--model`, `--model-path` and `--script` over the config.
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

/// The session an id or unique prefix names; unknown or ambiguous ids are
/// usage errors (`context` prefixes their message).
async fn find_session(
    store: &dyn SessionStore,
    id: &str,
    context: &str,
) -> Result<String, Failure> {
    match store.get_session(id).await {
        Ok(info) => Ok(info.id),
        Err(e @ (rein_core::StoreError::NotFound(_) | rein_core::StoreError::Ambiguous { .. })) => {
            Err(Failure::usage(anyhow!("{context}{e}")))
        }
        Err(other) => Err(Failure::harness(anyhow!("{other}"))),
    }
}

/// The newest session of `workspace`; none is a usage error saying `none`.
async fn latest_session(
    store: &dyn SessionStore,
    workspace: &Path,
    none: &str,
) -> Result<String, Failure> {
    let ws = workspace.display().to_string();
    let latest = store
        .list_sessions(Some(&ws), 1)
        .await
        .map_err(|e| Failure::harness(anyhow!("{e}")))?;
    match latest.into_iter().next() {
        Some(s) => Ok(s.id),
        None => Err(Failure::usage(anyhow!("{none} in {ws}"))),
    }
}
