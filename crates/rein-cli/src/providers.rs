//! Choosing and building the model provider from the configuration.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Result, anyhow, bail};
use rein_core::Provider;
use rein_providers::ReplayProvider;
use rein_providers::http::{HttpOptions, HttpProvider};
use rein_providers::protocol::{EndpointConfig, WireProtocol};

use crate::config::{Config, ProviderSection};
use crate::model;

/// The line printed when there is neither a key nor a local model.
pub const NO_MODEL: &str = "no model available: run rein model fetch to fetch the default local model, or set ANTHROPIC_API_KEY or OPENAI_API_KEY";

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The providers that exist without any configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuiltinProvider {
    Anthropic,
    OpenAi,
    OpenAiResponses,
    Local,
    Replay,
}

impl BuiltinProvider {
    pub const ALL: [BuiltinProvider; 5] = [
        BuiltinProvider::Anthropic,
        BuiltinProvider::OpenAi,
        BuiltinProvider::OpenAiResponses,
        BuiltinProvider::Local,
        BuiltinProvider::Replay,
    ];

    /// The name users write (`--provider`, `provider =`).
    pub fn name(self) -> &'static str {
        match self {
            BuiltinProvider::Anthropic => "anthropic",
            BuiltinProvider::OpenAi => "openai",
            BuiltinProvider::OpenAiResponses => "openai-responses",
            BuiltinProvider::Local => "local",
            BuiltinProvider::Replay => "replay",
        }
    }

    pub fn named(name: &str) -> Option<BuiltinProvider> {
        Self::ALL.into_iter().find(|b| b.name() == name)
    }

    /// The defaults of a built-in HTTP provider, before config and
    /// environment: wire API, base URL, key variable, model.
    fn http_defaults(self) -> Option<(WireKind, &'static str, &'static str, &'static str)> {
        const OPENAI: &str = "https://api.openai.com/v1";
        match self {
            BuiltinProvider::OpenAi => {
                Some((WireKind::OpenAiChat, OPENAI, "OPENAI_API_KEY", "gpt-4.1"))
            }
            BuiltinProvider::OpenAiResponses => {
                Some((WireKind::OpenAiResponses, OPENAI, "OPENAI_API_KEY", "gpt-5"))
            }
            BuiltinProvider::Anthropic => Some((
                WireKind::Anthropic,
                "https://api.anthropic.com/v1",
                "ANTHROPIC_API_KEY",
                "claude-sonnet-4-5",
            )),
            BuiltinProvider::Local | BuiltinProvider::Replay => None,
        }
    }

    /// The environment variable that moves its base URL.
    fn base_url_env(self) -> Option<&'static str> {
        match self.http_defaults()?.0 {
            WireKind::OpenAiChat | WireKind::OpenAiResponses => Some("OPENAI_BASE_URL"),
            WireKind::Anthropic => Some("ANTHROPIC_BASE_URL"),
        }
    }
}

/// The wire API an HTTP provider speaks (`kind` in its config section).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireKind {
    OpenAiChat,
    OpenAiResponses,
    Anthropic,
}

impl WireKind {
    pub fn name(self) -> &'static str {
        match self {
            WireKind::OpenAiChat => "openai",
            WireKind::OpenAiResponses => "openai-responses",
            WireKind::Anthropic => "anthropic",
        }
    }

    pub fn parse(kind: &str) -> Option<WireKind> {
        [
            WireKind::OpenAiChat,
            WireKind::OpenAiResponses,
            WireKind::Anthropic,
        ]
        .into_iter()
        .find(|k| k.name() == kind)
    }

    pub fn protocol(self) -> Arc<dyn WireProtocol> {
        match self {
            WireKind::OpenAiChat => Arc::new(rein_providers::openai_chat::OpenAiChat),
            WireKind::OpenAiResponses => {
                Arc::new(rein_providers::openai_responses::OpenAiResponses)
            }
            WireKind::Anthropic => Arc::new(rein_providers::anthropic::Anthropic),
        }
    }
}

/// The config section a built-in HTTP provider starts from.
fn builtin_section(builtin: BuiltinProvider) -> Option<ProviderSection> {
    let (kind, base, key, model) = builtin.http_defaults()?;
    Some(ProviderSection {
        kind: Some(kind.name().into()),
        base_url: Some(base.into()),
        api_key_env: Some(key.into()),
        model: Some(model.into()),
        ..Default::default()
    })
}

fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let host = rest.split(['/', ':']).next().unwrap_or("");
    matches!(host, "localhost" | "127.0.0.1") || rest.starts_with("[::1]")
}

/// The local model file to use, and whether it was configured (`--model-path`,
/// `REIN_MODEL_PATH`, `[local] model_path`) rather than one of the known
/// models: `--model small|medium` (or `/model medium`) names a known one
/// and wins over a configured path; else the configured path; else the
/// default model.
pub fn local_model_path(cfg: &Config) -> (PathBuf, bool) {
    if let Some(known) = cfg.model.as_deref().and_then(model::find) {
        return (model::model_path(&cfg.home, known), false);
    }
    match &cfg.local.model_path {
        Some(p) => (p.clone(), true),
        None => (model::model_path(&cfg.home, model::default_model()), false),
    }
}

/// The provider a run with `cfg` uses: the configured one, else
/// [`auto_select`]'s.
pub fn chosen_name(cfg: &Config) -> Option<String> {
    cfg.provider
        .clone()
        .or_else(|| auto_select(cfg).map(str::to_string))
}

/// The provider name to use when none is configured: one whose key is set,
/// else the local model when one is configured or the default one is there.
fn auto_select(cfg: &Config) -> Option<&'static str> {
    if env("ANTHROPIC_API_KEY").is_some() {
        Some("anthropic")
    } else if env("OPENAI_API_KEY").is_some() {
        Some("openai")
    } else {
        let (path, configured) = local_model_path(cfg);
        local_choice(&path, configured)
    }
}

/// The local model when one is configured (used even before it exists,
/// so that loading it reports the missing file) or `path` holds one.
fn local_choice(path: &Path, configured: bool) -> Option<&'static str> {
    (cfg!(feature = "local") && (configured || path.is_file())).then_some("local")
}

/// Check what can be checked before loading: the file is there, is a GGUF
/// file, and, when it is a known model, has the known size.
fn check_model_file(path: &Path, configured: bool) -> Result<()> {
    let shown = path.display();
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if configured {
                bail!("the model file {shown} does not exist");
            }
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let known = model::MODELS
                .iter()
                .find(|m| m.file == name)
                .unwrap_or(model::default_model());
            let which = if std::ptr::eq(known, model::default_model()) {
                "the default local model".to_string()
            } else {
                format!("the {} local model", known.name)
            };
            bail!(
                "{which} is not in {}: run {} to fetch it, or pass --model-path FILE",
                path.parent().unwrap_or(Path::new(".")).display(),
                model::fetch_command(known)
            );
        }
        Err(e) => bail!("cannot read the model file {shown}: {e}"),
    };
    if !meta.is_file() {
        bail!("the model path {shown} is not a file");
    }
    let mut magic = [0u8; 4];
    let mut file = std::fs::File::open(path)
        .map_err(|e| anyhow!("cannot read the model file {shown}: {e}"))?;
    if file.read_exact(&mut magic).is_err() || &magic != b"GGUF" {
        bail!("{shown} is not a GGUF model file");
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if let Some(known) = model::MODELS.iter().find(|m| m.file == name)
        && meta.len() != known.size
    {
        bail!(
            "the model file {shown} is truncated or damaged ({} bytes, expected {}): run {} to fetch it again",
            meta.len(),
            known.size,
            model::fetch_command(known)
        );
    }
    Ok(())
}

/// Load the embedded local model.
fn build_local(cfg: &Config) -> Result<Arc<dyn Provider>> {
    let (path, configured) = local_model_path(cfg);
    check_model_file(&path, configured)?;
    load_local(cfg, path)
}

#[cfg(feature = "local")]
fn load_local(cfg: &Config, model_path: PathBuf) -> Result<Arc<dyn Provider>> {
    use rein_providers::local::{LocalConfig, LocalProvider};
    let defaults = LocalConfig::default();
    let shown = model_path.display().to_string();
    let config = LocalConfig {
        model_path,
        context_size: cfg.local.context_size.unwrap_or(defaults.context_size),
        threads: cfg.local.threads.or(defaults.threads),
        grammar: cfg.local.grammar.unwrap_or(defaults.grammar),
        tool_results_as_user: cfg
            .local
            .tool_results_as_user
            .unwrap_or(defaults.tool_results_as_user),
        ..defaults
    };
    let provider = LocalProvider::load(config).map_err(|e| {
        let msg = e
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if msg.contains(&shown) {
            anyhow!("cannot load the local model: {msg}")
        } else {
            anyhow!("cannot load the local model {shown}: {msg}")
        }
    })?;
    Ok(Arc::new(provider))
}

#[cfg(not(feature = "local"))]
fn load_local(_cfg: &Config, _model_path: PathBuf) -> Result<Arc<dyn Provider>> {
    bail!(
        "this rein was built without the local model: rebuild it with the `local` feature (on by default)"
    )
}

/// Build the provider the configuration names.
/// [`build`], and when no model is there at all, the offer to fetch the
/// default one first (on a terminal).
pub fn build_or_offer(cfg: &Config) -> Result<Arc<dyn Provider>> {
    if chosen_name(cfg).is_none() {
        // Fetched or not, build says what there is to use.
        model::offer_default(&cfg.home);
    }
    build(cfg)
}

pub fn build(cfg: &Config) -> Result<Arc<dyn Provider>> {
    let name = chosen_name(cfg).ok_or_else(|| anyhow!("{NO_MODEL}"))?;
    let builtin = BuiltinProvider::named(&name);
    if builtin == Some(BuiltinProvider::Local) {
        return build_local(cfg);
    }
    if builtin == Some(BuiltinProvider::Replay) {
        let script = cfg.replay_script.as_ref().ok_or_else(|| {
            anyhow!("the replay provider needs a script: pass --script FILE or set [replay] script in config")
        })?;
        let provider = ReplayProvider::from_file(script).map_err(|e| anyhow!("{e}"))?;
        return Ok(Arc::new(provider));
    }
    let mut section = match (builtin.and_then(builtin_section), cfg.providers.get(&name)) {
        (Some(mut b), Some(c)) => {
            b.merge_from(c.clone());
            b
        }
        (Some(b), None) => b,
        (None, Some(c)) => c.clone(),
        (None, None) => {
            let mut known: Vec<String> = BuiltinProvider::ALL
                .iter()
                .map(|b| b.name().to_string())
                .collect();
            known.extend(cfg.providers.keys().cloned());
            known.sort();
            known.dedup();
            bail!(
                "unknown provider `{name}`; known providers: {}",
                known.join(", ")
            );
        }
    };
    if let Some(var) = builtin.and_then(BuiltinProvider::base_url_env)
        && let Some(url) = env(var)
    {
        section.base_url = Some(url);
    }
    let kind = section.kind.clone().ok_or_else(|| {
        anyhow!("[providers.{name}] needs `kind`: one of openai, openai-responses, anthropic")
    })?;
    let protocol = WireKind::parse(&kind).map(WireKind::protocol).ok_or_else(|| {
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

/// The provider `text` chooses over `cfg`'s (`/model TEXT`, a custom
/// command's `model`): `provider:model`, a provider, or a model of the
/// configured provider.
pub fn build_named(cfg: &Config, text: &str) -> Result<Arc<dyn Provider>> {
    let mut c = cfg.clone();
    let (p, m) = model_choice(&c, text);
    if p.is_some() {
        c.provider = p;
        c.model = None;
    }
    if m.is_some() {
        c.model = m;
    }
    // The local provider runs only its own models: any other name is a
    // mistake to say, not a switch that silently keeps the current model.
    let name = chosen_name(&c);
    if BuiltinProvider::named(name.as_deref().unwrap_or_default()) == Some(BuiltinProvider::Local)
        && let Some(model) = c.model.as_deref().filter(|m| model::find(m).is_none())
    {
        bail!(
            "no model `{model}` here: the local models are {}; another provider's model is \
             PROVIDER:MODEL (`openai:{model}` with OPENAI_API_KEY set, `anthropic:{model}` with \
             ANTHROPIC_API_KEY, or a [providers.NAME] of your config)",
            model::MODELS
                .iter()
                .map(|k| k.name)
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    build(&c)
}

/// Split `/model` text: `provider:model`, a provider name, or a model name.
pub fn model_choice(cfg: &Config, text: &str) -> (Option<String>, Option<String>) {
    let text = text.trim();
    if let Some((p, m)) = text.split_once(':')
        && (BuiltinProvider::named(p).is_some() || cfg.providers.contains_key(p))
    {
        let m = m.trim();
        return (Some(p.to_string()), (!m.is_empty()).then(|| m.to_string()));
    }
    if BuiltinProvider::named(text).is_some() || cfg.providers.contains_key(text) {
        return (Some(text.to_string()), None);
    }
    (None, Some(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `/model gpt-4.1` on the local model is an error saying what would
    /// work, never a switch that keeps the current model.
    #[test]
    fn a_name_the_local_provider_does_not_have_is_an_error_naming_what_works() {
        let mut cfg = Config::defaults(std::path::PathBuf::from("/nonexistent"));
        cfg.provider = Some("local".into());
        let Err(e) = build_named(&cfg, "gpt-4.1") else {
            panic!("gpt-4.1 was taken for a local model")
        };
        let e = e.to_string();
        assert!(e.contains("no model `gpt-4.1` here"), "{e}");
        assert!(
            e.contains("openai:gpt-4.1") && e.contains("OPENAI_API_KEY"),
            "{e}"
        );
        assert!(e.contains("small"), "{e}");
    }

    #[test]
    fn model_choice_tells_providers_from_models() {
        let cfg = Config::defaults(std::path::PathBuf::from("/nonexistent"));
        assert_eq!(
            model_choice(&cfg, "anthropic:claude-sonnet-4-5"),
            (Some("anthropic".into()), Some("claude-sonnet-4-5".into()))
        );
        assert_eq!(model_choice(&cfg, "local"), (Some("local".into()), None));
        assert_eq!(
            model_choice(&cfg, "gpt-4.1"),
            (None, Some("gpt-4.1".into()))
        );
    }

    #[test]
    fn model_files_are_checked_before_loading() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.gguf");
        let err = check_model_file(&missing, true).unwrap_err().to_string();
        assert!(err.contains("does not exist"), "{err}");
        let err = check_model_file(&missing, false).unwrap_err().to_string();
        assert!(err.contains("rein model fetch"), "{err}");
        let text = dir.path().join("notes.gguf");
        std::fs::write(&text, "hello world").unwrap();
        let err = check_model_file(&text, true).unwrap_err().to_string();
        assert!(err.contains("is not a GGUF model file"), "{err}");
        let short = dir.path().join(model::default_model().file);
        std::fs::write(&short, b"GGUF\x03\0\0\0").unwrap();
        let err = check_model_file(&short, true).unwrap_err().to_string();
        assert!(err.contains("truncated"), "{err}");
        let other = dir.path().join("other.gguf");
        std::fs::write(&other, b"GGUF\x03\0\0\0").unwrap();
        check_model_file(&other, true).unwrap();
        let err = check_model_file(dir.path(), true).unwrap_err().to_string();
        assert!(err.contains("not a file"), "{err}");
    }

    #[test]
    fn without_keys_the_default_local_model_is_chosen_when_present() {
        if ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "REIN_MODELS_DIR"]
            .iter()
            .any(|v| env(v).is_some())
        {
            eprintln!("skipped: a key or REIN_MODELS_DIR is set in this environment");
            return;
        }
        // The models folder is the user's cache: the choice itself is
        // checked on a folder of the test's own.
        let dir = tempfile::tempdir().unwrap();
        let default = dir.path().join(model::default_model().file);
        assert_eq!(local_choice(&default, false), None);
        std::fs::write(&default, "GGUF").unwrap();
        let local = cfg!(feature = "local").then_some("local");
        assert_eq!(local_choice(&default, false), local);
        // A configured path is used even before it exists, so that loading
        // it reports the missing file.
        let mut cfg = Config::defaults(dir.path().to_path_buf());
        cfg.local.model_path = Some(dir.path().join("mine.gguf"));
        assert_eq!(auto_select(&cfg), local);
    }

    #[test]
    fn loopback_urls_are_recognised() {
        assert!(is_loopback("http://localhost:8080/v1"));
        assert!(is_loopback("http://127.0.0.1:11434/v1"));
        assert!(is_loopback("http://[::1]:8000/v1"));
        assert!(!is_loopback("https://api.openai.com/v1"));
        assert!(!is_loopback("https://localhost.evil.example/v1"));
    }
}
