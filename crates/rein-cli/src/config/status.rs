//! `[tui] status_command`, `status_refresh_ms`, `status_timeout_ms`: the
//! user's command that writes the app's status line.

use std::time::Duration;

use super::file::TuiSection;

/// The status command's settings after layering.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StatusCommandSettings {
    pub command: Option<String>,
    pub refresh: Option<Duration>,
    pub timeout: Option<Duration>,
}

impl StatusCommandSettings {
    /// Add one file's `[tui]`.
    pub fn apply(&mut self, t: &TuiSection) {
        if let Some(c) = &t.status_command {
            self.command = Some(c.clone()).filter(|c| !c.trim().is_empty());
        }
        if let Some(ms) = t.status_refresh_ms {
            self.refresh = Some(Duration::from_millis(ms.max(100)));
        }
        if let Some(ms) = t.status_timeout_ms {
            self.timeout = Some(Duration::from_millis(ms.clamp(100, 10_000)));
        }
    }

    /// What the app runs, if anything.
    pub fn spec(&self) -> Option<rein_tui::StatusCommand> {
        Some(rein_tui::StatusCommand {
            command: self.command.clone()?,
            refresh: self.refresh.unwrap_or(Duration::from_secs(1)),
            timeout: self.timeout.unwrap_or(Duration::from_secs(2)),
        })
    }
}
