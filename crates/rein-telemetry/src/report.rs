//! `FailureReporter`: where export failures are told, once per kind.
//!
//! A collector that is down fails every few seconds for as long as rein
//! runs; one line per kind of failure is enough to notice it and never
//! floods a terminal. Lines name the URL and the failure, never a header
//! (they can hold API keys).

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, Mutex};

/// Says each kind of export failure once. Clones share what was said.
#[derive(Clone)]
pub struct FailureReporter {
    write: Arc<dyn Fn(&str) + Send + Sync>,
    said: Arc<Mutex<HashSet<String>>>,
}

impl fmt::Debug for FailureReporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FailureReporter").finish_non_exhaustive()
    }
}

impl Default for FailureReporter {
    fn default() -> Self {
        FailureReporter::stderr()
    }
}

impl FailureReporter {
    /// One line on stderr per kind (what `rein exec` and `rein serve` want),
    /// as [`stderr_line`] words it.
    pub fn stderr() -> Self {
        FailureReporter::new(|reason| eprintln!("{}", stderr_line(reason)))
    }

    /// Failures go to `write` instead, as the bare reason: a terminal app
    /// that owns the screen words and shows them its own way (or a test
    /// collects them).
    pub fn new(write: impl Fn(&str) + Send + Sync + 'static) -> Self {
        FailureReporter {
            write: Arc::new(write),
            said: Arc::new(Mutex::new(HashSet::new())),
        }
    }

    /// Say `line` unless a failure of `kind` was said before.
    pub(crate) fn report(&self, kind: &str, line: &str) {
        let first = {
            let mut said = self.said.lock().unwrap_or_else(|p| p.into_inner());
            !said.contains(kind) && said.insert(kind.to_string())
        };
        if first {
            (self.write)(line);
        }
    }
}

/// How a failure's `reason` reads on stderr.
pub fn stderr_line(reason: &str) -> String {
    format!("rein: telemetry: {reason} (further failures like this are not reported)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_failure_is_said_once() {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        let r = FailureReporter::new(move |l| sink.lock().unwrap().push(l.to_string()));
        r.report("traces:connect", "cannot reach x");
        r.clone().report("traces:connect", "cannot reach x again");
        r.report("metrics:http-500", "HTTP 500");
        let lines = lines.lock().unwrap();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(lines[0], "cannot reach x");
        assert_eq!(
            stderr_line(&lines[0]),
            "rein: telemetry: cannot reach x (further failures like this are not reported)"
        );
    }
}
