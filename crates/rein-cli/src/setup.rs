//! What every front end (`rein exec`, the app, `rein acp`, `rein serve`)
//! assembles the same way before a prompt reaches the model:
//!
//! - [`prompt`]: one prompt preparation (`/command`, `$skill`,
//!   `@server:uri`).
//! - [`settings`]: flags over config, resolved once: the model flags,
//!   mode, resume and budget.
//!
//! The commands use this module; it uses [`crate::config`], never the
//! commands.

pub mod prompt;
pub mod settings;
