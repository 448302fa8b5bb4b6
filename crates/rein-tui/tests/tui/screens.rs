//! What the screen shows: the app drawn on a test terminal, cells rendered
//! to lines, the status line's colours. Layout snapshots use the plain
//! theme, so they hold text only.

#[path = "screens/cells.rs"]
mod cells;
#[path = "screens/hostile_text.rs"]
mod hostile_text;
#[path = "screens/layout.rs"]
mod layout;
#[path = "screens/markdown.rs"]
mod markdown;
#[path = "screens/modals.rs"]
mod modals;
#[path = "screens/resume_picker.rs"]
mod resume_picker;
#[path = "screens/small_terminals.rs"]
mod small_terminals;
#[path = "screens/status_line.rs"]
mod status_line;
