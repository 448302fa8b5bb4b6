//! Choosing and building the model provider from the configuration.

use std::sync::Arc;

use anyhow::{Result, anyhow, bail};
use rein_core::Provider;
use rein_providers::ReplayProvider;
use rein_providers::http::{HttpOptions, HttpProvider};
use rein_providers::protocol::{EndpointConfig, WireProtocol};

use crate::config::{Config, ProviderSection};

/// Providers that exist without any configuration.
pub const BUILTIN: &[&str] = &["anthropic", "openai", "openai-responses", "replay"];

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The defaults of a built-in HTTP provider, before config and environment.
fn builtin(name: &str) -> Option<ProviderSection> {
    let (kind, base, key, model) = match name {
        "openai" => (
            "openai",
            "https://api.openai.com/v1",
            "OPENAI_API_KEY",
            "gpt-4.1",
        ),
        "openai-responses" => (
            "openai-responses",
            "https://api.openai.com/v1",
            "OPENAI_API_KEY",
            "gpt-5",
        ),
        "anthropic" => (
            "anthropic",
            "https://api.anthropic.com/v1",
            "ANTHROPIC_API_KEY",
            "claude-sonnet-4-5",
        ),
        _ => return None,
    };
    Some(ProviderSection {
        kind: Some(kind.into()),
        base_url: Some(base.into()),
        api_key_env: Some(key.into()),
        model: Some(model.into()),
        ..Default::default()
    })
}

/// The environment variable that moves a built-in provider's base URL.
fn base_url_env(name: &str) -> Option<&'static str> {
    match name {
        "openai" | "openai-responses" => Some("OPENAI_BASE_URL"),
        "anthropic" => Some("ANTHROPIC_BASE_URL"),
        _ => None,
    }
}

/// The wire protocol of a `kind`.
pub fn protocol(kind: &str) -> Option<Arc<dyn WireProtocol>> {
    match kind {
        "openai" => Some(Arc::new(rein_providers::openai_chat::OpenAiChat)),
        "openai-responses" => Some(Arc::new(rein_providers::openai_responses::OpenAiResponses)),
        "anthropic" => Some(Arc::new(rein_providers::anthropic::Anthropic)),
        _ => None,
    }
}

fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let host = rest.split(['/', ':']).next().unwrap_or("");
    matches!(host, "localhost" | "127.0.0.1") || rest.starts_with("[::1]")
}

/// The provider name to use when none is configured: one whose key is set.
fn auto_select() -> Option<&'static str> {
    if env("ANTHROPIC_API_KEY").is_some() {
        Some("anthropic")
    } else if env("OPENAI_API_KEY").is_some() {
        Some("openai")
    } else {
        None
    }
}

/// Build the provider the configuration names.
pub fn build(cfg: &Config) -> Result<Arc<dyn Provider>> {
    let name = match cfg.provider.as_deref() {
        Some(n) => n.to_string(),
        None => auto_select().map(str::to_string).ok_or_else(|| {
            anyhow!(
                "no model provider configured: set ANTHROPIC_API_KEY or OPENAI_API_KEY, pass --provider, or set `provider` in {}",
                cfg.home.join("config.toml").display()
            )
        })?,
    };
    if name == "replay" {
        let script = cfg.replay_script.as_ref().ok_or_else(|| {
            anyhow!("the replay provider needs a script: pass --script FILE or set [replay] script in config")
        })?;
        let provider = ReplayProvider::from_file(script).map_err(|e| anyhow!("{e}"))?;
        return Ok(Arc::new(provider));
    }
    let mut section = match (builtin(&name), cfg.providers.get(&name)) {
        (Some(mut b), Some(c)) => {
            b.merge_from(c.clone());
            b
        }
        (Some(b), None) => b,
        (None, Some(c)) => c.clone(),
        (None, None) => {
            let mut known: Vec<String> = BUILTIN.iter().map(|s| s.to_string()).collect();
            known.extend(cfg.providers.keys().cloned());
            known.sort();
            known.dedup();
            bail!(
                "unknown provider `{name}`; known providers: {}",
                known.join(", ")
            );
        }
    };
    if let Some(var) = base_url_env(&name)
        && let Some(url) = env(var)
    {
        section.base_url = Some(url);
    }
    let kind = section.kind.clone().ok_or_else(|| {
        anyhow!("[providers.{name}] needs `kind`: one of openai, openai-responses, anthropic")
    })?;
    let protocol = protocol(&kind).ok_or_else(|| {
        anyhow!("[providers.{name}] has unknown kind `{kind}`; use openai, openai-responses or anthropic")
    })?;
    let base_url = section
        .base_url
        .clone()
        .ok_or_else(|| anyhow!("[providers.{name}] needs `base_url`"))?;
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        bail!(
            "the base URL of provider `{name}` must start with http:// or https://, got {base_url:?}"
        );
    }
    let model = cfg.model.clone().or(section.model.clone()).ok_or_else(|| {
        anyhow!("no model for provider `{name}`: pass --model or set model in [providers.{name}]")
    })?;
    let api_key = match section.api_key_env.as_deref().filter(|v| !v.is_empty()) {
        None => None,
        Some(var) => match env(var) {
            Some(key) => Some(key),
            None if is_loopback(&base_url) => None,
            None => bail!("the {name} provider needs an API key: set {var}"),
        },
    };
    let endpoint = EndpointConfig {
        base_url,
        api_key,
        model,
        max_output_tokens: section.max_output_tokens,
        headers: section.headers.clone(),
    };
    let options = HttpOptions {
        idle_timeout: cfg.stream_idle_timeout,
        context_window: section.context_window,
        ..Default::default()
    };
    let provider =
        HttpProvider::new(name, protocol, endpoint, options).map_err(|e| anyhow!("{e}"))?;
    Ok(Arc::new(provider))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_urls_are_recognised() {
        assert!(is_loopback("http://localhost:8080/v1"));
        assert!(is_loopback("http://127.0.0.1:11434/v1"));
        assert!(is_loopback("http://[::1]:8000/v1"));
        assert!(!is_loopback("https://api.openai.com/v1"));
        assert!(!is_loopback("https://localhost.evil.example/v1"));
    }
}
