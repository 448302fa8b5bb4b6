//! The flags of the long-lived front ends (`rein acp`, `rein serve`) and
//! of the sandbox wrapper an editor's terminal runs (`rein sandbox-run`).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

use super::ModelArgs;

/// `rein acp`.
#[derive(Debug, Args)]
pub struct AcpArgs {
    #[command(flatten)]
    pub models: ModelArgs,
    /// The permission mode sessions start in (default: each workspace's
    /// configured mode). The client's mode menu offers default,
    /// accept-edits, plan and auto; bypass only when started in it.
    #[arg(long, value_name = "MODE")]
    pub mode: Option<String>,
    #[command(flatten)]
    pub otel: crate::otel::OtelArgs,
}

/// `rein serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub models: ModelArgs,
    /// The address to listen on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7420")]
    pub listen: SocketAddr,
    /// The folder whose subfolders are the sessions' workspaces (default:
    /// the current directory).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// The mode sessions start in (default: each workspace's configured
    /// mode). Clients may switch to bypass only when this is bypass.
    #[arg(long, value_name = "MODE")]
    pub mode: Option<String>,
    /// Where sessions are stored: `postgres://…` to share them between
    /// servers, or `sqlite` for the file under the rein home (default:
    /// `REIN_STORE`, else `store` in config.toml, else `sqlite`). Keep a
    /// password out of it (the process list shows it until rein blanks
    /// it): give it in `REIN_STORE`, config.toml or `PGPASSWORD`.
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// Web pages of this origin may call (exactly as the browser sends
    /// it, e.g. `https://app.example`); repeatable. Others are refused.
    #[arg(long, value_name = "ORIGIN")]
    pub allow_origin: Vec<String>,
    /// A `Host` a loopback server also answers to (repeatable): the name
    /// a proxy in front of it passes on, e.g. `rein.example:443`. Other
    /// names are refused on loopback (DNS rebinding).
    #[arg(long, value_name = "HOST")]
    pub allow_host: Vec<String>,
    /// Serve HTTPS with this certificate chain (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of `--tls-cert` (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Listen on a non-loopback address without TLS (the token then
    /// crosses the network in the clear).
    #[arg(long)]
    pub allow_insecure_remote: bool,
    /// How long a session's lease lasts without a heartbeat (PostgreSQL
    /// store): a server that dies loses its sessions after this.
    #[arg(long, value_name = "SECS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub lease_secs: u64,
    /// Most connections to the PostgreSQL store at once.
    #[arg(long, value_name = "N", default_value = "16")]
    pub store_connections: std::num::NonZeroUsize,
    /// How many of a session's newest events the store keeps for clients
    /// that reconnect (`Last-Event-ID`).
    #[arg(long, value_name = "N", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub events_kept: u64,
    /// How long the store keeps a session's events (seconds; default a
    /// week).
    #[arg(long, value_name = "SECS", default_value_t = 7 * 24 * 60 * 60,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub events_max_age_secs: u64,
    #[command(flatten)]
    pub otel: crate::otel::OtelArgs,
}

/// `rein sandbox-run`.
#[derive(Debug, Args)]
pub struct SandboxRunArgs {
    /// The spec rein wrote (read once, then deleted).
    #[arg(long, value_name = "FILE")]
    pub spec: PathBuf,
    /// The spec's SHA-256, in hex: anything else is refused.
    #[arg(long, value_name = "HEX")]
    pub sha256: String,
}
