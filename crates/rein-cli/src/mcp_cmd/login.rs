//! `rein mcp login NAME` and `rein mcp logout NAME`: OAuth sign-in to a
//! remote server (the flow is rein-mcp's; this is the terminal side: the
//! sign-in URL printed and opened, the outcome said in one line).

use std::path::PathBuf;

use anyhow::anyhow;
use rein_mcp::{LoginOutcome, LoginUi, McpServerConfig, TokenFile};

use super::{find, load};
use crate::exit::{COMPLETED, Failure};
use crate::mcp::project::Approvals;
use crate::output::{err, out};

/// `rein mcp login NAME`: ask the server how it wants to be signed in to,
/// send the user's browser there, keep the tokens.
pub async fn login(
    name: &str,
    no_browser: bool,
    workspace: Option<PathBuf>,
) -> Result<i32, Failure> {
    let (cfg, workspace) = load(workspace)?;
    let (config, origin) = find(&cfg, name)?;
    let url = remote_url(&config)?;
    if origin != "your config.toml"
        && !Approvals::load(&cfg.home)
            .map_err(Failure::usage)?
            .approved(&workspace, &config)
    {
        return Err(Failure::usage(anyhow!(
            "`{name}` is this project's server and is not approved: approve it first with \
             `rein mcp approve {name}`"
        )));
    }
    let tokens = TokenFile::new(&crate::mcp::auth_dir(&cfg), url);
    let path = tokens.path().to_path_buf();
    let mut ui = Terminal {
        server: name.to_string(),
        no_browser,
    };
    let outcome = rein_mcp::login(&config, tokens, &mut ui)
        .await
        .map_err(|e| Failure::harness(anyhow!("signing in to `{name}` failed: {e}")))?;
    match outcome {
        LoginOutcome::SignedIn => out(&format!(
            "signed in to `{name}`; its tokens are kept in {} and refreshed as they expire",
            path.display()
        )),
        LoginOutcome::NotNeeded => out(&format!(
            "`{name}` answers without a sign-in: there is nothing to log in to"
        )),
    }
    Ok(COMPLETED)
}

/// `rein mcp logout NAME`: forget the server's tokens.
pub fn logout(name: &str, workspace: Option<PathBuf>) -> Result<i32, Failure> {
    let (cfg, _) = load(workspace)?;
    let (config, _) = find(&cfg, name)?;
    let url = remote_url(&config)?;
    let tokens = TokenFile::new(&crate::mcp::auth_dir(&cfg), url);
    match std::fs::remove_file(tokens.path()) {
        Ok(()) => out(&format!("signed out of `{name}`: its tokens are deleted")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            out(&format!("`{name}` had no stored tokens"));
        }
        Err(e) => {
            return Err(Failure::harness(anyhow!(
                "cannot delete {}: {e}",
                tokens.path().display()
            )));
        }
    }
    Ok(COMPLETED)
}

fn remote_url(config: &McpServerConfig) -> Result<&str, Failure> {
    config.url().ok_or_else(|| {
        Failure::usage(anyhow!(
            "`{}` is a local server; only remote (url) servers sign in",
            config.name
        ))
    })
}

/// The terminal during sign-in.
struct Terminal {
    server: String,
    no_browser: bool,
}

impl LoginUi for Terminal {
    fn open(&mut self, url: &str) {
        let shown = rein_tui::cells::sanitize(url);
        err(&format!(
            "rein: to sign in to `{}`, open this page:\n  {shown}\n(waiting for the browser, \
             at most {} s)",
            self.server,
            rein_mcp::LOGIN_WAIT.as_secs()
        ));
        if !self.no_browser
            && let Err(e) = crate::mcp::browser::open(url)
        {
            err(&format!(
                "rein: could not open a browser ({e}); open the page by hand"
            ));
        }
    }
}
