//! Candidates, verified (the `candidates` lever): when the check still
//! fails once the check lever's rounds are spent, a few alternative
//! fixes are sampled and each is tried in a scratch copy of the
//! workspace; the first whose check passes there is applied to the
//! workspace, the others leave nothing behind.
//!
//! Why after the rounds: a failure handed back keeps the model's context
//! and costs one turn, so it comes first; candidates are the fallback
//! when the model's own tries are spent (or it stopped changing files).
//!
//! Steps:
//! 1. Ask the coach whether candidates are due; skip them, saying why,
//!    when there is nowhere to try them (no scratch folder, or one inside
//!    the workspace) or the workspace is too big to copy.
//! 2. Remove scratch copies that crashed runs left (`scratch::sweep`).
//! 3. Read the files the candidate is shown (`read_file` through the
//!    gate, in the workspace): those the run changed or read, or the
//!    request, the check or its failure name (`coach::candidates`).
//! 4. For each candidate, within the count and the time cap: copy the
//!    workspace; ask the model once from a short fresh context (the
//!    user's request, then the failure worded anew and those files, not
//!    the conversation; warmer sampling, only the tools that edit, a
//!    call required); run its
//!    calls through the gate in the copy; refuse it when the check's
//!    own files differ from the workspace's; run the check through the
//!    gate in the copy (the sandbox rooted there). The copy is removed
//!    when the candidate is done, whatever happened.
//! 5. The first that passes wins: its answer (the calls that worked in
//!    the copy, no others) is committed and its calls
//!    run in the workspace as a turn's calls do (events, checkpoints,
//!    the gate); the check runs once more there; the model is told, and
//!    the run goes on for its answer. None passing: say so; the run ends.

use std::path::{Path, PathBuf};

use tokio::time::Instant;

use super::check::first_line;
use super::{RunCtx, RunLoop, Stop};
use crate::engine::builder::CandidatesConfig;
use crate::engine::coach::{self, candidates, check};
use crate::engine::scratch::{self, Scratch};
use crate::event::{Event, StopReason};
use crate::provider::ToolChoice;
use crate::schema::{AssistantMessage, ContentPart, Message, ToolCall};
use crate::tool::ToolAccess;

/// What every candidate of a run is shown besides its failure: the
/// user's request and the files (path, text) as they are now.
struct Fresh {
    request: String,
    files: Vec<(String, String)>,
}

/// What became of one candidate.
enum Tried {
    /// Its check passed in the copy: its answer.
    Passed(AssistantMessage),
    /// Not kept, and why (said to the user).
    Failed(String),
    /// Trying more is pointless (the gate refused the check, the copy
    /// could not be made, the service failed), and why.
    Stopped(String),
}

impl RunLoop<'_> {
    /// Whether a candidate passed the check and was applied (the run then
    /// goes on for the model's answer).
    pub(super) async fn candidates(&mut self, ctx: &mut RunCtx<'_>) -> Result<bool, Stop> {
        let Some((command, output)) = self.coach.as_ref().and_then(|c| c.candidates_due()) else {
            return Ok(false);
        };
        let cfg = self.engine.inner.config.candidates.clone();
        let workspace = self.engine.inner.workspace.clone();
        let winner = match scratch_root(&cfg, &workspace) {
            Ok(root) => {
                let fresh = self.fresh(ctx, &command, &output).await;
                let failure = (command.as_str(), output.as_str());
                self.try_all(ctx, &cfg, &root, failure, &fresh).await?
            }
            Err(why) => {
                notice(ctx, format!("no alternative fixes tried: {why}"));
                None
            }
        };
        let Some((n, answer)) = winner else {
            if let Some(c) = &mut self.coach {
                c.candidates_tried(false);
            }
            return Ok(false);
        };
        self.apply(ctx, n, answer, &command).await?;
        Ok(true)
    }

    /// Try the candidates in turn; the first that passes, with its number.
    async fn try_all(
        &mut self,
        ctx: &mut RunCtx<'_>,
        cfg: &CandidatesConfig,
        root: &Path,
        (command, output): (&str, &str),
        fresh: &Fresh,
    ) -> Result<Option<(u32, AssistantMessage)>, Stop> {
        let swept = root.to_path_buf();
        let _ = tokio::task::spawn_blocking(move || scratch::sweep(&swept)).await;
        notice(
            ctx,
            format!(
                "the check `{command}` still fails: trying up to {} alternative fixes, each in a \
                 scratch copy of the workspace",
                cfg.max
            ),
        );
        let deadline = Instant::now() + cfg.time;
        for i in 0..cfg.max {
            let n = i + 1;
            if Instant::now() >= deadline {
                notice(
                    ctx,
                    format!("alternative fixes stopped at the time cap ({:?})", cfg.time),
                );
                break;
            }
            if let Some(reason) = ctx.budget.as_ref().and_then(|b| b.exceeded()) {
                return Err(Stop::new(reason));
            }
            match self
                .try_one(ctx, i, root, (command, output, fresh), deadline)
                .await?
            {
                Tried::Passed(answer) => return Ok(Some((n, answer))),
                Tried::Failed(why) => notice(ctx, format!("alternative fix {n}: {why}; not kept")),
                Tried::Stopped(why) => {
                    notice(ctx, format!("alternative fixes stopped at fix {n}: {why}"));
                    break;
                }
            }
        }
        notice(
            ctx,
            format!("no alternative fix passed the check `{command}`"),
        );
        Ok(None)
    }

    /// Candidate `i` (from 0), tried in its own scratch copy (removed on
    /// return, or when a cancelled run drops this future).
    async fn try_one(
        &mut self,
        ctx: &mut RunCtx<'_>,
        i: u32,
        root: &Path,
        (command, output, fresh): (&str, &str, &Fresh),
        deadline: Instant,
    ) -> Result<Tried, Stop> {
        let workspace = self.engine.inner.workspace.clone();
        let (from, into) = (workspace.clone(), root.to_path_buf());
        let made = tokio::task::spawn_blocking(move || Scratch::copy(&into, &from)).await;
        let copy = match made {
            Ok(Ok(copy)) => copy,
            Ok(Err(e)) => return Ok(Tried::Stopped(format!("the workspace was not copied: {e}"))),
            Err(e) => return Ok(Tried::Stopped(format!("the workspace was not copied: {e}"))),
        };
        let answer =
            match tokio::time::timeout_at(deadline, self.sample(ctx, i, command, output, fresh))
                .await
            {
                Err(_) => return Ok(Tried::Stopped("the time cap came first".into())),
                Ok(answer) => answer?,
            };
        let Some(answer) = answer else {
            return Ok(Tried::Stopped("the model service failed".into()));
        };
        let mut answer = answer;
        let (mut done_ids, mut first_error) = (Vec::new(), None);
        for call in answer.tool_calls().cloned().collect::<Vec<_>>() {
            let id = call.id.clone();
            let done = self.run_call_in(ctx, call, &copy.workspace).await;
            if !done.result.is_error && done.effects.access.is_some() {
                done_ids.push(id);
            } else if first_error.is_none() {
                first_error = Some(format!(
                    "{}: {}",
                    done.result.name,
                    first_line(&done.result.output)
                ));
            }
        }
        // Only what worked in the copy may reach the workspace: a call
        // refused there (a path out of the copy) is never replayed.
        answer.content.retain(|part| match part {
            ContentPart::ToolCall(c) => done_ids.contains(&c.id),
            _ => true,
        });
        if done_ids.is_empty() {
            let why = first_error.map_or(String::new(), |e| format!(" ({e})"));
            return Ok(Tried::Failed(format!("it made no edit{why}")));
        }
        let (ws, sc, cmd) = (
            workspace.clone(),
            copy.workspace.clone(),
            command.to_string(),
        );
        let differ =
            tokio::task::spawn_blocking(move || scratch::check_files_differ(&ws, &sc, &cmd))
                .await
                .unwrap_or_else(|_| Some(PathBuf::from("?")));
        if let Some(file) = differ {
            let why = format!("it changed the check's own file {}", file.display());
            return Ok(Tried::Failed(why));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let secs = left.as_secs().clamp(1, check::TIMEOUT_SECS);
        let ran = self.run_check(ctx, command, &copy.workspace, secs).await;
        if ctx.cancel.is_cancelled() {
            return Err(Stop::new(StopReason::Cancelled));
        }
        Ok(
            match (ran.effects.access, check::passed(&ran.result.output)) {
                (None, _) => Tried::Stopped(format!(
                    "the check was not run in the copy: {}",
                    first_line(&ran.result.output)
                )),
                (Some(_), true) => Tried::Passed(answer),
                (Some(_), false) => Tried::Failed(format!(
                    "the check failed in its copy ({})",
                    first_line(ran.result.output.trim_end().lines().last().unwrap_or(""))
                )),
            },
        )
    }

    /// Ask the model for candidate `i`: the user's request, then the
    /// failure worded anew with the files of `fresh` (not the
    /// conversation), sampled warmer, an edit required. None: the
    /// service failed (a cancelled run stops).
    async fn sample(
        &self,
        ctx: &mut RunCtx<'_>,
        i: u32,
        command: &str,
        output: &str,
        fresh: &Fresh,
    ) -> Result<Option<AssistantMessage>, Stop> {
        let mut req = self.req.clone();
        let output = candidates::relative_paths(output, &self.engine.inner.workspace);
        let asked = candidates::instruction(i, command, &output, &fresh.files);
        req.messages = vec![Message::user(fresh.request.clone()), Message::user(asked)];
        req.temperature = Some(candidates::temperature(i));
        req.tool_choice = ToolChoice::Required;
        coach::narrow_to_edits(&mut req.tools, &self.gate);
        match self.model_turn(ctx, &req).await {
            Ok(answer) => Ok(Some(answer)),
            Err(f) if f.stop.reason == StopReason::Cancelled => Err(f.stop),
            Err(_) => Ok(None),
        }
    }

    /// Apply candidate `n`'s `answer` to the workspace: committed, its
    /// calls run as a turn's, the check run there once more, the model
    /// told.
    async fn apply(
        &mut self,
        ctx: &mut RunCtx<'_>,
        n: u32,
        mut answer: AssistantMessage,
        command: &str,
    ) -> Result<(), Stop> {
        self.conv.unique_call_ids(&mut answer);
        let calls: Vec<_> = answer.tool_calls().cloned().collect();
        ctx.commit_to(&mut self.conv, Message::Assistant(answer))
            .await?;
        notice(
            ctx,
            format!("alternative fix {n} passed the check `{command}` in its copy: applying it"),
        );
        self.tool_round(ctx, calls).await?;
        let workspace = self.engine.inner.workspace.clone();
        let ran = self
            .run_check(ctx, command, &workspace, check::TIMEOUT_SECS)
            .await;
        let passed = ran.effects.access.is_some() && check::passed(&ran.result.output);
        if let Some(c) = &mut self.coach {
            c.candidates_tried(passed);
        }
        let (said, told) = match passed {
            true => (
                format!("alternative fix {n} is applied; the check `{command}` passes"),
                format!(
                    "[rein] I tried a different fix (the calls above) and `{command}` passes now. \
                     Answer in one sentence what the fix changed."
                ),
            ),
            false => (
                format!(
                    "alternative fix {n} is applied but the check `{command}` fails in the workspace"
                ),
                format!(
                    "[rein] I applied a different fix (the calls above) but `{command}` still \
                     fails:\n{}\nAnswer in one sentence.",
                    first_line(ran.result.output.trim_end().lines().last().unwrap_or(""))
                ),
            ),
        };
        notice(ctx, said);
        ctx.commit_to(&mut self.conv, Message::user(told)).await?;
        Ok(())
    }
}

impl RunLoop<'_> {
    /// What the candidates are shown: the user's last request, and the
    /// files `coach::candidates::files_to_show` picks, each read with
    /// `read_file` through the gate in the workspace (one it refuses is
    /// left out).
    async fn fresh(&self, ctx: &mut RunCtx<'_>, command: &str, output: &str) -> Fresh {
        let workspace = self.engine.inner.workspace.clone();
        let request = self
            .conv
            .messages
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::User { content, .. } if !crate::schema::is_harness_note(content) => {
                    Some(content.clone())
                }
                _ => None,
            })
            .unwrap_or_default();
        // Paths in the failure as the check printed them in the workspace.
        let prefix = format!("{}/", workspace.display());
        let output = output.replace(&prefix, "");
        let looked = self.looked_paths();
        let is_file = |rel: &str| {
            let path = Path::new(rel);
            path.components()
                .all(|c| matches!(c, std::path::Component::Normal(_)))
                && std::fs::symlink_metadata(workspace.join(path)).is_ok_and(|m| m.is_file())
        };
        let paths = candidates::files_to_show(&looked, &request, command, &output, is_file);
        let mut files = Vec::new();
        for (k, path) in paths.into_iter().enumerate() {
            let call = ToolCall {
                id: format!("rein-candidate-read-{}-{k}", ctx.st.turns),
                name: "read_file".to_string(),
                arguments: serde_json::json!({ "path": path }).to_string(),
            };
            let read = self.run_call_in(ctx, call, &workspace).await;
            if !read.result.is_error && read.effects.access.is_some() {
                files.push((path, candidates::shown_file(&read.result.output)));
            }
        }
        Fresh { request, files }
    }

    /// The `path` arguments of the run's calls: those of the tools that
    /// change files first, then the rest, each in the order first named.
    fn looked_paths(&self) -> Vec<String> {
        let (mut changed, mut read) = (Vec::new(), Vec::new());
        for message in &self.conv.messages {
            let Message::Assistant(answer) = message else {
                continue;
            };
            for call in answer.tool_calls() {
                let args: serde_json::Value =
                    serde_json::from_str(&call.arguments).unwrap_or_default();
                let Some(path) = args.get("path").and_then(|p| p.as_str()) else {
                    continue;
                };
                let list = match self.gate.access(&call.name) {
                    Some(ToolAccess::Write) => &mut changed,
                    _ => &mut read,
                };
                list.push(path.to_string());
            }
        }
        changed.extend(read);
        changed
    }
}

/// Where scratch copies may go: the configured folder, when it is
/// neither inside the workspace nor holds it; else why not.
fn scratch_root(cfg: &CandidatesConfig, workspace: &Path) -> Result<PathBuf, String> {
    let Some(root) = &cfg.scratch_root else {
        return Err("this run has no scratch folder".into());
    };
    // The folder may not exist yet: its nearest existing ancestor tells.
    let mut known = root.as_path();
    while !known.exists() {
        known = match known.parent() {
            Some(p) => p,
            None => break,
        };
    }
    let canonical = known.canonicalize().unwrap_or_else(|_| known.to_path_buf());
    let full = canonical.join(root.strip_prefix(known).unwrap_or(Path::new("")));
    if full.starts_with(workspace) || workspace.starts_with(&full) {
        return Err(format!(
            "the scratch folder {} and the workspace overlap",
            full.display()
        ));
    }
    Ok(full)
}

fn notice(ctx: &mut RunCtx<'_>, message: String) {
    ctx.emit(Event::Notice { message });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_folder_inside_the_workspace_or_holding_it_is_refused() {
        let base = std::env::temp_dir()
            .canonicalize()
            .unwrap()
            .join(format!("rein-cand-root-{}", std::process::id()));
        let ws = base.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let cfg = |root: Option<PathBuf>| CandidatesConfig {
            scratch_root: root,
            ..CandidatesConfig::default()
        };
        assert!(scratch_root(&cfg(None), &ws).is_err());
        assert!(scratch_root(&cfg(Some(ws.join("state/scratch"))), &ws).is_err());
        assert!(scratch_root(&cfg(Some(base.clone())), &ws).is_err());
        let ok = scratch_root(&cfg(Some(base.join("home/scratch"))), &ws).unwrap();
        assert_eq!(ok, base.join("home/scratch"));
        std::fs::remove_dir_all(&base).unwrap();
    }
}
