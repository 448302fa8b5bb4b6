//! What every front end (`rein exec`, the app, `rein acp`, `rein serve`)
//! assembles the same way before a prompt reaches the model:
//!
//! - [`prompt`]: one prompt preparation (`/command`, `$skill`,
//!   `@server:uri`); [`prepare`] adds a command's live parts
//!   ([`command_context`]) and its run's scope (tools, pre-approvals,
//!   model).
//! - [`settings`]: flags over config, resolved once: the model flags,
//!   mode, resume and budget.
//! - [`workspace`]: the folder a session works in, and the folders none
//!   may.
//! - [`store`]: where sessions are kept, and which one a run continues.
//! - [`engine`]: the engine builder every front end's engine comes from.
//! - [`session`]: one session factory (engine, MCP tools followed, prompt
//!   preparation) for all four front ends.
//!
//! The commands (`exec`, `tui`, `acp`, `serve`, the `*_cmd` modules) use
//! this module; it uses the flags ([`crate::cli`]), the config
//! ([`crate::config`]) and the libraries below it (hooks, MCP, memory,
//! skills, providers, checkpoints), never the commands.

pub mod command_context;
pub mod engine;
pub mod images;
pub mod prepare;
pub mod prompt;
pub mod session;
pub mod settings;
pub mod store;
pub mod workspace;
