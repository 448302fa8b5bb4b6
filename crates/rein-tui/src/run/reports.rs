//! The app's reports on a session: its cost (`/cost`, the status line)
//! and what its context holds (`/context`).

use rein_core::{AgentEngine, Message, SessionStore};

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

/// `/context`: what the next request carries, part by part, in tokens and
/// as a share of the window.
async fn context_lines(app: &mut App, engine: &AgentEngine) -> Vec<String> {
    let window = app.status.context_window;
    let pct = |n: u64| match window {
        Some(w) if w > 0 => format!(" ({:.0}%)", n as f64 / w as f64 * 100.0),
        _ => String::new(),
    };
    let fixed = engine.fixed_tokens(app.status.mode);
    // What the next request carries: after a compaction, its summary and
    // what followed, not the whole stored transcript.
    let messages = match app.status.session_id.clone() {
        Some(id) => match engine.model_messages(&id).await {
            Ok(m) => m,
            Err(e) => return vec![format!("cannot read the session: {e}")],
        },
        None => Vec::new(),
    };
    let counter = engine.token_counter();
    let mut by_kind = [0u64; 4];
    let mut biggest: Vec<(u64, String)> = Vec::new();
    for m in &messages {
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
    let total = fixed.total() + history;
    let mut lines = vec![
        format!(
            "next request        about {total}{} of {}",
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
    if let Some(last) = app.status.context_tokens {
        lines.push(format!(
            "last request        {last}{} (as counted then)",
            pct(last)
        ));
    }
    lines
}
