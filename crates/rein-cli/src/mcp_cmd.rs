//! `rein mcp`: list the servers (started as a run starts them), show one,
//! add or remove one of the user's own, approve one of a project's.

mod login;

use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow, bail};
use rein_mcp::{McpServerConfig, McpTransport, ServerStatus};

use crate::cli::McpCommand;
use crate::config::Config;
use crate::exit::{COMPLETED, Failure, HARNESS_ERROR};
use crate::mcp::project::{self, Approvals};
use crate::output::out;

pub async fn run(cmd: McpCommand) -> Result<i32, Failure> {
    match cmd {
        McpCommand::Serve(args) => crate::mcp_serve::run(args).await,
        McpCommand::List { json, workspace } => list(json, workspace).await,
        McpCommand::Get {
            name,
            json,
            workspace,
        } => get(&name, json, workspace).await,
        McpCommand::Add {
            name,
            env,
            url,
            header,
            bearer_token_env_var,
            command,
        } => {
            let new = match &url {
                Some(url) => NewServer::Remote {
                    url,
                    headers: &header,
                    bearer_token_env_var: bearer_token_env_var.as_deref(),
                },
                None => NewServer::Local {
                    command: &command,
                    env: &env,
                },
            };
            add(&name, &new)
        }
        McpCommand::Remove { name } => remove(&name),
        McpCommand::Login {
            name,
            no_browser,
            workspace,
        } => login::login(&name, no_browser, workspace).await,
        McpCommand::Logout { name, workspace } => login::logout(&name, workspace),
        McpCommand::Approve { name, workspace } => approve(&name, workspace),
    }
}

/// The folder's config, trusted as a run would trust it.
pub(super) fn load(workspace: Option<PathBuf>) -> Result<(Config, PathBuf), Failure> {
    let workspace = crate::setup::workspace::resolve_workspace(workspace.as_deref())?;
    let trusted = crate::trust_cmd::trusted_for_run(&workspace, false)?;
    let (cfg, _) = Config::load(&workspace, trusted).map_err(Failure::usage)?;
    Ok((cfg, workspace))
}

/// `rein mcp list`: each server started as a run would start it, with the
/// tools it offers (or why it could not start), and the project's servers
/// that are not approved. Exit 0 when every enabled server started, 1 when
/// one did not.
async fn list(json: bool, workspace: Option<PathBuf>) -> Result<i32, Failure> {
    let (cfg, workspace) = load(workspace)?;
    if cfg.mcp_servers.is_empty() && cfg.project_mcp_servers.is_empty() {
        if !json {
            out(
                "no MCP servers configured ([mcp_servers.NAME] in $REIN_HOME/config.toml, or a trusted project's .mcp.json)",
            );
        }
        return Ok(COMPLETED);
    }
    for server in cfg.mcp_servers.iter().filter(|s| !s.enabled) {
        out(&describe_disabled(&server.name, json));
    }
    let (hub, notes) = crate::mcp::start(&cfg, &workspace);
    for note in &notes {
        crate::output::err(&format!("note: {note}"));
    }
    let Some(hub) = hub else {
        return Ok(COMPLETED);
    };
    // All started side by side, as a run starts them.
    hub.settled().await;
    let reports = hub.reports();
    for report in &reports {
        out(&crate::mcp::describe(report, json));
    }
    let failed = reports.iter().any(|r| r.status != ServerStatus::Ready);
    Ok(if failed { HARNESS_ERROR } else { COMPLETED })
}

/// `rein mcp get NAME`: where the server is configured, what it runs and,
/// started, its tools.
async fn get(name: &str, json: bool, workspace: Option<PathBuf>) -> Result<i32, Failure> {
    let (cfg, workspace) = load(workspace)?;
    let (config, origin) = find(&cfg, name)?;
    let approved = match origin {
        "your config.toml" => true,
        _ => Approvals::load(&cfg.home)
            .map_err(Failure::usage)?
            .approved(&workspace, &config),
    };
    let mut report = None;
    if config.enabled && approved {
        let hub =
            rein_mcp::McpHub::start(vec![config.clone()], crate::mcp::launch(&cfg, &workspace));
        hub.settled().await;
        report = hub.reports().into_iter().next();
    }
    if json {
        out(&serde_json::json!({
            "server": name, "from": origin, "transport": transport_json(&config),
            "enabled": config.enabled, "approved": approved, "status": report,
        })
        .to_string());
    } else {
        out(&format!("{name} (from {origin})"));
        out(&format!("  would {}", project::summary(&config)));
        if !config.enabled {
            out("  disabled");
        } else if !approved {
            out(&format!(
                "  not approved: approve it with `rein mcp approve {name}`"
            ));
        }
        if let Some(r) = &report {
            out(&format!("  {}", crate::mcp::describe(r, false)));
        }
    }
    let ok = report.is_none_or(|r| r.status == ServerStatus::Ready);
    Ok(if ok { COMPLETED } else { HARNESS_ERROR })
}

/// What `get --json` says a server runs or reaches: names of variables
/// and headers, never their values.
fn transport_json(config: &McpServerConfig) -> serde_json::Value {
    match &config.transport {
        McpTransport::Stdio {
            command, args, env, ..
        } => serde_json::json!({
            "type": "stdio", "command": command, "args": args,
            "env": env.keys().collect::<Vec<_>>(),
        }),
        McpTransport::Http {
            url,
            headers,
            bearer_token_env_var,
        } => serde_json::json!({
            "type": "http", "url": url, "headers": headers.keys().collect::<Vec<_>>(),
            "bearer_token_env_var": bearer_token_env_var,
        }),
    }
}

/// The server named `name` and where it comes from.
pub(super) fn find(cfg: &Config, name: &str) -> Result<(McpServerConfig, &'static str), Failure> {
    if let Some(s) = cfg.mcp_servers.iter().find(|s| s.name == name) {
        return Ok((s.clone(), "your config.toml"));
    }
    if let Some(s) = cfg
        .project_mcp_servers
        .iter()
        .find(|s| s.config.name == name)
    {
        return Ok((s.config.clone(), s.file));
    }
    Err(Failure::usage(anyhow!(
        "no MCP server named `{name}` (rein mcp list shows them)"
    )))
}

/// `rein mcp approve NAME`: the project's server may start, as it is
/// written now.
fn approve(name: &str, workspace: Option<PathBuf>) -> Result<i32, Failure> {
    let (cfg, workspace) = load(workspace)?;
    let Some(server) = cfg
        .project_mcp_servers
        .iter()
        .find(|s| s.config.name == name)
    else {
        let why = if cfg.trusted {
            format!("this project names no MCP server `{name}`")
        } else {
            format!(
                "{} is not a trusted folder, so its MCP servers are not read (trust it with `rein trust`)",
                workspace.display()
            )
        };
        return Err(Failure::usage(anyhow!(why)));
    };
    let mut approvals = Approvals::load(&cfg.home).map_err(Failure::usage)?;
    approvals
        .approve(&workspace, &server.config)
        .map_err(Failure::harness)?;
    out(&format!(
        "approved `{name}` ({}, would {}) for {}",
        server.file,
        project::summary(&server.config),
        workspace.display()
    ));
    let files = project::file_digests(&server.config, &workspace);
    if !files.is_empty() {
        out(&format!(
            "the approval covers the files it runs as they are now: {}",
            files.paths().collect::<Vec<_>>().join(", ")
        ));
    }
    Ok(COMPLETED)
}

/// The server `rein mcp add` writes.
enum NewServer<'a> {
    /// `-- COMMAND [ARGS]...` with `--env K=V`s.
    Local {
        command: &'a [String],
        env: &'a [String],
    },
    /// `--url URL` with `--header K=V`s and a token variable.
    Remote {
        url: &'a str,
        headers: &'a [String],
        bearer_token_env_var: Option<&'a str>,
    },
}

/// `rein mcp add NAME [--env K=V]... -- COMMAND [ARGS]...` or `rein mcp
/// add NAME --url URL [--header K=V]...`: a server section appended to
/// the user's config.toml (the rest of the file, its comments included,
/// is left as it is).
fn add(name: &str, server: &NewServer) -> Result<i32, Failure> {
    let home = crate::config::rein_home().map_err(Failure::usage)?;
    let path = home.join("config.toml");
    let text = crate::settings_file::read_text(&path, "config")
        .map_err(Failure::usage)?
        .unwrap_or_default();
    let section = section_text(name, server).map_err(Failure::usage)?;
    let current: crate::config::ConfigFile = toml::from_str(&text)
        .with_context(|| format!("in {}", path.display()))
        .map_err(Failure::usage)?;
    if current.mcp_servers.contains_key(name) {
        return Err(Failure::usage(anyhow!(
            "an MCP server named `{name}` is configured already (rein mcp remove {name} first)"
        )));
    }
    let mut new = text.clone();
    if !new.is_empty() && !new.ends_with('\n') {
        new.push('\n');
    }
    if !new.is_empty() {
        new.push('\n');
    }
    new.push_str(&section);
    check_config(&new, &path)?;
    crate::settings_file::write_private(&path, &new, "config").map_err(Failure::harness)?;
    out(&format!("added MCP server `{name}` to {}", path.display()));
    Ok(COMPLETED)
}

/// The `[mcp_servers.NAME]` section for `add`, its values quoted by the
/// TOML writer.
fn section_text(name: &str, server: &NewServer) -> anyhow::Result<String> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !valid {
        bail!("an MCP server name is letters, digits, `_` and `-` (at most 64), got {name:?}");
    }
    let quote = |s: &str| toml::Value::String(s.to_string()).to_string();
    let mut text = format!("[mcp_servers.{name}]\n");
    let (pairs, table) = match server {
        NewServer::Local { command, env } => {
            let (program, args) = command.split_first().ok_or_else(|| {
                anyhow!(
                    "say the server's command after `--` (rein mcp add NAME -- COMMAND [ARGS]) \
                     or its URL (rein mcp add NAME --url URL)"
                )
            })?;
            text.push_str(&format!("command = {}\n", quote(program)));
            if !args.is_empty() {
                let args: Vec<String> = args.iter().map(|a| quote(a)).collect();
                text.push_str(&format!("args = [{}]\n", args.join(", ")));
            }
            (env, "env")
        }
        NewServer::Remote {
            url,
            headers,
            bearer_token_env_var,
        } => {
            text.push_str(&format!("url = {}\n", quote(url)));
            if let Some(var) = bearer_token_env_var {
                text.push_str(&format!("bearer_token_env_var = {}\n", quote(var)));
            }
            (headers, "headers")
        }
    };
    if !pairs.is_empty() {
        let mut written = Vec::new();
        for kv in pairs.iter() {
            let (k, v) = kv
                .split_once('=')
                .filter(|(k, _)| !k.is_empty())
                .ok_or_else(|| {
                    anyhow!(
                        "--{} takes KEY=VALUE, got {kv:?}",
                        &table[..table.len() - 1]
                    )
                })?;
            written.push(format!("{} = {}", quote(k), quote(v)));
        }
        text.push_str(&format!("{table} = {{ {} }}\n", written.join(", ")));
    }
    Ok(text)
}

/// `rein mcp remove NAME`: the server's section taken out of the user's
/// config.toml; a server written some other way is left for the user.
fn remove(name: &str) -> Result<i32, Failure> {
    let home = crate::config::rein_home().map_err(Failure::usage)?;
    let path = home.join("config.toml");
    let text = crate::settings_file::read_text(&path, "config")
        .map_err(Failure::usage)?
        .unwrap_or_default();
    let new = without_section(&text, name);
    if new == text {
        return Err(Failure::usage(anyhow!(
            "{} has no [mcp_servers.{name}] section",
            path.display()
        )));
    }
    check_config(&new, &path)?;
    let parsed: crate::config::ConfigFile = toml::from_str(&new)
        .with_context(|| format!("in {}", path.display()))
        .map_err(Failure::usage)?;
    if parsed.mcp_servers.contains_key(name) {
        return Err(Failure::usage(anyhow!(
            "`{name}` is written in {} in a way rein does not edit; remove it by hand",
            path.display()
        )));
    }
    crate::settings_file::write_private(&path, &new, "config").map_err(Failure::harness)?;
    out(&format!(
        "removed MCP server `{name}` from {}",
        path.display()
    ));
    Ok(COMPLETED)
}

/// `text` without the `[mcp_servers.NAME]` table and its subtables (each
/// up to the next table header).
fn without_section(text: &str, name: &str) -> String {
    let headers = [
        format!("[mcp_servers.{name}]"),
        format!("[mcp_servers.\"{name}\"]"),
    ];
    let sub = [
        format!("[mcp_servers.{name}."),
        format!("[mcp_servers.\"{name}\"."),
    ];
    let mut out = String::new();
    let mut skipping = false;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if t.starts_with('[') {
            skipping = headers.iter().any(|h| t.starts_with(h.as_str()))
                || sub.iter().any(|h| t.starts_with(h.as_str()));
        }
        if !skipping {
            out.push_str(line);
        }
    }
    out
}

/// Refuse to write a config that would not load.
fn check_config(text: &str, path: &Path) -> Result<(), Failure> {
    toml::from_str::<crate::config::ConfigFile>(text)
        .map(|_| ())
        .map_err(|e| {
            Failure::usage(anyhow!(
                "the change would break {}: {}",
                path.display(),
                e.message().trim()
            ))
        })
}

fn describe_disabled(name: &str, json: bool) -> String {
    if json {
        serde_json::json!({"server": name, "status": "disabled", "tools": [], "error": null})
            .to_string()
    } else {
        format!("{name}: disabled")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_is_added_quoted_and_removed_whole() {
        let command = ["npx".into(), "-y".into(), "srv \"x\"".into()];
        let env = ["TOKEN_FILE=/a b".into()];
        let local = NewServer::Local {
            command: &command,
            env: &env,
        };
        let section = section_text("files", &local).unwrap();
        let text = format!("# mine\nmodel = \"m\"\n\n{section}\n[tui]\nalternate_screen = true\n");
        let file: crate::config::ConfigFile = toml::from_str(&text).unwrap();
        let McpTransport::Stdio {
            command, args, env, ..
        } = &file.mcp_servers["files"].transport
        else {
            panic!("not a local server");
        };
        assert_eq!(command, "npx");
        assert_eq!(args, &["-y", "srv \"x\""]);
        assert_eq!(env["TOKEN_FILE"], "/a b");
        let left = without_section(&text, "files");
        assert_eq!(
            left,
            "# mine\nmodel = \"m\"\n\n[tui]\nalternate_screen = true\n"
        );
        let x = ["x".to_string()];
        assert!(
            section_text(
                "a.b",
                &NewServer::Local {
                    command: &x,
                    env: &[]
                }
            )
            .is_err()
        );
        assert!(
            section_text(
                "a",
                &NewServer::Local {
                    command: &[],
                    env: &[]
                }
            )
            .is_err()
        );
        let noeq = ["NOEQUALS".to_string()];
        assert!(
            section_text(
                "a",
                &NewServer::Local {
                    command: &x,
                    env: &noeq
                }
            )
            .is_err()
        );
    }

    #[test]
    fn a_remote_server_is_added_with_its_url_headers_and_token_variable() {
        let headers = ["X-Team=core".to_string()];
        let remote = NewServer::Remote {
            url: "https://mcp.example/mcp",
            headers: &headers,
            bearer_token_env_var: Some("EXAMPLE_TOKEN"),
        };
        let text = section_text("web", &remote).unwrap();
        let file: crate::config::ConfigFile = toml::from_str(&text).unwrap();
        let server = &file.mcp_servers["web"];
        assert_eq!(server.url(), Some("https://mcp.example/mcp"));
        assert_eq!(server.describe(), "https://mcp.example/mcp (sends X-Team)");
        let McpTransport::Http {
            bearer_token_env_var,
            ..
        } = &server.transport
        else {
            panic!("not a remote server");
        };
        assert_eq!(bearer_token_env_var.as_deref(), Some("EXAMPLE_TOKEN"));
    }
}
