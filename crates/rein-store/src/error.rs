//! Failures inside a blocking database operation, turned into a
//! [`StoreError`] once the database path is at hand.

use std::time::Duration;

use rein_core::StoreError;
use rusqlite::ErrorCode;

/// What went wrong inside one operation, before the path is known.
#[derive(Debug)]
pub(crate) enum Fail {
    /// A SQLite call failed while doing `context`.
    Sql {
        context: &'static str,
        source: rusqlite::Error,
    },
    /// Stored data does not make sense (reported as [`StoreError::Corrupt`]).
    Corrupt(String),
    /// An error that is already final (not found, ambiguous, too new, ...).
    Store(StoreError),
}

impl From<StoreError> for Fail {
    fn from(e: StoreError) -> Self {
        Fail::Store(e)
    }
}

impl Fail {
    /// The public error, naming the database file `path`.
    pub(crate) fn into_store(self, path: &str, busy_timeout: Duration) -> StoreError {
        match self {
            Fail::Store(e) => e,
            Fail::Corrupt(what) => StoreError::Corrupt(format!("{path}: {what}")),
            Fail::Sql { context, source } => classify(path, busy_timeout, context, &source),
        }
    }
}

/// Map a SQLite error to the `StoreError` kind a caller can act on.
fn classify(path: &str, busy_timeout: Duration, context: &str, e: &rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Locked(format!(
            "another rein process holds {path}; gave up {context} after waiting {} ms",
            busy_timeout.as_millis()
        )),
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
            StoreError::Corrupt(format!("{path}: {e} (while {context})"))
        }
        _ => StoreError::Other(format!("{context} in {path}: {e}")),
    }
}

/// Attach a context to a rusqlite result.
pub(crate) trait Context<T> {
    fn ctx(self, context: &'static str) -> Result<T, Fail>;
}

impl<T> Context<T> for rusqlite::Result<T> {
    fn ctx(self, context: &'static str) -> Result<T, Fail> {
        self.map_err(|source| Fail::Sql { context, source })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn sqlite_failure(code: i32) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None)
    }

    #[test]
    fn busy_and_locked_become_locked_naming_another_process() {
        for code in [rusqlite::ffi::SQLITE_BUSY, rusqlite::ffi::SQLITE_LOCKED] {
            let e = Fail::Sql {
                context: "appending a message",
                source: sqlite_failure(code),
            }
            .into_store("/x/sessions.db", Duration::from_millis(250));
            let StoreError::Locked(msg) = e else {
                panic!("expected Locked, got {e:?}")
            };
            assert!(msg.contains("another rein process"), "{msg}");
            assert!(msg.contains("/x/sessions.db"), "{msg}");
            assert!(msg.contains("250 ms"), "{msg}");
        }
    }

    #[test]
    fn notadb_and_corrupt_become_corrupt_with_the_path() {
        for code in [rusqlite::ffi::SQLITE_NOTADB, rusqlite::ffi::SQLITE_CORRUPT] {
            let e = Fail::Sql {
                context: "reading",
                source: sqlite_failure(code),
            }
            .into_store("/x/sessions.db", Duration::ZERO);
            assert!(
                matches!(&e, StoreError::Corrupt(m) if m.contains("/x/sessions.db")),
                "{e:?}"
            );
        }
    }

    #[test]
    fn other_sqlite_errors_keep_their_context() {
        let e = Fail::Sql {
            context: "listing sessions",
            source: sqlite_failure(rusqlite::ffi::SQLITE_IOERR),
        }
        .into_store("/x/sessions.db", Duration::ZERO);
        assert!(
            matches!(&e, StoreError::Other(m) if m.starts_with("listing sessions in /x/sessions.db")),
            "{e:?}"
        );
    }
}
