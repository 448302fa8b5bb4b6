//! Choosing the model provider from the configuration.

use std::sync::Arc;

use anyhow::{Result, anyhow, bail};
use rein_core::Provider;
use rein_providers::ReplayProvider;

use crate::config::Config;

/// Names `--provider` accepts.
pub const KNOWN: &[&str] = &["replay"];

/// Build the provider the configuration names.
pub fn build(cfg: &Config) -> Result<Arc<dyn Provider>> {
    let Some(name) = cfg.provider.as_deref() else {
        bail!(
            "no model provider configured: pass --provider replay --script FILE, or set `provider` in {}",
            cfg.home.join("config.toml").display()
        );
    };
    match name {
        "replay" => {
            let script = cfg.replay_script.as_ref().ok_or_else(|| {
                anyhow!("the replay provider needs a script: pass --script FILE or set [replay] script in config")
            })?;
            let provider = ReplayProvider::from_file(script).map_err(|e| anyhow!("{e}"))?;
            Ok(Arc::new(provider))
        }
        other => bail!(
            "unknown provider `{other}`; known providers: {}",
            KNOWN.join(", ")
        ),
    }
}
