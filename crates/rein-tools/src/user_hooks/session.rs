//! The session's events: `SessionStart`, `UserPromptSubmit`, `Stop`,
//! `PreCompact`, `PostCompact`, `SubagentStart`, `SubagentStop`,
//! `Notification`, `SessionEnd`. What their answers mean:
//! - exit 2 blocks `UserPromptSubmit` (the prompt is refused, stderr told
//!   to the user) and `Stop`/`SubagentStop` (the model goes on, stderr as
//!   its next instruction); for the others stderr is only shown;
//! - stdout JSON: `decision: "block"` with `reason` (the same),
//!   `continue: false` with `stopReason` (the run stops),
//!   `systemMessage` (shown to the user),
//!   `hookSpecificOutput.additionalContext` (added for the model);
//! - the plain stdout of `SessionStart` and `UserPromptSubmit` is added
//!   for the model too.

use async_trait::async_trait;
use rein_core::{HookRun, MomentReply, NotificationKind, SessionHook, SessionMoment};
use serde_json::Value;

use super::{Handler, HookEvent, Ran, UserHooks, event_json, one_line, short_name};

/// Most characters of context one hook adds for the model.
const MAX_CONTEXT: usize = 10_000;

#[async_trait]
impl SessionHook for UserHooks {
    fn listens(&self, name: &str) -> bool {
        name.parse().is_ok_and(|event| self.has(event))
    }

    async fn at(&self, moment: &SessionMoment<'_>, run: &HookRun) -> MomentReply {
        let event = HookEvent::of(moment);
        let input = moment_json(moment, run);
        let ran = self
            .run(event, moment.subject(), &input, &run.workspace)
            .await;
        let mut reply = MomentReply::default();
        for (handler, ran) in &ran {
            read_answer(moment, handler, ran, &mut reply);
        }
        reply
    }
}

impl UserHooks {
    /// Run the `Notification` hooks of `kind` in the background: a
    /// notification never holds up what it is about. Each is bounded by
    /// its own timeout.
    pub(super) fn notify(&self, kind: NotificationKind, message: &str, run: &HookRun) {
        if !self.has(HookEvent::Notification) {
            return;
        }
        let moment = SessionMoment::Notification { kind, message };
        let input = moment_json(&moment, run);
        let Some(hooks) = self.by_event.get(&HookEvent::Notification) else {
            return;
        };
        let handlers: Vec<Handler> = hooks
            .iter()
            .filter(|(m, _)| m.takes(kind.as_str()))
            .map(|(_, h)| h.clone())
            .collect();
        let launch = self.launch(&run.workspace);
        for handler in handlers {
            let (input, launch) = (input.clone(), launch.clone());
            tokio::spawn(async move { super::run_handler(&handler, &input, &launch).await });
        }
    }
}

/// The event JSON of a session moment.
fn moment_json(moment: &SessionMoment<'_>, run: &HookRun) -> Value {
    let mut input = event_json(HookEvent::of(moment), run);
    if let (Some(all), Value::Object(own)) = (input.as_object_mut(), moment.fields()) {
        all.extend(own);
    }
    input
}

/// Whether a block of `moment` means anything (the others cannot be
/// blocked).
fn blockable(moment: &SessionMoment<'_>) -> bool {
    matches!(
        moment,
        SessionMoment::UserPromptSubmit { .. }
            | SessionMoment::Stop { .. }
            | SessionMoment::SubagentStop { .. }
    )
}

/// Add what one handler answered to `reply`.
fn read_answer(moment: &SessionMoment<'_>, handler: &Handler, ran: &Ran, reply: &mut MomentReply) {
    let name = short_name(handler);
    let event = HookEvent::of(moment);
    if let Some(why) = ran.failure() {
        // Failing closed refuses a prompt; nothing else waits on a hook's
        // yes.
        if handler.fail_closed && matches!(moment, SessionMoment::UserPromptSubmit { .. }) {
            reply.block = Some(format!("the hook `{name}` failed ({why}) and fails closed"));
        } else {
            reply
                .notices
                .push(format!("{event} hook `{name}` failed: {why}"));
        }
        return;
    }
    if let Some(stderr) = ran.blocked() {
        let why = Some(stderr)
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| format!("blocked by the hook `{name}`"));
        if blockable(moment) {
            reply.block.get_or_insert(why);
        } else {
            reply.notices.push(format!("{event} hook `{name}`: {why}"));
        }
        return;
    }
    let Some(out) = ran.json() else {
        // Plain output is context where Claude Code takes it as such.
        if let Ran::Exited { stdout, .. } = ran
            && matches!(
                moment,
                SessionMoment::SessionStart { .. } | SessionMoment::UserPromptSubmit { .. }
            )
            && !stdout.trim().is_empty()
        {
            reply.context.push(clip(stdout.trim()));
        }
        return;
    };
    let text = |v: &Value| v.as_str().map(|s| one_line(s, 2000));
    if let Some(message) = text(&out["systemMessage"]) {
        reply.notices.push(message);
    }
    if out["continue"] == Value::Bool(false) {
        reply.halt.get_or_insert(
            text(&out["stopReason"]).unwrap_or_else(|| format!("the hook `{name}` said so")),
        );
    }
    if out["decision"] == "block" && blockable(moment) {
        reply.block.get_or_insert(
            text(&out["reason"]).unwrap_or_else(|| format!("blocked by the hook `{name}`")),
        );
    }
    if let Some(context) = out["hookSpecificOutput"]["additionalContext"].as_str()
        && !context.trim().is_empty()
    {
        reply.context.push(clip(context.trim()));
    }
}

/// At most [`MAX_CONTEXT`] characters, with a note when cut.
fn clip(text: &str) -> String {
    if text.chars().count() <= MAX_CONTEXT {
        return text.to_string();
    }
    let kept: String = text.chars().take(MAX_CONTEXT).collect();
    format!("{kept}\n[rein: cut at {MAX_CONTEXT} characters]")
}
