//! `rein plugin update NAME`: the plugin fetched again from where it was
//! installed from (the folder, or the git URL at its ref), what would
//! change shown file by file, and the new copy put in place only once the
//! user says yes (`--yes` headless); the record then holds the new digest
//! and commit.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use anyhow::anyhow;

use super::store::{Registry, root_of};
use super::{copy, fetch, manifest, save, staging};
use crate::exit::Failure;
use crate::output::out;

/// Update `name` (installed) in `registry`.
pub fn update(registry: &mut Registry, home: &Path, name: &str, yes: bool) -> Result<(), Failure> {
    let bad = |e: String| Failure::usage(anyhow!(e));
    let Some(record) = registry.get(name).cloned() else {
        return Ok(());
    };
    let staging = staging(home)?;
    let origin = fetch(&record.source, staging.path()).map_err(bad)?;
    let manifest = manifest::read(&origin.folder).map_err(bad)?;
    if manifest.name != name {
        return Err(bad(format!(
            "{}: the plugin there is now `{}`, not `{name}`; not updated",
            record.source, manifest.name
        )));
    }
    let fresh = staging.path().join(name);
    copy::copy_tree(&origin.folder, &fresh).map_err(bad)?;
    let digest = copy::digest(&fresh).map_err(bad)?;
    let root = root_of(home, name);
    let changes = copy::differences(&root, &fresh).map_err(bad)?;
    if changes.is_empty() && digest == record.digest {
        out(&format!("{name} is up to date"));
        return Ok(());
    }
    let version = |v: &Option<String>| v.clone().unwrap_or_else(|| "(no version)".into());
    let commit = match (&record.commit, &origin.commit) {
        (Some(a), Some(b)) if a != b => format!(", commit {} -> {}", short(a), short(b)),
        _ => String::new(),
    };
    out(&format!(
        "{name}: {} -> {}{commit}",
        version(&record.version),
        version(&manifest.version)
    ));
    for (change, path) in &changes {
        out(&format!("  {} {}", change.label(), path.display()));
    }
    if !yes && !confirm(name)? {
        out("not updated");
        return Ok(());
    }
    // The old copy moves into the scratch folder (deleted with it).
    let old = staging.path().join(".old");
    std::fs::rename(&root, &old).map_err(|e| bad(format!("{}: {e}", root.display())))?;
    std::fs::rename(&fresh, &root).map_err(|e| bad(format!("{}: {e}", root.display())))?;
    if let Some(p) = registry.get_mut(name) {
        p.version = manifest.version;
        p.description = manifest.description;
        p.digest = digest;
        p.commit = origin.commit;
    }
    save(registry, home)?;
    out(&format!("updated {name}"));
    Ok(())
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

/// Ask on the terminal; headless there is nobody to say yes.
fn confirm(name: &str) -> Result<bool, Failure> {
    if !std::io::stdin().is_terminal() {
        return Err(Failure::usage(anyhow!(
            "{name} was not updated: nobody to ask here (`rein plugin update {name} --yes` accepts the changes above)"
        )));
    }
    print!("Update {name}? [y/N] ");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(Failure::harness)?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes"))
}
