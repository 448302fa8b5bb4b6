//! Progress of one request on the local model, sent as
//! [`StreamChunk::Progress`] so front ends can show how far a slow CPU has
//! got: after every prompt batch, then a few times a second while tokens
//! are generated.

use std::time::{Duration, Instant};

use rein_core::{ModelProgress, StreamChunk};
use tokio::sync::mpsc::UnboundedSender;

use super::worker::ChunkResult;

/// The least time between two generation reports.
const EVERY: Duration = Duration::from_millis(250);

/// Reports the progress of one request on its stream.
pub(crate) struct ProgressReporter<'a> {
    tx: &'a UnboundedSender<ChunkResult>,
    started: Instant,
    /// When the prompt was read (generation began).
    generating_since: Option<Instant>,
    last_sent: Option<Instant>,
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl<'a> ProgressReporter<'a> {
    /// Start timing a request whose chunks go to `tx`.
    pub(crate) fn new(tx: &'a UnboundedSender<ChunkResult>) -> Self {
        ProgressReporter {
            tx,
            started: Instant::now(),
            generating_since: None,
            last_sent: None,
        }
    }

    fn send(&mut self, progress: ModelProgress) {
        self.last_sent = Some(Instant::now());
        let _ = self.tx.send(Ok(StreamChunk::Progress(progress)));
    }

    /// `done` of `total` prompt tokens are in the cache (every batch is
    /// reported: a batch takes a second or more on a CPU).
    pub(crate) fn prompt(&mut self, done: usize, total: usize) {
        self.send(ModelProgress::Prompt {
            done: done as u64,
            total: total as u64,
            elapsed_ms: millis(self.started.elapsed()),
        });
    }

    /// `tokens` have been generated; reported when the last report is
    /// older than [`EVERY`].
    pub(crate) fn generated(&mut self, tokens: u64) {
        let now = Instant::now();
        let since = *self.generating_since.get_or_insert(now);
        if self
            .last_sent
            .is_some_and(|t| now.duration_since(t) < EVERY)
        {
            return;
        }
        self.send(ModelProgress::Generating {
            tokens,
            elapsed_ms: millis(now.duration_since(self.started)),
            generating_ms: millis(now.duration_since(since)),
        });
    }

    /// Generation begins now (the prompt is read).
    pub(crate) fn prompt_read(&mut self) {
        self.generating_since = Some(Instant::now());
    }

    /// Milliseconds since the request began.
    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_reports_are_spaced_and_prompt_batches_all_reported() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut p = ProgressReporter::new(&tx);
        p.prompt(0, 512);
        p.prompt(256, 512);
        p.prompt(512, 512);
        p.prompt_read();
        for n in 1..=100 {
            p.generated(n);
        }
        let mut got = Vec::new();
        while let Ok(Ok(StreamChunk::Progress(m))) = rx.try_recv() {
            got.push(m);
        }
        assert_eq!(
            got.len(),
            3,
            "every prompt batch, then none within 250 ms: {got:?}"
        );
        assert!(matches!(
            got[2],
            ModelProgress::Prompt {
                done: 512,
                total: 512,
                ..
            }
        ));
        std::thread::sleep(EVERY);
        p.generated(101);
        match rx.try_recv() {
            Ok(Ok(StreamChunk::Progress(ModelProgress::Generating {
                tokens,
                elapsed_ms,
                generating_ms,
            }))) => {
                assert_eq!(tokens, 101);
                assert!(generating_ms >= 250 && elapsed_ms >= generating_ms);
            }
            other => panic!("expected a generation report, got {other:?}"),
        }
    }
}
