//! The language servers of one workspace, shared by the diagnostics hook
//! and the `lsp` tool, and the one record of their state that every front
//! end shows ([`Servers::status`]).
//!
//! 1. a file picks its server by extension, and its project root by the
//!    server's root markers ([`super::roots`]): one server runs per
//!    language and root, so two projects in one workspace get two;
//! 2. each is started on its first file (starts wait for each other), once
//!    more after a crash; a second crash, or a start that fails, turns it
//!    off for the session, said once per language;
//! 3. each wait for diagnostics is noted: one that hit its cap marks the
//!    server slow until the next wait answers.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::feedback::LspSettings;
use super::languages::{ServerSpec, known, server_for};
use super::roots::project_root;
use super::server::{LanguageServer, Launch, ServerError};

/// Why a server is off for the session.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Off {
    Missing(String),
    Failed(String),
    CrashedTwice,
}

/// One server (a language and a root) once a file asked for it.
#[derive(Default)]
struct Slot {
    /// None while it starts.
    server: Option<Arc<LanguageServer>>,
    restarted: bool,
    /// The cap the last wait for diagnostics hit.
    slow: Option<Duration>,
    off: Option<Off>,
}

/// A server's state, as the app shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// Found, and no file of its language was edited or asked about yet.
    NotStarted {
        program: String,
    },
    /// Its program is not on `PATH`.
    Missing {
        program: String,
    },
    Starting,
    Ready,
    /// The last wait for its diagnostics hit the cap: nothing was added.
    Slow {
        cap: Duration,
    },
    /// It exited; the next file of its language starts it again (once).
    Crashed,
    /// Off for this session: it could not start, or crashed twice.
    Off {
        why: String,
    },
}

/// One line of the status: a server and its state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    pub name: String,
    /// The project it serves (None: not started).
    pub root: Option<PathBuf>,
    pub state: ServerState,
    /// It was started again after a crash.
    pub restarted: bool,
}

impl ServerStatus {
    /// `python [apps/api]: ready (restarted once after a crash)`.
    pub fn line(&self, workspace: &Path) -> String {
        let root = match &self.root {
            Some(r) => match r.strip_prefix(workspace) {
                Ok(rel) if rel.as_os_str().is_empty() => " [.]".to_string(),
                Ok(rel) => format!(" [{}]", rel.display()),
                Err(_) => format!(" [{}]", r.display()),
            },
            None => String::new(),
        };
        let state = match &self.state {
            ServerState::NotStarted { program } => format!("not started yet ({program})"),
            ServerState::Missing { program } => format!("missing: {program} is not on PATH"),
            ServerState::Starting => "starting".to_string(),
            ServerState::Ready => "ready".to_string(),
            ServerState::Slow { cap } => format!(
                "slow: the last wait for diagnostics hit the {:.0?} cap",
                cap
            ),
            ServerState::Crashed => "crashed; restarted on its next file".to_string(),
            ServerState::Off { why } => format!("off for this session: {why}"),
        };
        let again = if self.restarted && self.state != ServerState::Crashed {
            " (restarted once after a crash)"
        } else {
            ""
        };
        format!("{}{root}: {state}{again}", self.name)
    }
}

/// What asking for a file's server gave.
pub enum Found {
    /// Running; `fresh`: it was started for this file.
    Server {
        server: Arc<LanguageServer>,
        fresh: bool,
    },
    /// It could not start (said this once per language).
    Failed(String),
    /// No server for this file, or one that is off.
    None,
}

/// The servers, by entry name and root.
pub struct Servers {
    pub(super) settings: LspSettings,
    launch: Launch,
    /// Held while a server starts.
    starts: tokio::sync::Mutex<()>,
    slots: Mutex<BTreeMap<(String, PathBuf), Slot>>,
    /// Languages whose failure was said.
    said: Mutex<BTreeSet<String>>,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Servers {
    pub fn new(settings: LspSettings, launch: Launch) -> Servers {
        Servers {
            settings,
            launch,
            starts: tokio::sync::Mutex::new(()),
            slots: Mutex::new(BTreeMap::new()),
            said: Mutex::new(BTreeSet::new()),
        }
    }

    /// The server for `path` (canonical; by its extension) in
    /// `workspace` (canonical), started in the file's project root if
    /// need be.
    pub async fn for_file(&self, path: &Path, workspace: &Path) -> Found {
        let Some(ext) = path.extension().and_then(|e| e.to_str()) else {
            return Found::None;
        };
        let Some(spec) = server_for(ext, &self.settings.servers) else {
            return Found::None;
        };
        let root = project_root(path, workspace, &spec.root_markers);
        self.server(&spec, &root).await
    }

    /// The running servers.
    pub async fn running(&self) -> Vec<Arc<LanguageServer>> {
        locked(&self.slots)
            .values()
            .filter_map(|s| s.server.clone().filter(|s| s.is_alive()))
            .collect()
    }

    /// Each server's state: those started, one line per root; those not,
    /// one line per language rein would use.
    pub fn status(&self) -> Vec<ServerStatus> {
        let slots = locked(&self.slots);
        let mut out = Vec::new();
        for k in known(&self.settings.servers) {
            let mut mine = slots.iter().filter(|((n, _), _)| *n == k.name).peekable();
            if mine.peek().is_none() {
                let program = k.program.clone();
                out.push(ServerStatus {
                    name: k.name.clone(),
                    root: None,
                    state: match k.found {
                        true => ServerState::NotStarted { program },
                        false => ServerState::Missing { program },
                    },
                    restarted: false,
                });
            }
            for ((name, root), slot) in mine {
                out.push(ServerStatus {
                    name: name.clone(),
                    root: Some(root.clone()),
                    state: slot.state(),
                    restarted: slot.restarted,
                });
            }
        }
        out
    }

    /// Note how a wait for `server`'s diagnostics ended: `hit` is the cap
    /// it hit, None when it answered.
    pub fn waited(&self, server: &Arc<LanguageServer>, hit: Option<Duration>) {
        let mut slots = locked(&self.slots);
        let slot = slots
            .values_mut()
            .find(|s| s.server.as_ref().is_some_and(|x| Arc::ptr_eq(x, server)));
        if let Some(slot) = slot {
            slot.slow = hit;
        }
    }

    async fn server(&self, spec: &ServerSpec, root: &Path) -> Found {
        let _turn = self.starts.lock().await;
        let key = (spec.name.clone(), root.to_path_buf());
        let restarted = {
            let mut slots = locked(&self.slots);
            let slot = slots.entry(key.clone()).or_default();
            if slot.off.is_some() {
                return Found::None;
            }
            match &slot.server {
                Some(s) if s.is_alive() => {
                    return Found::Server {
                        server: s.clone(),
                        fresh: false,
                    };
                }
                Some(_) if slot.restarted => {
                    slot.off = Some(Off::CrashedTwice);
                    return Found::None;
                }
                Some(_) => {
                    slot.server = None;
                    slot.slow = None;
                    true
                }
                None => false,
            }
        };
        let started =
            LanguageServer::start(spec, root, &self.launch, self.settings.first_cap).await;
        let mut slots = locked(&self.slots);
        let slot = slots.entry(key).or_default();
        slot.restarted = restarted;
        match started {
            Ok(server) => {
                let server = Arc::new(server);
                slot.server = Some(server.clone());
                Found::Server {
                    server,
                    fresh: true,
                }
            }
            Err(e) => {
                let why = format!(
                    "the {} language server is off for this session: {e}",
                    spec.name
                );
                slot.off = Some(match e {
                    ServerError::NotFound(p) => Off::Missing(p),
                    e => Off::Failed(e.to_string()),
                });
                match locked(&self.said).insert(spec.name.clone()) {
                    true => Found::Failed(why),
                    false => Found::None,
                }
            }
        }
    }

    /// Stop every server.
    pub async fn shutdown(&self) {
        let servers: Vec<Arc<LanguageServer>> = {
            let mut slots = locked(&self.slots);
            let all = slots.values_mut().filter_map(|s| s.server.take()).collect();
            slots.clear();
            all
        };
        for server in servers {
            if let Ok(server) = Arc::try_unwrap(server) {
                server.shutdown().await;
            }
        }
    }
}

impl Slot {
    fn state(&self) -> ServerState {
        match (&self.off, &self.server) {
            (Some(Off::Missing(program)), _) => ServerState::Missing {
                program: program.clone(),
            },
            (Some(Off::Failed(why)), _) => ServerState::Off { why: why.clone() },
            (Some(Off::CrashedTwice), _) => ServerState::Off {
                why: "it crashed again after its restart".to_string(),
            },
            (None, None) => ServerState::Starting,
            (None, Some(s)) if !s.is_alive() && self.restarted => ServerState::Off {
                why: "it crashed again after its restart".to_string(),
            },
            (None, Some(s)) if !s.is_alive() => ServerState::Crashed,
            (None, Some(_)) => match self.slow {
                Some(cap) => ServerState::Slow { cap },
                None => ServerState::Ready,
            },
        }
    }
}
