//! The language servers of one workspace, shared by the diagnostics hook
//! and the `lsp` tool: each started on first use, once more after a
//! crash; one that cannot start is said once and not tried again.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use super::feedback::LspSettings;
use super::languages::{ServerSpec, server_for};
use super::server::{LanguageServer, Launch};

enum Slot {
    Running {
        server: Arc<LanguageServer>,
        restarted: bool,
    },
    Unavailable,
}

/// What asking for a file's server gave.
pub enum Found {
    /// Running; `fresh`: it was started for this file.
    Server {
        server: Arc<LanguageServer>,
        fresh: bool,
    },
    /// It could not start (said this once).
    Failed(String),
    /// No server for this file, or one that failed before.
    None,
}

/// The servers, by entry name.
pub struct Servers {
    pub(super) settings: LspSettings,
    launch: Launch,
    slots: tokio::sync::Mutex<HashMap<String, Slot>>,
}

impl Servers {
    pub fn new(settings: LspSettings, launch: Launch) -> Servers {
        Servers {
            settings,
            launch,
            slots: tokio::sync::Mutex::new(HashMap::new()),
        }
    }

    /// The server for `path` (by its extension), started in `root` if
    /// need be.
    pub async fn for_file(&self, path: &Path, root: &Path) -> Found {
        let Some(ext) = path.extension().and_then(|e| e.to_str()) else {
            return Found::None;
        };
        match server_for(ext, &self.settings.servers) {
            Some(spec) => self.server(&spec, root).await,
            None => Found::None,
        }
    }

    /// The running servers.
    pub async fn running(&self) -> Vec<Arc<LanguageServer>> {
        let slots = self.slots.lock().await;
        slots
            .values()
            .filter_map(|s| match s {
                Slot::Running { server, .. } if server.is_alive() => Some(server.clone()),
                _ => None,
            })
            .collect()
    }

    async fn server(&self, spec: &ServerSpec, root: &Path) -> Found {
        let mut slots = self.slots.lock().await;
        let restarted = match slots.get(&spec.name) {
            Some(Slot::Running { server, .. }) if server.is_alive() => {
                return Found::Server {
                    server: server.clone(),
                    fresh: false,
                };
            }
            Some(Slot::Running {
                restarted: true, ..
            })
            | Some(Slot::Unavailable) => {
                slots.insert(spec.name.clone(), Slot::Unavailable);
                return Found::None;
            }
            Some(Slot::Running { .. }) => true,
            None => false,
        };
        match LanguageServer::start(spec, root, &self.launch, self.settings.first_cap).await {
            Ok(server) => {
                let server = Arc::new(server);
                slots.insert(
                    spec.name.clone(),
                    Slot::Running {
                        server: server.clone(),
                        restarted,
                    },
                );
                Found::Server {
                    server,
                    fresh: true,
                }
            }
            Err(e) => {
                slots.insert(spec.name.clone(), Slot::Unavailable);
                Found::Failed(format!(
                    "the {} language server is off for this session: {e}",
                    spec.name
                ))
            }
        }
    }

    /// Stop every server.
    pub async fn shutdown(&self) {
        let mut slots = self.slots.lock().await;
        for (_, slot) in slots.drain() {
            if let Slot::Running { server, .. } = slot
                && let Ok(server) = Arc::try_unwrap(server)
            {
                server.shutdown().await;
            }
        }
    }
}
