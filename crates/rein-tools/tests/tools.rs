//! The built-in tools exercised through the `Tool` trait (and the gate) on a
//! real temporary workspace.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "tools/bash.rs"]
mod bash;
#[path = "tools/bounds.rs"]
mod bounds;
#[path = "tools/common.rs"]
mod common;
#[path = "tools/edit.rs"]
mod edit;
#[path = "tools/escape.rs"]
mod escape;
#[path = "tools/files.rs"]
mod files;
#[path = "tools/gate.rs"]
mod gate;
#[path = "tools/lsp.rs"]
mod lsp;
#[path = "tools/races.rs"]
mod races;
#[path = "tools/sandbox.rs"]
mod sandbox;
#[path = "tools/search.rs"]
mod search;
#[path = "tools/todo.rs"]
mod todo;
