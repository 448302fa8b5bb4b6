//! Writing to stdout and stderr without ever panicking (a closed pipe is
//! not a crash), and the human-readable progress of `rein exec`
//! ([`HumanOutput`], its live line in [`live`]).

mod header;
mod human;
pub mod live;

use std::io::Write;

pub use human::HumanOutput;

use rein_core::{Event, PermissionMode};

/// Whether stdout and stderr are terminals (asked once).
fn terminals() -> (bool, bool) {
    use std::io::IsTerminal;
    static TERMINALS: std::sync::OnceLock<(bool, bool)> = std::sync::OnceLock::new();
    *TERMINALS.get_or_init(|| {
        (
            std::io::stdout().is_terminal(),
            std::io::stderr().is_terminal(),
        )
    })
}

/// Write a line to stdout. On a terminal, text from models, files and
/// commands cannot drive it: escape sequences are removed (piped, the
/// text goes out exactly as it is).
pub fn out(line: &str) {
    let line = if terminals().0 {
        rein_tui::cells::sanitize(line)
    } else {
        std::borrow::Cow::Borrowed(line)
    };
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

/// Write a line to stderr; failures are ignored. On a terminal the line
/// goes above the live line (see [`live`]), escape sequences removed.
pub fn err(line: &str) {
    if terminals().1 {
        live::write_line(&rein_tui::cells::sanitize(line));
    } else {
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }
}

/// The width of the terminal stderr is, if it is one.
pub fn stderr_width() -> Option<usize> {
    if !terminals().1 {
        return None;
    }
    let mut size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ only writes a `winsize` into the one passed.
    let ok = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    (ok && size.ws_col > 0).then_some(size.ws_col as usize)
}

/// One line, at most `max` characters, for progress output.
pub fn one_line(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let flat = flat.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        let cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        flat
    }
}

/// Calls refused because they needed an approval nobody could give; told
/// to the user at the end with what would allow them.
#[derive(Default)]
pub struct Refusals {
    items: Vec<(String, String, String)>,
    rules: Vec<rein_core::Rule>,
    modes: Vec<PermissionMode>,
}

impl Refusals {
    pub fn note(&mut self, event: &Event) {
        if let Event::PermissionDenied {
            tool,
            summary,
            why,
            needed_approval: true,
            suggested_rules,
            suggested_mode,
            ..
        } = event
        {
            self.items
                .push((tool.clone(), one_line(summary, 100), one_line(why, 160)));
            for r in suggested_rules {
                if !self.rules.contains(r) {
                    self.rules.push(r.clone());
                }
            }
            if let Some(m) = suggested_mode
                && !self.modes.contains(m)
            {
                self.modes.push(*m);
            }
        }
    }

    /// The report on stderr, if anything was refused.
    pub fn report(&self) {
        if self.items.is_empty() {
            return;
        }
        let n = self.items.len();
        err(&format!(
            "{n} call{} needed approval, which rein exec cannot ask for, and did not run:",
            if n == 1 { "" } else { "s" }
        ));
        for (tool, summary, why) in &self.items {
            err(&format!("  {tool}: {summary} ({why})"));
        }
        let mut fixes = Vec::new();
        // The least permissive mode that covers them all.
        if let Some(mode) = self.modes.iter().max_by_key(|m| match m {
            PermissionMode::AcceptEdits => 1,
            _ => 2,
        }) {
            fixes.push(format!("run with --mode {mode}"));
        }
        if !self.rules.is_empty() {
            let quoted: Vec<String> = self
                .rules
                .iter()
                .map(|r| format!("{:?}", r.to_string()))
                .collect();
            fixes.push(format!(
                "allow exactly these with \"permissions\": {{\"allow\": [{}]}} in $REIN_HOME/settings.json, or in .rein/settings.json of a trusted folder (`rein trust`)",
                quoted.join(", ")
            ));
        }
        if fixes.is_empty() {
            err("  nothing but an interactive approval can allow these");
        } else {
            err(&format!("to allow: {}", fixes.join(", or ")));
        }
    }
}
