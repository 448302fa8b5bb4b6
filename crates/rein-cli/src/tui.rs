//! `rein` with no command: the interactive app in this workspace.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, anyhow};
use rein_core::{Approvals, SessionStore};
use rein_tui::{CheckpointRow, RewindFailure, RewindOutcome, RewindRequest, RewindView};

use crate::cli::AppArgs;
use crate::exit::Failure;
use crate::providers;
use crate::setup::session::{Opening, Session};
use crate::setup::settings::{RunSettings, load_config, safety_warning};
use crate::setup::store::{open_store, resume_target};

mod prompts;

pub async fn run(args: AppArgs) -> Result<i32, Failure> {
    rein_tui::check_terminal().map_err(|e| Failure::usage(anyhow!(e)))?;
    // Telemetry first: a malformed `OTEL_*` variable is a usage error
    // before any question is asked or the screen changes. Its export
    // failures become a notice in the app, never lines over the screen.
    let (reporter, telemetry_notes) = crate::otel::app_reporter();
    let telemetry = crate::otel::start_reporting(args.otel, reporter)?;
    rein_tools::sandbox::probe_in_background();
    let workspace = crate::setup::workspace::session_workspace(args.workspace.as_deref())?;
    // Asked before the app takes the terminal, on the terminal.
    let trusted = crate::trust_cmd::trusted_for_app(&workspace, args.trust)?;
    let (cfg, report) = load_config(&workspace, args.models, trusted)?;
    cfg.validate().map_err(Failure::usage)?;
    ask_on_terminal(&cfg, &workspace)?;
    let settings = RunSettings::resolve(&args.session, None, &cfg)?;
    let mode = settings.mode;
    let (store, _) = open_store(&cfg, 2).await?;
    let resume = resume_target(store.as_ref(), &workspace, &settings.resume).await?;
    // Fail before the screen changes when there is no model to talk to.
    let first = providers::build_or_offer(&cfg).map_err(Failure::usage)?;
    // Servers that fail after the app opened are told as notices; `/mcp`
    // shows them all.
    let (tx, mcp_notes) = tokio::sync::mpsc::unbounded_channel();
    let mcp_not_started = crate::setup::engine::mcp_not_started(&cfg, first.as_ref());
    let opening = Opening {
        cfg: &cfg,
        workspace: &workspace,
        mode,
        provider: first,
        store: store.clone(),
        approvals: Approvals::Events,
    };
    let Session {
        engine,
        prompts,
        extras,
    } = Session::open(opening, move |line| {
        let _ = tx.send(line);
    })
    .await
    .map_err(Failure::usage)?;

    let mut notices: Vec<String> = safety_warning(mode).into_iter().collect();
    if !trusted {
        notices.extend(report.untrusted_line());
    }
    notices.extend(extras.notes.iter().cloned());
    notices.extend(prompts.commands.warnings().iter().cloned());
    let home = cfg.home.clone();
    let model_choices = crate::model::choices(&cfg.home);
    let alternate_screen = args.alt_screen || cfg.alternate_screen;
    let plugins = crate::plugin::summary_lines(&cfg.home);
    let skill_list: Vec<(String, String)> = extras
        .skills
        .skills
        .iter()
        .map(|s| (s.name.clone(), s.description.clone()))
        .collect();
    let mcp = extras.mcp.clone().map(|hub| mcp_view(hub, mcp_notes));
    let rewind = cfg
        .checkpoints
        .then(|| rewind_view(&cfg.home, store.clone()));
    let idle_notify = cfg.idle_notify;
    let status_command = cfg.status_command.spec();
    let prepare = prompts::prepare(&prompts, &engine);
    let lsp_status = lsp_view(&cfg, &workspace, extras.lsp.clone());
    let setup = rein_tui::Setup {
        home,
        engine,
        providers: provider_factory(cfg),
        model_choices,
        mode,
        resume,
        notices,
        alternate_screen,
        idle_notify,
        prompt: args.prompt,
        mcp,
        mcp_not_started,
        lsp_status: Some(lsp_status),
        commands: prompts.commands.commands().to_vec(),
        expand_command: Some(prompts::expand_command(&prompts)),
        prepare: Some(prepare),
        skills: skill_list,
        plugins,
        rewind,
        // Each run the app starts is observed; the conversation id is the
        // session's.
        watch_runs: telemetry
            .as_ref()
            .map(|t| crate::otel::app_watch(t.observers())),
        notes: telemetry.is_some().then_some(telemetry_notes),
        status_command,
    };
    let session = rein_tui::run(setup).await;
    // The MCP servers, memory and hooks lived as long as the app.
    drop(extras);
    // However the app ended (/quit, Ctrl+C twice, a signal), say how to
    // come back.
    if let Ok(Some(id)) = &session {
        crate::output::err(&format!("session {id} · continue with: rein --resume {id}"));
    }
    // The terminal is the shell's again: the last spans leave (3 s at
    // most), and a failure now is a line on stderr.
    crate::otel::finish(telemetry).await;
    session.map_err(|e| Failure::harness(anyhow!("{e:#}")))?;
    Ok(0)
}

/// Asked on the terminal before the app takes it: the project's hooks
/// whose files changed since the folder was trusted, and its MCP servers
/// not approved.
fn ask_on_terminal(cfg: &crate::config::Config, workspace: &Path) -> Result<(), Failure> {
    crate::hooks::ask_changed(
        cfg,
        workspace,
        &mut std::io::stdin().lock(),
        &mut std::io::stderr(),
    )
    .map_err(Failure::usage)?;
    crate::mcp::project::ask_unapproved(
        &cfg.home,
        workspace,
        &cfg.project_mcp_servers,
        &mut std::io::stdin().lock(),
        &mut std::io::stderr(),
    )
    .map_err(Failure::usage)?;
    Ok(())
}

/// `/model`: only a provider is built; the engine switches to it.
fn provider_factory(cfg: crate::config::Config) -> rein_tui::ProviderFactory {
    Box::new(
        move |text: &str| -> anyhow::Result<Arc<dyn rein_core::Provider>> {
            providers::build_named(&cfg, text)
        },
    )
}

/// The MCP servers as the app shows them: their status, the notes that
/// come later, the servers' prompts, and their forms (the app asks the
/// user instead of the server's policy).
fn mcp_view(
    hub: Arc<rein_mcp::McpHub>,
    notes: tokio::sync::mpsc::UnboundedReceiver<String>,
) -> rein_tui::McpView {
    let (forms_tx, forms) = tokio::sync::mpsc::unbounded_channel();
    hub.set_asker(Arc::new(AppForms(forms_tx)));
    let for_prompt = hub.clone();
    rein_tui::McpView {
        forms,
        status: Box::new(move || crate::mcp::status_lines(&hub)),
        notes,
        prompt: Arc::new(move |command: String, args: String| {
            let hub = for_prompt.clone();
            Box::pin(async move { hub.prompt_text(&command, &args).await })
                as rein_tui::McpFuture<Result<String, String>>
        }),
    }
}

/// `/lsp`: the language servers' own status, a line each.
fn lsp_view(
    cfg: &crate::config::Config,
    workspace: &Path,
    servers: Option<Arc<rein_tools::lsp::Servers>>,
) -> rein_tui::StatusLines {
    let cfg = cfg.clone();
    let root = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    Box::new(move || crate::setup::engine::lsp_status(&cfg, &root, servers.as_ref()))
}

/// The app as the asker of MCP servers' forms.
struct AppForms(tokio::sync::mpsc::UnboundedSender<rein_tui::form::FormRequest>);

#[async_trait::async_trait]
impl rein_mcp::Asker for AppForms {
    async fn ask(
        &self,
        server: &str,
        message: &str,
        schema: &serde_json::Value,
    ) -> Option<rein_mcp::Answer> {
        use rein_tui::form::{FormAnswer, FormRequest};
        let (reply, answer) = tokio::sync::oneshot::channel();
        let request = FormRequest {
            server: server.to_string(),
            message: message.to_string(),
            schema: schema.clone(),
            reply,
        };
        // The app is gone: the server's policy answers.
        self.0.send(request).ok()?;
        Some(match answer.await {
            Ok(FormAnswer::Accept(content)) => rein_mcp::Answer::Accept(content),
            Ok(FormAnswer::Decline) => rein_mcp::Answer::Decline,
            Ok(FormAnswer::Cancel) | Err(_) => rein_mcp::Answer::Cancel,
        })
    }
}

/// The app's rewind (Esc Esc, `/rewind`): a session's checkpoints with
/// the diff from each to the workspace now, and `rein rewind --to K`.
fn rewind_view(home: &Path, store: Arc<dyn SessionStore>) -> RewindView {
    let (list_home, list_store) = (home.to_path_buf(), store.clone());
    let apply_home = home.to_path_buf();
    RewindView {
        list: Box::new(move |session: String| {
            let (home, store) = (list_home.clone(), list_store.clone());
            Box::pin(async move {
                let info = store.get_session(&session).await?;
                tokio::task::spawn_blocking(move || {
                    checkpoint_rows(&home, Path::new(&info.workspace), &info.id)
                })
                .await
                .context("the checkpoint listing stopped")?
            }) as rein_tui::McpFuture<anyhow::Result<Vec<CheckpointRow>>>
        }),
        apply: Box::new(move |request: RewindRequest| {
            let (home, store) = (apply_home.clone(), store.clone());
            Box::pin(async move { apply_rewind(&home, store.as_ref(), request).await })
                as rein_tui::McpFuture<Result<RewindOutcome, RewindFailure>>
        }),
    }
}

/// Each listed checkpoint of `session`, with the files changed since and
/// the start of the diff to the workspace now.
fn checkpoint_rows(
    home: &Path,
    workspace: &Path,
    session: &str,
) -> anyhow::Result<Vec<CheckpointRow>> {
    use crate::rewind::SessionCheckpoints;
    let ck = SessionCheckpoints::open(home, workspace).context("cannot open the checkpoints")?;
    let (Some(now), listed) = ck.overview(session)? else {
        return Ok(Vec::new());
    };
    let mut rows = Vec::with_capacity(listed.len());
    for l in listed {
        let patch = ck.store().patch_text(&l.checkpoint, &now)?;
        rows.push(CheckpointRow {
            k: l.k,
            label: l.entry.title(),
            at: l.entry.at,
            changed: l.changed.len(),
            preview: patch
                .lines()
                .take(rein_tui::rewind::PREVIEW_LINES)
                .collect::<Vec<_>>()
                .join("\n"),
        });
    }
    Ok(rows)
}

/// `rein rewind --to K` for the app: files changed outside rein come back
/// as their own failure, for the app to offer `f`.
async fn apply_rewind(
    home: &Path,
    store: &dyn SessionStore,
    request: RewindRequest,
) -> Result<RewindOutcome, RewindFailure> {
    use crate::rewind::{RewindError, SessionCheckpoints, What, rewind_to};
    let other = |e: anyhow::Error| RewindFailure::Other(e);
    let session = store
        .get_session(&request.session)
        .await
        .map_err(|e| other(e.into()))?;
    let ck = SessionCheckpoints::open(home, Path::new(&session.workspace))
        .context("cannot open the checkpoints")
        .map_err(other)?;
    let what = What {
        code: request.mode.code(),
        conversation: request.mode.conversation(),
    };
    match rewind_to(
        &Arc::new(ck),
        store,
        &session,
        (request.k, what, request.force),
    )
    .await
    {
        Ok(done) => {
            let restored = done.restored.map(|r| (r.written, r.deleted, r.left_alone));
            let (written, deleted, left_alone) = restored.unwrap_or_default();
            Ok(RewindOutcome {
                written,
                deleted,
                left_alone,
                forked: done.forked,
            })
        }
        Err(RewindError::ChangedOutside(files)) => Err(RewindFailure::ChangedOutside(files)),
        Err(e) => Err(other(e.into())),
    }
}
