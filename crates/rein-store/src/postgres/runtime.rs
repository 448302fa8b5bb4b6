//! The thread PostgreSQL work runs on.
//!
//! Every store operation (borrowing a connection, its statements, reading
//! the rows) runs as a task on one runtime of its own, and the caller only
//! awaits the result. Why: a pooled connection is held from the moment it
//! is borrowed until the operation's task runs again after each reply.
//! On the caller's runtime, with a thousand sessions' tasks queued for two
//! cores, each of those wake-ups waited behind the whole queue, so every
//! connection sat idle most of the time it was held and operations waited
//! for connections (the pool's limit, not the database, set the pace).
//! Here the connection tasks and the operations share a thread that has
//! nothing else to do, so a connection is held for the database's work
//! only, and a caller pays one wake-up per operation, as SQLite's blocking
//! calls cost.
//!
//! One worker thread is enough: the work on it is encoding parameters and
//! decoding rows, while the database does the rest in its own processes.
//! The runtime starts at the first operation and lives as long as the
//! process.

use std::future::Future;
use std::sync::OnceLock;

use rein_core::StoreError;
use tokio::runtime::{Builder, Handle, Runtime};

use super::error::PgFail;

/// The runtime, or why it could not be started (said by every operation).
static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();

/// Run `task` to its end on the PostgreSQL thread and give back what it
/// returned. Dropping the returned future does not stop the task: an
/// operation that was sent is finished (and committed), as with SQLite.
pub(crate) async fn run<T, E, Fut>(task: Fut) -> Result<T, E>
where
    Fut: Future<Output = Result<T, E>> + Send + 'static,
    T: Send + 'static,
    E: From<PgFail> + Send + 'static,
{
    let handle = handle().map_err(|e| E::from(PgFail::Store(e)))?;
    match handle.spawn(task).await {
        Ok(result) => result,
        // The task panicked: carry the panic to the caller, as running it
        // in place would have.
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // Only a runtime shutting down cancels its tasks; this one never is.
        Err(_) => Err(E::from(PgFail::Store(StoreError::Other(
            "a PostgreSQL operation was stopped before it finished".into(),
        )))),
    }
}

/// Start `task` on the PostgreSQL thread and leave it running (until it
/// ends or its handle is aborted).
pub(crate) fn spawn<Fut>(task: Fut) -> Result<tokio::task::JoinHandle<()>, StoreError>
where
    Fut: Future<Output = ()> + Send + 'static,
{
    Ok(handle()?.spawn(task))
}

/// The runtime's handle, starting it the first time.
fn handle() -> Result<Handle, StoreError> {
    let runtime = RUNTIME.get_or_init(|| {
        Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("rein-postgres")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the PostgreSQL thread: {e}"))
    });
    match runtime {
        Ok(runtime) => Ok(runtime.handle().clone()),
        Err(e) => Err(StoreError::Other(e.clone())),
    }
}
