//! The interactive app driven for real in tmux: keys in, screen out. This
//! module holds the tmux driver; its submodules hold the tests, one module
//! per behaviour.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use super::support::*;

mod exec_on_terminal;
mod lsp_and_init;
mod runs_and_resume;
mod slash_commands;
mod terminal;
mod trust_and_approvals;

/// A private tmux server (its own socket) holding one session.
pub(crate) struct Tmux {
    socket: String,
    session: &'static str,
}

impl Tmux {
    pub(crate) fn start(env: &Env, args: &[&str]) -> Tmux {
        Tmux::start_after(env, "true", args)
    }

    /// Runs the shell command `before`, then the app.
    pub(crate) fn start_after(env: &Env, before: &str, args: &[&str]) -> Tmux {
        Tmux::start_sized(env, (100, 30), before, args)
    }

    /// Runs the shell command `before`, then the app, in a terminal of
    /// `width` columns and `height` rows.
    pub(crate) fn start_sized(
        env: &Env,
        (width, height): (u16, u16),
        before: &str,
        args: &[&str],
    ) -> Tmux {
        let socket = format!("rein-test-{}-{}", std::process::id(), fastrand_id());
        let t = Tmux {
            socket,
            session: "app",
        };
        let bin = env!("CARGO_BIN_EXE_rein");
        let mut line = format!(
            "{before}; env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY REIN_HOME='{}' TERM=xterm-256color '{bin}'",
            env.home.path().display()
        );
        for a in args {
            line.push_str(&format!(" '{a}'"));
        }
        line.push_str("; echo \"rein exited with $?\"; sleep 60");
        let ok = Command::new("tmux")
            .args(["-L", &t.socket, "new-session", "-d", "-s", t.session])
            .args(["-x", &width.to_string(), "-y", &height.to_string(), "-c"])
            .arg(env.ws.path())
            .arg(line)
            .status()
            .expect("tmux must be installed for the app's end-to-end test (apt-get install tmux)");
        assert!(ok.success(), "tmux could not start a session");
        t
    }

    pub(crate) fn keys(&self, keys: &[&str]) {
        let ok = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", self.session])
            .args(keys)
            .status()
            .unwrap();
        assert!(ok.success());
    }

    pub(crate) fn resize(&self, w: u16, h: u16) {
        let ok = Command::new("tmux")
            .args(["-L", &self.socket, "resize-window", "-t", self.session])
            .args(["-x", &w.to_string(), "-y", &h.to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
    }

    /// Only what is on the screen now.
    pub(crate) fn visible(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-t", self.session])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub(crate) fn type_text(&self, text: &str) {
        let ok = Command::new("tmux")
            .args([
                "-L",
                &self.socket,
                "send-keys",
                "-l",
                "-t",
                self.session,
                text,
            ])
            .status()
            .unwrap();
        assert!(ok.success());
    }

    /// The screen and the scrollback above it.
    pub(crate) fn capture(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-S", "-300", "-t"])
            .arg(self.session)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Wait until the pane shows `text` (10 s at most).
    pub(crate) fn wait_for(&self, text: &str) -> String {
        let start = Instant::now();
        loop {
            let screen = self.capture();
            if screen.contains(text) {
                return screen;
            }
            if start.elapsed() > Duration::from_secs(10) {
                panic!("the screen never showed {text:?}; it shows:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

fn fastrand_id() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// A one-file project whose `mean` divides by one less than the count.
fn write_project(ws: &Path) {
    std::fs::write(
        ws.join("calc.py"),
        "def mean(v):\n    return sum(v) / (len(v) - 1)\n",
    )
    .unwrap();
}

/// The status line (the last line with text) of the visible screen.
fn status_of(app: &Tmux, needle: &str) -> String {
    app.wait_for(needle);
    let screen = app.visible();
    screen
        .lines()
        .rev()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?}:\n{screen}"))
        .to_string()
}

pub(crate) fn quit(app: &Tmux) {
    app.type_text("/quit");
    app.keys(&["Enter"]);
    app.wait_for("rein exited with 0");
}
