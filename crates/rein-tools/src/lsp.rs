//! Language servers in the loop: after the model writes or edits a file,
//! the project's own language tooling checks it, and its errors join the
//! call's result ([`feedback::Diagnostics`], a hook in the gate).
//!
//! Layout:
//! - [`rpc`]: JSON-RPC over a server's standard streams;
//! - [`server`]: one server, started in the sandbox (read-only, offline)
//!   or as a host process, documents synced, diagnostics awaited;
//! - [`languages`]: which server serves which file (the user's entries,
//!   then the built-in table found on `PATH`);
//! - [`roots`]: a file's project root, by the server's root markers;
//! - [`servers`]: the workspace's servers, one per language and root,
//!   started on first use, and their status;
//! - [`feedback`]: the hook, its settings, and the report for the model;
//! - [`tool`]: the `lsp` tool (definition, references, hover, symbols).

pub mod feedback;
pub mod languages;
pub mod roots;
pub mod rpc;
pub mod server;
pub mod servers;
pub mod tool;

pub use feedback::{Diagnostics, LspSettings};
pub use languages::ServerSpec;
pub use server::Launch;
pub use servers::{ServerState, ServerStatus, Servers};
pub use tool::LspTool;
