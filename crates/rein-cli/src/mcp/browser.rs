//! The user's browser, for OAuth sign-in pages: `rein mcp login` opens
//! one, and so does a run when a server asks for a larger scope (a
//! step-up) — the same program in every front end.

use std::sync::Arc;

/// The browser a run's servers open step-up sign-in pages in.
pub(crate) fn handle() -> rein_mcp::BrowserHandle {
    rein_mcp::BrowserHandle(Arc::new(Desktop))
}

struct Desktop;

impl rein_mcp::Browser for Desktop {
    fn open(&self, url: &str) -> bool {
        open(url).is_ok()
    }
}

/// Open `url` in the user's browser: `$BROWSER URL`, or `xdg-open URL` on
/// a desktop. Only http(s) pages are opened (the URL is the authorization
/// server's).
pub(crate) fn open(url: &str) -> anyhow::Result<()> {
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        anyhow::bail!("the sign-in page is not an http(s) URL");
    }
    let program = match std::env::var_os("BROWSER").filter(|b| !b.is_empty()) {
        Some(browser) => browser,
        None if std::env::var_os("DISPLAY").is_some()
            || std::env::var_os("WAYLAND_DISPLAY").is_some() =>
        {
            "xdg-open".into()
        }
        None => anyhow::bail!("no desktop here and $BROWSER is not set"),
    };
    // The user's desktop program, with the desktop's environment, but
    // never started in the workspace (a repository's files are not its).
    std::process::Command::new(program)
        .arg(url)
        .current_dir(rein_core::host_process::neutral_dir())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    Ok(())
}
