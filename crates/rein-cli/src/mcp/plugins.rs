//! The MCP servers of the enabled plugins: each one's `.mcp.json`, read
//! as a project's is, with `${CLAUDE_PLUGIN_ROOT}` and `${REIN_PLUGIN_ROOT}`
//! expanded to its folder (and set in the server's environment). They
//! count as the user's own servers: no approval, the same launch rules.
//! A server whose name the user's config has is named `PLUGIN_NAME`.

use std::path::Path;

use rein_mcp::{McpServerConfig, McpTransport};

use crate::plugin::load::{ROOT_ENV, enabled, expand_root, free_name_with};

impl crate::config::Config {
    /// Add the enabled plugins' servers to the user's; a plugin's
    /// `.mcp.json` that cannot be read, or an entry rein cannot use, is a
    /// note.
    pub(crate) fn apply_plugin_servers(&mut self) {
        for (plugin, root) in enabled(&self.home) {
            match super::project::read_mcp_json(&root) {
                Ok((servers, notes)) => {
                    self.mcp_notes
                        .extend(notes.into_iter().map(|n| format!("plugin {plugin}: {n}")));
                    for server in servers {
                        self.add_plugin_server(&plugin, &root, server);
                    }
                }
                Err(e) => self.mcp_notes.push(format!(
                    "plugin {plugin}: {e:#}; its servers are not started"
                )),
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
            if let Some(dir) = cwd {
                *dir = expand_root(&dir.to_string_lossy(), root).into();
            }
            for var in ROOT_ENV {
                env.entry(var.to_string())
                    .or_insert_with(|| root.display().to_string());
            }
        }
        self.mcp_servers.push(server);
    }
}
