//! Scenario tests of rein's terminal app, in one binary: the key and event
//! state machine (`keys`) and what the screen shows (`screens`).

#[path = "tui/keys.rs"]
mod keys;
#[path = "tui/rewind.rs"]
mod rewind;
#[path = "tui/screens.rs"]
mod screens;
#[path = "tui/support.rs"]
mod support;
