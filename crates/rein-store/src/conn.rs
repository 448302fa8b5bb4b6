//! What both rein databases (sessions and memory) do with their one
//! connection: switch to WAL mode safely, and run work on the blocking pool
//! without ever reusing a connection left mid-transaction by a panic.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::Connection;

use crate::error::{Context, Fail};

/// Make a database file and its folder private before SQLite opens it:
/// the folder is created `0700` when missing, the file created `0600` (SQLite
/// then gives its `-wal` and `-shm` files the same mode) or tightened to it,
/// and existing `-wal`/`-shm` files tightened too. Whatever the umask, no
/// other account can read what the database holds.
pub(crate) fn private_db_file(path: &std::path::Path) -> Result<(), String> {
    use rein_core::private_fs::{create_private_dir, ensure_private_file, tighten_file};
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_private_dir(parent)
            .map_err(|e| format!("creating the directory {}: {e}", parent.display()))?;
    }
    ensure_private_file(path).map_err(|e| format!("creating {}: {e}", path.display()))?;
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut side = path.as_os_str().to_owned();
        side.push(suffix);
        let side = std::path::PathBuf::from(side);
        tighten_file(&side).map_err(|e| format!("protecting {}: {e}", side.display()))?;
    }
    Ok(())
}

/// Whether an error is SQLite's busy or locked answer.
pub(crate) fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// Put the database in WAL mode and return the journal mode it ended in.
/// SQLite answers "busy" to this pragma at once, without its busy handler,
/// when other connections are opening the same fresh file; so retry, with
/// jitter, until the busy timeout is spent.
pub(crate) fn switch_to_wal(conn: &Connection, busy_timeout: Duration) -> Result<String, Fail> {
    let deadline = std::time::Instant::now() + busy_timeout;
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)) {
            Ok(mode) => return Ok(mode),
            Err(e) if is_busy(&e) && std::time::Instant::now() < deadline => {
                let pause = 5 + u64::from(std::process::id() % 7) * 3;
                std::thread::sleep(Duration::from_millis(pause));
            }
            Err(e) => return Err(e).ctx("switching to WAL mode"),
        }
    }
}

/// Run `f` with the connection on the blocking pool. A panic mid-operation
/// rolled its transaction back as it unwound; make sure before reusing the
/// connection. `Err` is a task that did not finish (panicked or cancelled).
pub(crate) async fn run_blocking<T, E, F>(
    conn: &Arc<Mutex<Connection>>,
    f: F,
) -> Result<Result<T, E>, tokio::task::JoinError>
where
    T: Send + 'static,
    E: Send + 'static,
    F: FnOnce(&mut Connection) -> Result<T, E> + Send + 'static,
{
    let conn = Arc::clone(conn);
    tokio::task::spawn_blocking(move || {
        let mut guard = conn.lock().unwrap_or_else(|poisoned| {
            let guard = poisoned.into_inner();
            if !guard.is_autocommit() {
                let _ = guard.execute_batch("ROLLBACK");
            }
            conn.clear_poison();
            guard
        });
        f(&mut guard)
    })
    .await
}
