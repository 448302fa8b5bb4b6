//! While the app runs, stderr goes to a private log file (nothing may print
//! over the screen), and a panic in a frame is caught and shown as a line.

use std::os::fd::AsRawFd;

/// True while a frame is drawn: a panic there is caught and shown as a
/// line in the app instead of ending it.
pub(super) static RENDERING: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);
/// The real stderr while it points at the log file (-1 when not).
static SAVED_STDERR: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

pub(super) fn restore_stderr() {
    let fd = SAVED_STDERR.swap(-1, std::sync::atomic::Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: `fd` is our saved copy of the original stderr.
        unsafe {
            libc::dup2(fd, 2);
            libc::close(fd);
        }
    }
}

/// While the app runs, anything written to stderr (a library's log, a
/// panic message) goes to `$REIN_HOME/logs/tui.log` instead of the screen.
pub(super) struct LogRedirect;

impl LogRedirect {
    pub(super) fn start(home: &std::path::Path) -> std::io::Result<LogRedirect> {
        let dir = home.join("logs");
        let path = dir.join("tui.log");
        // Logs may quote anything a session saw: private to the user.
        let log = rein_core::private_fs::create_private_dir(&dir)
            .and_then(|_| rein_core::private_fs::ensure_private_file(&path))
            .and_then(|_| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
            });
        // A home that cannot hold logs loses them, not the app: nothing may
        // print over the screen either way.
        let file = match log {
            Ok(f) => f,
            Err(_) => std::fs::OpenOptions::new().write(true).open("/dev/null")?,
        };
        // SAFETY: dup/dup2 on valid descriptors; the saved copy is put back
        // on drop.
        let saved = unsafe { libc::dup(2) };
        if saved < 0 {
            return Ok(LogRedirect);
        }
        if unsafe { libc::dup2(file.as_raw_fd(), 2) } < 0 {
            unsafe { libc::close(saved) };
            return Ok(LogRedirect);
        }
        SAVED_STDERR.store(saved, std::sync::atomic::Ordering::SeqCst);
        Ok(LogRedirect)
    }
}

impl Drop for LogRedirect {
    fn drop(&mut self) {
        restore_stderr();
    }
}
