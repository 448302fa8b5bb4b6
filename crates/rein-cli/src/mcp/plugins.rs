//! The MCP servers of the enabled plugins: each one's `.mcp.json`, read
//! as a project's is, with `${CLAUDE_PLUGIN_ROOT}` and `${REIN_PLUGIN_ROOT}`
//! expanded to its folder (and set in the server's environment). They
//! count as the user's own servers: no approval, the same launch rules.
//! A server whose name the user's config has is named `PLUGIN_NAME`.

use std::path::Path;

use rein_mcp::{McpServerConfig, McpTransport};

use crate::plugin::load::{ROOT_ENV, enabled_parts, expand_root, free_name_with};
use crate::plugin::manifest::Part;

impl crate::config::Config {
    /// Add the enabled plugins' servers to the user's; a plugin's
    /// `.mcp.json` that cannot be read, or an entry rein cannot use, is a
    /// note.
    pub(crate) fn apply_plugin_servers(&mut self) {
        for part in enabled_parts(&self.home, Part::McpServers) {
            let plugin = &part.plugin;
            let files = part.places.iter().map(|p| super::project::read_mcp_file(p));
            let inline = part.inline.iter().map(super::project::inline_servers);
            for read in files.chain(inline) {
                match read {
                    Ok((servers, notes)) => {
                        self.mcp_notes
                            .extend(notes.into_iter().map(|n| format!("plugin {plugin}: {n}")));
                        for server in servers {
                            self.add_plugin_server(plugin, &part.root, server);
                        }
                    }
                    Err(e) => self.mcp_notes.push(format!(
                        "plugin {plugin}: {e:#}; its servers are not started"
                    )),
                }
            }
        }
    }

    fn add_plugin_server(&mut self, plugin: &str, root: &Path, mut server: McpServerConfig) {
        let taken = |n: &str| self.mcp_servers.iter().any(|s| s.name == n);
        let Some(name) = free_name_with(plugin, '_', &server.name, taken) else {
            self.mcp_notes.push(format!(
                "plugin {plugin}: its server `{}` is not started: the name is taken",
                server.name
            ));
            return;
        };
        server.name = name;
        if let McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } = &mut server.transport
        {
            *command = expand_root(command, root);
            args.iter_mut().for_each(|a| *a = expand_root(a, root));
            env.values_mut().for_each(|v| *v = expand_root(v, root));
            // A relative `cwd` would be the plugin's folder's, never the
            // workspace's (`.mcp.json` gives none today).
            if let Some(dir) = cwd {
                *dir = root.join(expand_root(&dir.to_string_lossy(), root));
            }
            for var in ROOT_ENV {
                env.entry(var.to_string())
                    .or_insert_with(|| root.display().to_string());
            }
        }
        self.mcp_servers.push(server);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A plugin server never starts in the workspace: `.mcp.json` gives
    /// no working folder (a `cwd` in it is not read), so it starts in
    /// rein's neutral folder like the user's own servers.
    #[test]
    fn a_plugin_server_gets_no_working_folder_from_its_mcp_json() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(
            root.path().join(".mcp.json"),
            r#"{"mcpServers": {"here": {"command": "python3", "args": ["s.py"], "cwd": "."}}}"#,
        )
        .unwrap();
        let mut cfg = crate::config::Config::defaults(root.path().join("home"));
        let (servers, notes) = crate::mcp::project::read_mcp_json(root.path()).unwrap();
        assert_eq!(servers.len(), 1, "{notes:?}");
        for server in servers {
            cfg.add_plugin_server("p", root.path(), server);
        }
        match &cfg.mcp_servers[0].transport {
            McpTransport::Stdio { cwd, args, .. } => {
                assert_eq!(cwd, &None);
                assert_eq!(args, &["s.py"]);
            }
            other => panic!("{other:?}"),
        }
    }
}
