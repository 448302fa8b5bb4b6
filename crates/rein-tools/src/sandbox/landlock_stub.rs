//! Landlock exists only on Linux.

use std::path::Path;

use rein_core::SandboxPolicy;
use tokio::process::Command;

pub(super) fn abi_version() -> i32 {
    0
}

pub(super) fn confine(
    _cmd: &mut Command,
    _policy: &SandboxPolicy,
    _workspace: &Path,
) -> Result<(), String> {
    Err("Landlock exists only on Linux".into())
}
