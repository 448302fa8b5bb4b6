//! rein's terminal app: the transcript, the input box, the status line and
//! the approval modal, drawn with ratatui on crossterm. It only reads the
//! engine's events and sends decisions back (approvals, cancel, queued
//! messages, the permission mode); it never reaches into the engine.

pub mod app;
pub mod cells;
pub mod complete;
pub mod diff;
pub mod editor;
pub mod form;
pub mod highlight;
pub mod history;
pub mod markdown;
pub mod preview;
pub mod render;
pub mod rewind;
mod run;
pub mod screen;
pub mod summary;
pub mod theme;

pub use rewind::{
    CheckpointRow, RewindFailure, RewindMode, RewindOutcome, RewindRequest, RewindView,
};
pub use run::status_command::StatusCommand;
pub use run::{
    CommandText, ExpandCommand, McpFuture, McpView, Prepare, PreparedPrompt, PromptCall,
    ProviderFactory, RunWatcher, Setup, StatusLines, WatchRuns, check_terminal, run,
};
