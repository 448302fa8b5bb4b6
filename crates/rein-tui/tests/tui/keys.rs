//! The state machine: keys and engine events in, actions out, one module
//! per part of the app the keys drive.

#[path = "keys/approvals.rs"]
mod approvals;
#[path = "keys/cancel_and_quit.rs"]
mod cancel_and_quit;
#[path = "keys/commands.rs"]
mod commands;
#[path = "keys/completion.rs"]
mod completion;
#[path = "keys/editing.rs"]
mod editing;
#[path = "keys/modes.rs"]
mod modes;
#[path = "keys/resume_picker.rs"]
mod resume_picker;
#[path = "keys/sending.rs"]
mod sending;
#[path = "keys/streaming.rs"]
mod streaming;
#[path = "keys/tools.rs"]
mod tools;
