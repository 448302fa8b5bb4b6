//! Failures inside one PostgreSQL operation, turned into a [`StoreError`]
//! naming the server once the operation is over.

use rein_core::StoreError;
use tokio_postgres::error::SqlState;

use super::url::Target;

/// What went wrong inside one operation.
#[derive(Debug)]
pub(crate) enum PgFail {
    /// A query failed while doing `context`.
    Db {
        context: &'static str,
        source: tokio_postgres::Error,
    },
    /// No connection could be had for `context`.
    Connect {
        context: &'static str,
        source: tokio_postgres::Error,
    },
    /// Stored data does not make sense (reported as [`StoreError::Corrupt`]).
    Corrupt(String),
    /// An error that is already final (not found, ambiguous, too new, ...).
    Store(StoreError),
}

impl From<StoreError> for PgFail {
    fn from(e: StoreError) -> Self {
        PgFail::Store(e)
    }
}

impl PgFail {
    /// The public error, naming the server (never its password).
    pub(crate) fn into_store(self, target: &Target) -> StoreError {
        let shown = &target.shown;
        match self {
            PgFail::Store(e) => e,
            PgFail::Corrupt(what) => StoreError::Corrupt(format!("PostgreSQL {shown}: {what}")),
            PgFail::Connect { context, source } => StoreError::Unavailable(target.scrub(&format!(
                "cannot reach PostgreSQL {shown} ({context}): {}{}",
                one_line(&source),
                if refused_certificate(&source) {
                    "; rein always checks the server's certificate: name the authority \
                     that signed it with sslrootcert=PATH"
                } else {
                    ""
                }
            ))),
            PgFail::Db { context, source } => classify(target, context, &source),
        }
    }
}

/// Whether connecting failed because the server's certificate was not
/// trusted (an unknown authority, another host's name, expired, ...).
fn refused_certificate(e: &tokio_postgres::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        let tls = s.downcast_ref::<rustls::Error>().or_else(|| {
            s.downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        });
        if matches!(tls, Some(rustls::Error::InvalidCertificate(_))) {
            return true;
        }
        source = s.source();
    }
    false
}

/// Map a query error to the `StoreError` kind a caller can act on.
fn classify(target: &Target, context: &str, e: &tokio_postgres::Error) -> StoreError {
    let shown = &target.shown;
    let text = target.scrub(&one_line(e));
    match e.code() {
        Some(code) if is_contention(code) => StoreError::Locked(format!(
            "another rein process holds rows of PostgreSQL {shown}; gave up {context}: {text}"
        )),
        _ if e.is_closed() => StoreError::Unavailable(format!(
            "lost the connection to PostgreSQL {shown} while {context}: {text}"
        )),
        Some(code) if is_shutdown(code) => StoreError::Unavailable(format!(
            "PostgreSQL {shown} is shutting down or starting ({context}): {text}"
        )),
        _ => StoreError::Other(format!("{context} in PostgreSQL {shown}: {text}")),
    }
}

/// Errors that mean the server is going away or not ready yet.
fn is_shutdown(code: &SqlState) -> bool {
    [
        SqlState::ADMIN_SHUTDOWN,
        SqlState::CRASH_SHUTDOWN,
        SqlState::CANNOT_CONNECT_NOW,
    ]
    .contains(code)
}

/// Errors that mean another session held what this one needed.
fn is_contention(code: &SqlState) -> bool {
    [
        SqlState::LOCK_NOT_AVAILABLE,
        SqlState::T_R_DEADLOCK_DETECTED,
        SqlState::T_R_SERIALIZATION_FAILURE,
        SqlState::QUERY_CANCELED,
    ]
    .contains(code)
}

/// An error and its causes on one line. A server error shows its severity,
/// message, detail and hint; a client error its chain of causes.
pub(crate) fn one_line(e: &tokio_postgres::Error) -> String {
    let mut out = match e.as_db_error() {
        Some(db) => {
            let mut s = format!("{}: {}", db.severity(), db.message());
            if let Some(detail) = db.detail() {
                s.push_str(&format!(" ({detail})"));
            }
            if let Some(hint) = db.hint() {
                s.push_str(&format!("; hint: {hint}"));
            }
            s
        }
        None => e.to_string(),
    };
    if e.as_db_error().is_none() {
        let mut source = std::error::Error::source(e);
        while let Some(cause) = source {
            let cause_text = cause.to_string();
            if !out.contains(&cause_text) {
                out.push_str(&format!(": {cause_text}"));
            }
            source = cause.source();
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Attach a context to a tokio-postgres result.
pub(crate) trait PgContext<T> {
    /// Fail with `context` saying what was being done.
    fn ctx(self, context: &'static str) -> Result<T, PgFail>;
}

impl<T> PgContext<T> for Result<T, tokio_postgres::Error> {
    fn ctx(self, context: &'static str) -> Result<T, PgFail> {
        self.map_err(|source| PgFail::Db { context, source })
    }
}
