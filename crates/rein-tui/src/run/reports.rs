//! The app's reports on a session: its cost (`/cost`, the status line)
//! and what its context holds (`/context`).

use rein_core::{AgentEngine, Message, SessionStore, SizeBasis};

use crate::app::App;
use crate::cells::Cell;

/// The session's cost from its ledger: every call, the title call too.
pub(super) async fn refresh_cost(app: &mut App, store: &dyn SessionStore) {
    if let Some(id) = app.status.session_id.clone()
        && let Ok((entries, _)) = store.ledger(&id).await
    {
        app.status.totals = rein_core::LedgerTotals::of(&entries);
    }
}

pub(super) async fn show_cost(app: &mut App, store: &dyn SessionStore) {
    let Some(id) = app.status.session_id.clone() else {
        app.notice("no session yet: nothing spent");
        return;
    };
    match store.ledger(&id).await {
        Ok((entries, skipped)) => {
            let t = rein_core::LedgerTotals::of(&entries);
            let mut lines = vec![
                format!("model calls   {}", t.calls),
                format!(
                    "input tokens  {} ({} cached)",
                    t.input_tokens, t.cached_input_tokens
                ),
                format!("output tokens {}", t.output_tokens),
                format!(
                    "cost          {}{}",
                    t.cost_text(),
                    if t.unpriced_calls > 0 {
                        format!(
                            " ({} of {} calls at unknown prices)",
                            t.unpriced_calls, t.calls
                        )
                    } else {
                        String::new()
                    }
                ),
            ];
            if skipped > 0 {
                lines.push(format!("({skipped} unreadable ledger rows skipped)"));
            }
            app.push_cell(Cell::Info {
                title: format!("Cost of session {id}"),
                lines,
            });
        }
        Err(e) => app.error(format!("cannot read the ledger: {e}")),
    }
}

pub(super) async fn show_context(app: &mut App, engine: &AgentEngine) {
    let lines = context_lines(app, engine).await;
    app.push_cell(Cell::Info {
        title: "Context".into(),
        lines,
    });
}

/// The status line's context figure from the one accounting, between
/// runs (a resumed session, a compaction).
pub(super) async fn refresh_context(app: &mut App, engine: &AgentEngine) {
    let id = app.status.session_id.clone();
    if let Ok(size) = engine.context_size(id.as_deref(), app.status.mode).await {
        app.status.context_tokens = Some(size.next.tokens);
        app.status.last_request = size.last_reported;
    }
}

/// `/context`: what the next request carries, in the one accounting
/// (the figure the status line shows), then part by part.
async fn context_lines(app: &mut App, engine: &AgentEngine) -> Vec<String> {
    let window = app.status.context_window;
    let pct = |n: u64| match window {
        Some(w) if w > 0 => format!(" ({:.0}%)", n as f64 / w as f64 * 100.0),
        _ => String::new(),
    };
    let size = match engine
        .context_size(app.status.session_id.as_deref(), app.status.mode)
        .await
    {
        Ok(s) => s,
        Err(e) => return vec![format!("cannot read the session: {e}")],
    };
    app.status.context_tokens = Some(size.next.tokens);
    let (fixed, messages) = (size.fixed, &size.messages);
    let counter = engine.token_counter();
    let mut by_kind = [0u64; 4];
    let mut biggest: Vec<(u64, String)> = Vec::new();
    for m in messages {
        let n = rein_core::count_message(counter.as_ref(), m);
        let k = match m {
            Message::User { .. } => 0,
            Message::Assistant(_) => 1,
            Message::Tool(r) => {
                biggest.push((n, r.name.clone()));
                2
            }
            Message::System { .. } => 3,
        };
        by_kind[k] += n;
    }
    biggest.sort_by_key(|b| std::cmp::Reverse(b.0));
    let history: u64 = by_kind.iter().sum();
    let total = size.next.tokens;
    let (about, how) = match size.next.basis {
        SizeBasis::Counted => ("", "counted with the model's tokenizer"),
        SizeBasis::Measured => (
            "about ",
            "the provider's count of the last request and what followed",
        ),
        SizeBasis::Estimated => ("about ", "estimated; the parts below are estimates too"),
    };
    let mut lines = vec![
        format!(
            "next request        {about}{total}{} of {} ({how})",
            pct(total),
            window.map_or_else(
                || "a window of unknown size".into(),
                |w| format!("a {w}-token window")
            )
        ),
        format!(
            "  system prompt     {}{}",
            fixed.system_prompt,
            pct(fixed.system_prompt)
        ),
        format!(
            "  tool definitions  {}{} ({} tools)",
            fixed.tools,
            pct(fixed.tools),
            fixed.tool_count
        ),
        format!(
            "  instructions      {}{} (AGENTS.md and memory)",
            fixed.instructions,
            pct(fixed.instructions)
        ),
        format!(
            "  history           {history}{} in {} messages",
            pct(history),
            messages.len()
        ),
        format!("    user messages   {}{}", by_kind[0], pct(by_kind[0])),
        format!("    model replies   {}{}", by_kind[1], pct(by_kind[1])),
        format!("    tool results    {}{}", by_kind[2], pct(by_kind[2])),
    ];
    let instructions = engine.instructions();
    if !instructions.files.is_empty() {
        let at = lines
            .iter()
            .position(|l| l.starts_with("  history"))
            .unwrap_or(lines.len());
        let files: Vec<String> = instructions
            .lines()
            .iter()
            .map(|l| format!("    {}", crate::cells::sanitize(l)))
            .collect();
        lines.splice(at..at, files);
    }
    if by_kind[3] > 0 {
        lines.push(format!(
            "    summaries       {}{}",
            by_kind[3],
            pct(by_kind[3])
        ));
    }
    for (n, name) in biggest.into_iter().take(3) {
        lines.push(format!("      largest: {name} {n}"));
    }
    if let Some(last) = size.last_reported.or(app.status.last_request) {
        lines.push(format!(
            "last request        {last}{} (as the provider counted it)",
            pct(last)
        ));
    }
    lines
}
