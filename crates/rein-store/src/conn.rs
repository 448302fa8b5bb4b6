//! What both rein databases (sessions and memory) do with their one
//! connection: switch to WAL mode safely, and run work on the connection's
//! own thread without ever reusing a connection left mid-transaction by a
//! panic.

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
/// The thread ends when the last clone is dropped.
#[derive(Clone)]
pub(crate) struct ConnThread {
    /// The thread's too; kept here only for tests to reach.
    #[cfg_attr(not(test), allow(dead_code))]
    conn: Arc<Mutex<Connection>>,
    jobs: std::sync::mpsc::Sender<Job>,
}

/// An operation for the connection's thread.
type Job = Box<dyn FnOnce(&Arc<Mutex<Connection>>) + Send>;

/// An operation that did not finish: it panicked.
#[derive(Debug, thiserror::Error)]
#[error("it panicked")]
pub(crate) struct Unfinished;

impl ConnThread {
    /// Start the thread that runs operations on `conn`; `name` names the
    /// thread (seen in a debugger or `top -H`).
    pub(crate) fn start(conn: Connection, name: &str) -> std::io::Result<ConnThread> {
        let conn = Arc::new(Mutex::new(conn));
        let (jobs, queue) = std::sync::mpsc::channel::<Job>();
        let shared = Arc::clone(&conn);
        std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                // Ends when every sender (every clone) is gone.
                for job in queue {
                    job(&shared);
                }
            })?;
        Ok(ConnThread { conn, jobs })
    }

    /// The connection itself (for tests that poison its lock).
    #[cfg(test)]
    pub(crate) fn conn(&self) -> &Arc<Mutex<Connection>> {
        &self.conn
    }

    /// Run `f` with the connection on its thread. A panic mid-operation
    /// rolled its transaction back as it unwound; the next operation makes
    /// sure before using the connection.
    pub(crate) async fn run<T, E, F>(&self, f: F) -> Result<Result<T, E>, Unfinished>
    where
        T: Send + 'static,
        E: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, E> + Send + 'static,
    {
        let (answer, answered) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |conn| {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let mut guard = lock(conn);
                f(&mut guard)
            }));
            // The caller may have stopped waiting; the work is done anyway.
            let _ = answer.send(result.map_err(|_| Unfinished));
        });
        // The thread lives as long as a clone of `self`, so it is there; a
        // job that cannot be sent, or is never answered, did not finish.
        self.jobs.send(job).map_err(|_| Unfinished)?;
        answered.await.map_err(|_| Unfinished)?
    }
}

/// The connection's lock, after a panic too: a transaction the panic left
/// open is rolled back first.
fn lock(conn: &Mutex<Connection>) -> std::sync::MutexGuard<'_, Connection> {
    conn.lock().unwrap_or_else(|poisoned| {
        let guard = poisoned.into_inner();
        if !guard.is_autocommit() {
            let _ = guard.execute_batch("ROLLBACK");
        }
        conn.clear_poison();
        guard
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[tokio::test]
    async fn an_operation_that_panics_mid_transaction_is_unfinished_and_rolled_back() {
        let thread = ConnThread::start(Connection::open_in_memory().unwrap(), "t").unwrap();
        thread
            .run(|c| c.execute_batch("CREATE TABLE t (x INTEGER)"))
            .await
            .unwrap()
            .unwrap();
        let panicked = thread
            .run(|c| -> Result<(), rusqlite::Error> {
                c.execute_batch("BEGIN; INSERT INTO t VALUES (1)").unwrap();
                panic!("mid-transaction");
            })
            .await;
        assert!(matches!(panicked, Err(Unfinished)));
        // The thread lives on, and the half-done insert is gone.
        let rows: i64 = thread
            .run(|c| c.query_row("SELECT count(*) FROM t", [], |r| r.get(0)))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(rows, 0);
    }
}
