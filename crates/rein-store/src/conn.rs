//! What both rein databases (sessions and memory) do with their one
//! connection: switch to WAL mode safely, and run work on the connection's
//! own thread without ever reusing a connection left mid-transaction by a
//! panic.

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

/// One connection and the thread that uses it.
///
/// Every operation is sent to the connection's own thread and run there in
/// the order it was sent; the caller awaits the answer. One thread per
/// connection, not the runtime's blocking pool: the connection serves one
/// operation at a time anyway, and with a thousand sessions writing at
/// once the pool started a thread for each waiting operation (hundreds,
/// each with its stack, all woken one by one through the lock), where a
/// queue costs nothing per waiting operation.
///
/// The thread owns the connection and ends when the last clone is dropped.
#[derive(Clone)]
pub(crate) struct ConnThread {
    jobs: std::sync::mpsc::Sender<Job>,
}

/// An operation for the connection's thread.
type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// An operation that did not finish: it panicked.
#[derive(Debug, thiserror::Error)]
#[error("it panicked")]
pub(crate) struct Unfinished;

impl ConnThread {
    /// Start the thread that runs operations on `conn`; `name` names the
    /// thread (seen in a debugger or `top -H`).
    pub(crate) fn start(mut conn: Connection, name: &str) -> std::io::Result<ConnThread> {
        let (jobs, queue) = std::sync::mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                // Ends when every sender (every clone) is gone.
                for job in queue {
                    job(&mut conn);
                }
            })?;
        Ok(ConnThread { jobs })
    }

    /// Run `f` with the connection on its thread. A panic mid-operation
    /// is caught there and a transaction it left open rolled back at once
    /// (so no write lock is held until the next operation).
    pub(crate) async fn run<T, E, F>(&self, f: F) -> Result<Result<T, E>, Unfinished>
    where
        T: Send + 'static,
        E: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, E> + Send + 'static,
    {
        let (answer, answered) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |conn| {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut *conn)));
            if result.is_err() && !conn.is_autocommit() {
                let _ = conn.execute_batch("ROLLBACK");
            }
            // The caller may have stopped waiting; the work is done anyway.
            let _ = answer.send(result.map_err(|_| Unfinished));
        });
        // The thread lives as long as a clone of `self`, so it is there; a
        // job that cannot be sent, or is never answered, did not finish.
        self.jobs.send(job).map_err(|_| Unfinished)?;
        answered.await.map_err(|_| Unfinished)?
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[tokio::test]
    async fn an_operation_that_panics_mid_transaction_is_unfinished_and_rolled_back_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let thread = ConnThread::start(Connection::open(&path).unwrap(), "t").unwrap();
        thread
            .run(|c| c.execute_batch("CREATE TABLE t (x INTEGER)"))
            .await
            .unwrap()
            .unwrap();
        let panicked = thread
            .run(|c| -> Result<(), rusqlite::Error> {
                c.execute_batch("BEGIN IMMEDIATE; INSERT INTO t VALUES (1)")
                    .unwrap();
                panic!("mid-transaction");
            })
            .await;
        assert!(matches!(panicked, Err(Unfinished)));
        // The write lock is free now, before any next operation: another
        // connection writes without waiting.
        let other = Connection::open(&path).unwrap();
        other.busy_timeout(Duration::ZERO).unwrap();
        other.execute_batch("BEGIN IMMEDIATE; COMMIT").unwrap();
        // The thread lives on, and the half-done insert is gone.
        let rows: i64 = thread
            .run(|c| c.query_row("SELECT count(*) FROM t", [], |r| r.get(0)))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(rows, 0);
    }
}
