//! A server's stderr: written to its log file (bounded) and its last lines
//! kept in memory to explain a failure. Never shown on the screen.

use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncReadExt;

/// Lines of a server's stderr kept to explain a failure.
pub(crate) const STDERR_LINES: usize = 20;
/// Characters of one kept line.
const LINE_CHARS: usize = 300;
/// Most bytes of stderr read as one line; the rest of a longer line is
/// dropped (a server writing without newlines must not fill memory).
const LINE_CAP: usize = 4096;
/// Most bytes one connection writes to the log file.
const LOG_CAP: u64 = 1024 * 1024;

/// The last lines a server wrote on stderr.
#[derive(Clone, Default)]
pub(crate) struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn push(&self, line: &[u8]) {
        let text: String = String::from_utf8_lossy(line)
            .chars()
            .take(LINE_CHARS)
            .collect();
        let mut lines = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if lines.len() == STDERR_LINES {
            lines.pop_front();
        }
        lines.push_back(text);
    }

    #[cfg(test)]
    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().iter().cloned().collect()
    }

    /// "; it said: ..." with the last lines, if any.
    pub(crate) fn quoted(&self) -> String {
        let lines = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if lines.is_empty() {
            return String::new();
        }
        let joined: Vec<&str> = lines.iter().map(String::as_str).collect();
        format!("; it said: {}", joined.join(" | "))
    }

    /// Read `stderr` to its end: each line kept (bounded) and appended to
    /// `log` (owner-only, at most [`LOG_CAP`] bytes a connection).
    pub(crate) async fn read<R>(self, stderr: R, log: Option<PathBuf>)
    where
        R: tokio::io::AsyncRead + Unpin,
    {
        let mut log = log.and_then(|path| open_log(&path));
        let mut logged = 0u64;
        let mut reader = tokio::io::BufReader::new(stderr);
        let mut buf = [0u8; 4096];
        let mut line: Vec<u8> = Vec::new();
        while let Ok(n) = reader.read(&mut buf).await {
            if n == 0 {
                break;
            }
            if let Some(file) = log.as_mut() {
                let room = LOG_CAP.saturating_sub(logged).min(n as u64) as usize;
                if room < n || file.write_all(&buf[..room]).is_err() {
                    let _ = file
                        .write_all(b"\n[rein: the rest of this server's stderr is not logged]\n");
                    log = None;
                }
                logged += room as u64;
            }
            for &b in &buf[..n] {
                if b == b'\n' {
                    self.push(&line);
                    line.clear();
                } else if line.len() < LINE_CAP {
                    line.push(b);
                }
            }
        }
        if !line.is_empty() {
            self.push(&line);
        }
    }
}

/// The log file, appended to, created owner-only; `None` when it cannot
/// be opened (the tail in memory still explains failures).
fn open_log(path: &std::path::Path) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent() {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .ok()?;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    let _ = writeln!(file, "--- started at {} (unix time)", unix_now());
    Some(file)
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Megabytes without a newline become one line of 300 characters; the
    /// lines after it are kept, the oldest dropped past the limit; the log
    /// file stops at its cap.
    #[tokio::test]
    async fn the_stderr_tail_and_log_are_bounded() {
        let mut input = vec![b'e'; 5_000_000];
        for i in 0..30 {
            input.extend_from_slice(format!("\nline {i}").as_bytes());
        }
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("logs/s.log");
        let tail = StderrTail::default();
        tail.clone().read(&input[..], Some(log.clone())).await;
        let kept = tail.lines();
        assert_eq!(kept.len(), STDERR_LINES);
        assert_eq!(kept.last().map(String::as_str), Some("line 29"));
        assert!(kept.iter().all(|l| l.len() <= 300));
        let size = std::fs::metadata(&log).unwrap().len();
        assert!(size > LOG_CAP && size < LOG_CAP + 200, "{size}");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&log).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);

        let one = StderrTail::default();
        one.clone().read(&vec![b'x'; 1_000_000][..], None).await;
        let lines = one.lines();
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].len(), 300);
    }
}
