//! The workspace root every server sharing a database must see (a shared
//! filesystem), made explicit so no server runs a session in an empty or
//! different folder:
//!
//! 1. The root holds an id file, [`ID_FILE`] (made at the first start).
//! 2. The database records the id of the root it was first used with.
//! 3. A server whose root has another id, or no id file while the
//!    database has one recorded (the share is not mounted), refuses to
//!    start with a one-line error.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, bail};
use rein_store::PgStore;

/// The id file in the root (hidden: never a workspace's name).
pub const ID_FILE: &str = ".rein-serve-root";

/// Check `root` (canonical) against the root `pg` was first used with,
/// recording it when none is.
pub async fn check(root: &Path, pg: &PgStore) -> anyhow::Result<()> {
    let file = root.join(ID_FILE);
    let found = read_id(&file)?;
    let shown = root.display();
    match (found, pg.recorded_root().await?) {
        (Some(id), Some(recorded)) if id == recorded.id => Ok(()),
        (Some(id), Some(recorded)) => bail!(
            "--root {shown} (id {id}) is not the root this database was first used with \
             ({}, id {}): every server sharing a database must see the same root",
            recorded.path,
            recorded.id
        ),
        (None, Some(recorded)) => bail!(
            "--root {shown} has no {ID_FILE}, but this database was first used with the root \
             at {} (id {}): mount that shared folder here or give it as --root",
            recorded.path,
            recorded.id
        ),
        (found, None) => {
            let id = match found {
                Some(id) => id,
                None => make_id(&file)?,
            };
            let recorded = pg.claim_root(&id, &shown.to_string()).await?;
            if recorded.id != id {
                bail!(
                    "--root {shown} (id {id}) is not the root this database was first used \
                     with ({}, id {})",
                    recorded.path,
                    recorded.id
                );
            }
            Ok(())
        }
    }
}

/// The id in `file`, or `None` when there is no file.
fn read_id(file: &Path) -> anyhow::Result<Option<String>> {
    match std::fs::read_to_string(file) {
        Ok(text) => {
            let id = text.trim();
            if id.is_empty() || id.len() > 64 || !id.chars().all(|c| c.is_ascii_hexdigit()) {
                bail!("{} does not hold a root id: restore it", file.display());
            }
            Ok(Some(id.to_string()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", file.display())),
    }
}

/// A new id written to `file` (never over one another server just made).
fn make_id(file: &Path) -> anyhow::Result<String> {
    let id = format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(file)
    {
        Ok(mut f) => {
            f.write_all(format!("{id}\n").as_bytes())
                .with_context(|| format!("cannot write {}", file.display()))?;
            Ok(id)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            read_id(file)?.with_context(|| format!("{} is empty", file.display()))
        }
        Err(e) => Err(e).with_context(|| format!("cannot create {}", file.display())),
    }
}
