//! The live line of `rein exec` on a terminal: what the model is doing,
//! for how long, and how to stop it, rewritten in place under the last
//! line of stderr.
//!
//! Steps:
//! 1. The run's events say what the model is doing: waiting from the
//!    moment a turn starts ([`model_started`]), thinking, answering or a
//!    local model's own progress ([`model_doing`]), until its message is
//!    committed or the run stops ([`model_done`]).
//! 2. Every line written to stderr ([`write_line`]) erases the live line,
//!    writes itself and draws the live line again under it, in one write.
//! 3. A [`Ticker`] redraws the line a few times a second, so its seconds
//!    move while no event arrives (a local model reading a long prompt
//!    reports only once per batch); it writes only when the text changed.
//!
//! When stderr is not a terminal nothing of this writes anything.

use std::io::Write;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rein_core::ModelProgress;

/// How often the ticker looks at the clock.
const TICK: Duration = Duration::from_millis(250);

/// What the model is doing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Doing {
    /// The request is out; nothing has come back yet.
    Waiting,
    /// Reasoning text is streaming in.
    Thinking,
    /// Answer text is streaming in.
    Answering,
    /// A model on this machine, in its own words.
    Local(ModelProgress),
}

struct Activity {
    doing: Doing,
    since: Instant,
}

/// The one live line of the process.
struct Live {
    activity: Option<Activity>,
    /// The text on the screen now, if any.
    shown: Option<String>,
}

static LIVE: Mutex<Live> = Mutex::new(Live {
    activity: None,
    shown: None,
});

fn live() -> MutexGuard<'static, Live> {
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Live {
    /// The line as it reads now, cut to the terminal (a line that wrapped
    /// could not be erased in place).
    fn text(&self) -> Option<String> {
        let activity = self.activity.as_ref()?;
        let what = match activity.doing {
            Doing::Waiting => "waiting for the model".to_string(),
            Doing::Thinking => "thinking".to_string(),
            Doing::Answering => "writing the answer".to_string(),
            Doing::Local(progress) => progress.describe(),
        };
        let line = format!(
            "… {what} · {} s · Ctrl-C to interrupt",
            activity.since.elapsed().as_secs()
        );
        let width = super::stderr_width().unwrap_or(80).saturating_sub(1);
        Some(rein_tui::cells::fit(&line, width.max(1)))
    }

    /// Take the live line off the screen.
    fn erase(&mut self, out: &mut String) {
        if self.shown.take().is_some() {
            out.push_str("\r\x1b[2K");
        }
    }

    /// Put the live line (as it reads now) on the screen.
    fn draw(&mut self, out: &mut String) {
        if let Some(text) = self.text() {
            out.push_str("\r\x1b[2K");
            out.push_str(&text);
            self.shown = Some(text);
        }
    }

    /// Draw the line again if its text changed.
    fn refresh(&mut self) {
        let text = self.text();
        if text != self.shown {
            let mut out = String::new();
            self.erase(&mut out);
            self.draw(&mut out);
            write(&out);
        }
    }
}

fn write(bytes: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(bytes.as_bytes());
    let _ = stderr.flush();
}

/// Write `line` (already made safe) to a terminal's stderr above the live
/// line.
pub(super) fn write_line(line: &str) {
    let mut live = live();
    let mut out = String::new();
    live.erase(&mut out);
    out.push_str(line);
    out.push('\n');
    live.draw(&mut out);
    write(&out);
}

/// A model request went out: the clock starts.
pub fn model_started() {
    if !super::terminals().1 {
        return;
    }
    let mut live = live();
    live.activity = Some(Activity {
        doing: Doing::Waiting,
        since: Instant::now(),
    });
    live.refresh();
}

/// The model is doing `doing`. A local model's own account stands until
/// the request ends (its streamed text says less); its clock is the one
/// the model reports.
pub fn model_doing(doing: Doing) {
    if !super::terminals().1 {
        return;
    }
    let mut live = live();
    let now = Instant::now();
    let since = match (&live.activity, doing) {
        (_, Doing::Local(progress)) => now
            .checked_sub(Duration::from_millis(progress.elapsed_ms()))
            .unwrap_or(now),
        (Some(a), _) if matches!(a.doing, Doing::Local(_)) => return,
        (Some(a), _) => a.since,
        (None, _) => now,
    };
    live.activity = Some(Activity { doing, since });
    live.refresh();
}

/// The model's request ended: the line goes.
pub fn model_done() {
    let mut live = live();
    live.activity = None;
    let mut out = String::new();
    live.erase(&mut out);
    if !out.is_empty() {
        write(&out);
    }
}

/// Redraws the live line while it lives, so its seconds move on their own;
/// dropped, it stops and takes the line off the screen.
pub struct Ticker(Option<tokio::task::JoinHandle<()>>);

impl Ticker {
    /// Start ticking (only when stderr is a terminal).
    pub fn start() -> Ticker {
        if !super::terminals().1 {
            return Ticker(None);
        }
        Ticker(Some(tokio::spawn(async {
            let mut every = tokio::time::interval(TICK);
            loop {
                every.tick().await;
                live().refresh();
            }
        })))
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        if let Some(task) = self.0.take() {
            task.abort();
            model_done();
        }
    }
}
