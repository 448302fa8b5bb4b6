//! `$REIN_HOME` kept private: it holds every session's transcript, spilled
//! command output, memories and the input history, so it is `0700`.
//!
//! A missing home is created `0700`. One that others can enter (an older
//! rein made it `0755`) is tightened when this account owns it, and stderr
//! says so once; one that cannot be tightened is named on stderr each time.

use std::path::Path;

use rein_core::private_fs::{DirState, secure_dir};

use crate::output;

/// Make `home` private, telling stderr what was changed or could not be.
/// Failing to create it is left to whatever opens a file there next, which
/// names the file.
pub fn secure(home: &Path) {
    if let Some(line) = report(home, secure_dir(home)) {
        output::err(&line);
    }
}

/// The stderr line for what [`secure_dir`] did, if it is worth one.
fn report(home: &Path, state: std::io::Result<DirState>) -> Option<String> {
    match state {
        Ok(DirState::Created | DirState::Private) | Err(_) => None,
        Ok(DirState::Tightened { was }) => Some(format!(
            "rein: {} was readable by other users (mode {was:o}); it is now private (700)",
            home.display()
        )),
        Ok(DirState::Loose { mode }) => Some(format!(
            "rein: warning: {} has mode {mode:o} and cannot be made private (700): other users \
             may read your sessions there. Fix its owner or mode, or set REIN_HOME to a private \
             folder.",
            home.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_change_or_a_loose_home_is_worth_a_line() {
        let home = Path::new("/h/.rein");
        assert_eq!(report(home, Ok(DirState::Created)), None);
        assert_eq!(report(home, Ok(DirState::Private)), None);
        let told = report(home, Ok(DirState::Tightened { was: 0o755 })).unwrap_or_default();
        assert!(told.contains("/h/.rein") && told.contains("755") && told.contains("now private"));
        let warned = report(home, Ok(DirState::Loose { mode: 0o777 })).unwrap_or_default();
        assert!(warned.contains("cannot be made private"), "{warned}");
    }
}
