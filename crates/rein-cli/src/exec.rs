//! `rein exec`: one task, headless.

mod answer;
mod stream;

use std::io::Read;

use anyhow::{Context, anyhow};
use rein_core::commands::CustomCommand;
use rein_core::{AgentEngine, Approvals, CancellationToken, Event, FnSink, RunRequest};

use crate::cli::ExecArgs;
use crate::exit::{self, Failure};
use crate::output::{self, HumanOutput, Refusals};
use crate::setup::command_context::LiveRun;
use crate::setup::images;
use crate::setup::prompt::CommandSet;
use crate::setup::session::{Opening, Session};
use crate::setup::settings::{RunSettings, load_config_noting, safety_warning};
use crate::setup::store::{find_session, latest_session, open_store, resume_target};
use crate::setup::workspace::resolve_workspace;

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
    let json = args.json || args.input_format.is_some();
    let result = match args.input_format {
        Some(crate::cli::InputFormat::StreamJson) => stream::run(args).await,
        None => run_task(args).await.map(|(code, _)| code),
    };
    if json && let Err(failure) = &result {
        let reason = if failure.code == exit::USAGE {
            rein_core::StopReason::UsageError
        } else {
            rein_core::StopReason::HarnessError
        };
        print_stopped_before_running(reason, format!("{:#}", failure.error));
    }
    result
}

/// The `stopped` line of a run that never started, for a JSON Lines
/// reader: every run it asked for ends with one, even a refused command
/// line.
pub fn print_stopped_before_running(reason: rein_core::StopReason, error: String) {
    let stopped = Event::Stopped {
        reason,
        turns: 0,
        usage: Default::default(),
        final_text: String::new(),
        error: Some(error),
        totals: Default::default(),
        refused: Vec::new(),
    };
    if let Ok(line) = serde_json::to_string(&stopped) {
        output::out(&line);
    }
}

/// A command's `model` is this run's model when none was chosen on the
/// command line (`--model` wins); either way it is taken out of the
/// command, so the shared preparation builds no second provider for it.
fn command_model(cfg: &mut crate::config::Config, command: &mut CustomCommand, model_chosen: bool) {
    if let Some(model) = command.model.take().filter(|_| !model_chosen) {
        output::err(&format!(
            "note: the command `{}` runs on its model `{model}`",
            command.name
        ));
        cfg.model = Some(model);
    }
}

/// One headless run: its exit code and how it ended. Without `--json`
/// the answer goes to stdout, unless `args.keep_answer` (the caller
/// shows it its own way).
pub(crate) async fn run_task(args: ExecArgs) -> Result<(i32, rein_core::RunOutcome), Failure> {
    let schema = args
        .output_schema
        .as_deref()
        .map(answer::AnswerSchema::read)
        .transpose()?;
    let Opened {
        mode,
        session,
        resume,
        telemetry,
        expanded,
        images,
        ..
    } = open(&args, Some(&args.prompt.join(" ")), Approvals::Refuse).await?;
    let expanded = expanded.ok_or_else(|| Failure::usage(anyhow!("the prompt is empty")))?;
    let engine = &session.engine;
    let cancel = args.cancel.clone().unwrap_or_default();
    // A command's `!` lines and `@path` files through the gate (a line
    // that needs asking is refused: nobody can answer), its scope, and
    // the skills (`$name`) and resources (`@server:uri`) the text names.
    let live = LiveRun {
        engine,
        session_id: resume.as_deref(),
        mode,
        events: rein_core::no_events(),
        cancel: cancel.clone(),
    };
    let prepared = (session.prompts.prepare(&expanded, &live).await).map_err(|e| {
        for note in e.notes() {
            output::err(&format!("note: {note}"));
        }
        Failure::usage(anyhow!(e))
    })?;
    for note in &prepared.notes {
        output::err(&format!("note: {note}"));
    }

    let mut observer = telemetry.as_ref().map(|t| t.observer());
    if args.cancel.is_none() {
        watch_signals(cancel.clone(), args.json);
    }
    let mut scope = prepared.scope;
    // The model is held to the schema where it can be (a hosted API's
    // structured output, the local model's grammar); the answer is
    // checked either way.
    scope.answer_schema = schema
        .as_ref()
        .map(|s| std::sync::Arc::new(s.schema.clone()));
    let request = RunRequest {
        prompt: prepared.text,
        images,
        resume: prepared.session.or(resume),
        mode: Some(mode),
        control: None,
        scope,
    };
    let mut refusals = Refusals::default();
    let mut human = HumanOutput::default();
    // With a schema the answer is printed once it fits.
    human.keep_answer = args.keep_answer || schema.is_some();
    let json = args.json;
    // On a terminal the live line's seconds move on their own.
    let ticker = (!json).then(output::live::Ticker::start);
    let mut sink = FnSink(|event: Event| {
        crate::otel::observe(&mut observer, &event);
        if let Some(tap) = &args.tap {
            (tap.0)(&event);
        }
        if !json {
            return human.show(&event);
        }
        refusals.note(&event);
        match serde_json::to_string(&event) {
            Ok(line) => output::out(&line),
            Err(e) => output::err(&format!("cannot encode event: {e}")),
        }
    });
    let (outcome, misfit) =
        run_answering(engine, request, schema.as_ref(), cancel, &mut sink).await;
    end_session(engine, &outcome, &mut sink).await;
    drop(ticker);
    if json {
        refusals.report();
    }
    drop(observer);
    crate::otel::finish(telemetry).await;
    let code = deliver(&args, &outcome, misfit, schema.is_some())?;
    Ok((code, outcome))
}

/// The answer's last steps: `-o`'s file, an answer that fits its schema
/// printed (or what is wrong with it said); the exit code.
fn deliver(
    args: &ExecArgs,
    outcome: &rein_core::RunOutcome,
    misfit: Option<String>,
    has_schema: bool,
) -> Result<i32, Failure> {
    if let Some(path) = &args.output_last_message {
        answer::write_last_message(path, &outcome.final_text)?;
    }
    let code = exit::for_outcome(outcome);
    if let Some(problem) = misfit {
        output::err(&format!("rein: {problem}"));
        return Ok(exit::SCHEMA_MISMATCH);
    }
    if has_schema && code == exit::COMPLETED && !args.json && !args.keep_answer {
        output::out(outcome.final_text.trim());
    }
    Ok(code)
}

/// Run `request`; with a `schema`, an answer that misses it gets one
/// more turn to fix it. The outcome, and what is still wrong.
async fn run_answering(
    engine: &rein_core::AgentEngine,
    request: RunRequest,
    schema: Option<&answer::AnswerSchema>,
    cancel: CancellationToken,
    sink: &mut dyn rein_core::EventSink,
) -> (rein_core::RunOutcome, Option<String>) {
    let (mode, scope) = (request.mode, request.scope.clone());
    let outcome = engine.run(request, cancel.clone(), sink).await;
    let Some(schema) = schema else {
        return (outcome, None);
    };
    if outcome.reason != rein_core::StopReason::Completed {
        return (outcome, None);
    }
    let Err(problem) = schema.check(&outcome.final_text) else {
        return (outcome, None);
    };
    output::err(&format!("note: {problem}; the model is asked once more"));
    let retry = RunRequest {
        prompt: schema.correction(&problem),
        images: Vec::new(),
        resume: outcome.session_id.clone(),
        mode,
        control: None,
        scope,
    };
    let outcome = engine.run(retry, cancel, sink).await;
    let misfit = (outcome.reason == rein_core::StopReason::Completed)
        .then(|| schema.check(&outcome.final_text).err())
        .flatten();
    (outcome, misfit)
}

/// What every headless run opens before its first prompt.
pub(crate) struct Opened {
    pub mode: rein_core::PermissionMode,
    pub session: Session,
    /// The session to continue (`--resume`, `--last`).
    pub resume: Option<String>,
    pub telemetry: Option<rein_telemetry::Telemetry>,
    /// The workspace's commands, for the prompts to come.
    pub commands: CommandSet,
    /// `words` expanded (a command's text for `--command` or `/name`).
    pub expanded: Option<crate::setup::prompt::Expanded>,
    /// The images `--image` attaches to the first prompt.
    pub images: Vec<rein_core::Image>,
}

/// Open a headless run: workspace, trust, config and flags, the prompt's
/// command (`words`: the first prompt, which may choose the model), the
/// provider, the store and the session.
pub(crate) async fn open(
    args: &ExecArgs,
    words: Option<&str>,
    approvals: Approvals,
) -> Result<Opened, Failure> {
    rein_tools::sandbox::probe_in_background();
    let workspace = crate::setup::workspace::session_workspace(args.workspace.as_deref())?;
    let trusted = crate::trust_cmd::trusted_for_run(&workspace, args.trust)?;
    let model_chosen = args.models.model.is_some() || args.models.model_path.is_some();
    let mut cfg = load_config_noting(&workspace, args.models.clone(), trusted)?;
    let settings = RunSettings::resolve(&args.session, Some(&args.budget), &cfg)?;
    cfg.budget = settings.budget;
    cfg.validate().map_err(Failure::usage)?;
    let telemetry = crate::otel::start(args.otel)?;
    let mode = settings.mode;
    let commands = CommandSet::discover(&cfg, &workspace);
    let mut expanded = match (&args.command, words) {
        (Some(name), Some(words)) => Some(commands.expand_named(name, words)),
        (None, Some(words)) => Some(commands.expand(&read_prompt(words)?)),
        (_, None) => None,
    }
    .transpose()
    .map_err(|e| Failure::usage(anyhow!(e)))?;
    if let Some(c) = expanded.as_mut().and_then(|e| e.command.as_mut()) {
        command_model(&mut cfg, c, model_chosen);
    }
    let images = images::read_all(&args.images).map_err(|e| Failure::usage(anyhow!(e)))?;
    if !images.is_empty() {
        images::refused_before_building(&cfg).map_err(|e| Failure::usage(anyhow!(e)))?;
    }
    let provider = crate::providers::build_or_offer(&cfg).map_err(Failure::usage)?;
    if !images.is_empty() {
        images::refused_by(provider.as_ref()).map_err(|e| Failure::usage(anyhow!(e)))?;
    }
    // The SQLite file, or the PostgreSQL database REIN_STORE names.
    let (store, _) = open_store(&cfg, 2).await?;
    // After the store: the sandbox probe started above has had its time.
    if let Some(warning) = safety_warning(mode) {
        output::err(&warning);
    }
    let resume = resume_target(store.as_ref(), &workspace, &settings.resume).await?;
    let opening = Opening {
        cfg: &cfg,
        workspace: &workspace,
        mode,
        provider,
        store,
        approvals,
    };
    let session = Session::open(opening, |line| output::err(&format!("note: {line}")))
        .await
        .map_err(Failure::usage)?;
    for note in &session.extras.notes {
        output::err(&format!("note: {note}"));
    }
    Ok(Opened {
        mode,
        session,
        resume,
        telemetry,
        commands,
        expanded,
        images,
    })
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
    let trusted = crate::trust_cmd::trusted_for_run(&workspace, false)?;
    let cfg = load_config_noting(&workspace, args.models, trusted)?;
    cfg.validate().map_err(Failure::usage)?;
    let (store, _) = open_store(&cfg, 2).await?;
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
