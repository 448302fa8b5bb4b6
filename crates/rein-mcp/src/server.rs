//! One configured server over a run's life: connected (a child process
//! started or a URL reached, the MCP handshake made, its tool list read), its list read again when
//! it says the list changed, started again once if it dies; calls go
//! through whichever connection is current.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rein_core::host_process::ProcessGroup;
use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RunningService, ServiceError};
use serde::Serialize;
use tokio::sync::watch;

use crate::client::Client;
use crate::config::{McpServerConfig, McpTransport};
use crate::error::McpError;
use crate::stderr::StderrTail;
use crate::tool::McpTool;

/// What every server of a run starts from.
#[derive(Debug, Clone, Default)]
pub struct Launch {
    /// The project: given to servers as `REIN_PROJECT_DIR` and
    /// `CLAUDE_PROJECT_DIR` (and `${…}` of those in their settings), and
    /// the folder a relative `cwd` is taken from. Servers do not run in it.
    pub workspace: PathBuf,
    /// Names of rein's variables servers get besides the allowlist of
    /// [`rein_core::host_process::env`] (never rein's keys unless named);
    /// each server's own `env` goes on top.
    pub env_allow: Vec<String>,
    /// Where each server's stderr is written (`NAME.log`); without one it
    /// is only kept in memory, its last lines quoted in errors.
    pub log_dir: Option<PathBuf>,
    /// Where OAuth tokens of remote servers are kept (`rein mcp login`);
    /// without one, remote servers get only their static headers.
    pub auth_dir: Option<PathBuf>,
    /// Opens the page of a step-up sign-in during a run; without one, a
    /// server that wants more scope is told to `rein mcp login`.
    pub browser: Option<crate::stepup::BrowserHandle>,
    /// Who answers servers' forms, once a front end that can ask a person
    /// installs one ([`crate::McpHub::set_asker`]).
    pub asker: crate::elicit::AskerSlot,
}

/// Where a server is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerStatus {
    /// Started, the handshake or the tool list not done yet (a second
    /// time when the first did not finish in time: then with an error).
    Starting,
    /// Its tools are offered.
    Ready,
    /// It could not start, or died twice: its tools are not offered.
    Failed,
}

/// A server's status as `rein mcp list` and `/mcp` show it.
#[derive(Debug, Clone, Serialize)]
pub struct ServerReport {
    pub server: String,
    pub status: ServerStatus,
    /// Its tools, as the model calls them.
    pub tools: Vec<String>,
    /// Why it failed, the last error of a call, or (while it is starting
    /// once more) why its first start failed.
    pub error: Option<String>,
    /// Times it was started again after it died (at most one).
    pub restarts: u32,
    /// Its stderr log, when it has one.
    pub log: Option<PathBuf>,
}

/// A live connection: the MCP session over the child's stdio or HTTP.
pub(crate) struct Connection {
    pub(crate) service: RunningService<RoleClient, Client>,
    /// The child's stderr (empty for a remote server).
    pub(crate) stderr: StderrTail,
    /// A local server's process group: whatever the server started dies
    /// with the connection.
    pub(crate) _group: Option<ProcessGroup>,
}

impl Connection {
    fn closed(&self) -> bool {
        self.service.is_closed() || self.service.is_transport_closed()
    }
}

struct State {
    status: ServerStatus,
    /// The tools this configuration offers, as the server describes them.
    listed: Vec<rmcp::model::Tool>,
    error: Option<String>,
    restarts: u32,
    /// Step-up sign-ins made in this run.
    step_ups: u32,
    conn: Option<Arc<Connection>>,
}

/// A configured server.
pub struct McpServer {
    config: McpServerConfig,
    /// The `SERVER` of `mcp__SERVER__TOOL`: unique among the run's servers.
    prefix: String,
    launch: Arc<Launch>,
    state: Mutex<State>,
    /// Held while connecting, so calls racing on a dead server start it
    /// again once.
    connecting: tokio::sync::Mutex<()>,
    /// False while the server is starting.
    settled: watch::Sender<bool>,
    /// Bumped whenever the run's set of MCP tools changes.
    changed: Arc<watch::Sender<u64>>,
}

impl McpServer {
    pub(crate) fn new(
        config: McpServerConfig,
        prefix: String,
        launch: Arc<Launch>,
        changed: Arc<watch::Sender<u64>>,
    ) -> Arc<McpServer> {
        Arc::new(McpServer {
            config,
            prefix,
            launch,
            state: Mutex::new(State {
                status: ServerStatus::Starting,
                listed: Vec::new(),
                error: None,
                restarts: 0,
                step_ups: 0,
                conn: None,
            }),
            connecting: tokio::sync::Mutex::new(()),
            settled: watch::Sender::new(false),
            changed,
        })
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Start the server and read its tools; one that did not start in
    /// time is started once more with twice the time (the first start of
    /// an `npx` server may spend its time downloading, and a download cut
    /// short may have to start over), its error showing meanwhile.
    /// Whatever happens, the server is settled afterwards and the hub
    /// told.
    pub(crate) async fn start(self: Arc<Self>) {
        let started = {
            let _one = self.connecting.lock().await;
            let timeout = self.config.startup_timeout();
            match self.connect_and_list(timeout).await {
                Err(e @ McpError::StartupTimeout { .. }) => {
                    self.state().error = Some(e.to_string());
                    self.changed.send_modify(|n| *n += 1);
                    match self.connect_and_list(timeout * 2).await {
                        Err(McpError::StartupTimeout { server, .. }) => {
                            Err(McpError::StartupTimeout {
                                server,
                                secs: timeout.as_secs(),
                                again: true,
                            })
                        }
                        again => again,
                    }
                }
                started => started,
            }
        };
        match started {
            Ok(()) => self.state().error = None,
            Err(e) => self.fail(e.to_string()),
        }
        self.settled.send_replace(true);
    }

    /// Wait until the server has started or failed.
    pub(crate) async fn settled(&self) {
        let mut rx = self.settled.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }

    pub(crate) fn status(&self) -> ServerStatus {
        self.state().status
    }

    /// Its tools, named for the model (in the server's order; a name that
    /// would repeat one gets a number).
    pub(crate) fn tools(self: &Arc<Self>) -> Vec<McpTool> {
        let listed = {
            let state = self.state();
            if state.status != ServerStatus::Ready {
                return Vec::new();
            }
            state.listed.clone()
        };
        let mut taken = Vec::new();
        listed
            .iter()
            .map(|t| {
                let tool = McpTool::new(self.clone(), t, &taken);
                taken.push(tool.exposed().to_string());
                tool
            })
            .collect()
    }

    pub(crate) fn report(self: &Arc<Self>) -> ServerReport {
        let tools = self
            .tools()
            .iter()
            .map(|t| t.exposed().to_string())
            .collect();
        let state = self.state();
        ServerReport {
            server: self.config.name.clone(),
            status: state.status,
            tools,
            error: state.error.clone(),
            restarts: state.restarts,
            log: self.log_path(),
        }
    }

    pub(crate) fn log_path(&self) -> Option<PathBuf> {
        let dir = self.launch.log_dir.as_ref()?;
        Some(dir.join(format!("{}.log", self.prefix)))
    }

    fn fail(&self, error: String) {
        {
            let mut state = self.state();
            state.status = ServerStatus::Failed;
            state.listed.clear();
            state.error = Some(error);
            state.conn = None;
        }
        self.changed.send_modify(|n| *n += 1);
    }

    /// Start the child, make the handshake and read the tool list, each
    /// within `timeout`; the new connection becomes current.
    async fn connect_and_list(self: &Arc<Self>, timeout: Duration) -> Result<(), McpError> {
        let timed_out = || McpError::StartupTimeout {
            server: self.config.name.clone(),
            secs: timeout.as_secs(),
            again: false,
        };
        let conn = tokio::time::timeout(timeout, self.connect())
            .await
            .map_err(|_| timed_out())??;
        let listed = tokio::time::timeout(timeout, self.list(&conn))
            .await
            .map_err(|_| timed_out())??;
        {
            let mut state = self.state();
            state.status = ServerStatus::Ready;
            state.listed = listed;
            state.conn = Some(Arc::new(conn));
        }
        self.changed.send_modify(|n| *n += 1);
        Ok(())
    }

    /// Make the connection: start the child, or reach the URL.
    async fn connect(self: &Arc<Self>) -> Result<Connection, McpError> {
        let client = Client::new(Arc::downgrade(self));
        match &self.config.transport {
            McpTransport::Stdio { .. } => crate::connect::stdio(self, client).await,
            McpTransport::Http { .. } => crate::connect::http(self, client).await,
        }
    }

    pub(crate) fn launch(&self) -> &Launch {
        &self.launch
    }

    /// Count a step-up sign-in; false when the run's are used up.
    pub(crate) fn count_step_up(&self) -> bool {
        let mut state = self.state();
        if state.step_ups >= crate::stepup::MAX_STEP_UPS {
            return false;
        }
        state.step_ups += 1;
        true
    }

    /// The server's tools this configuration offers (after a step-up to
    /// the scope listing them needs, when it says so).
    async fn list(self: &Arc<Self>, conn: &Connection) -> Result<Vec<rmcp::model::Tool>, McpError> {
        let mut listed = conn.service.list_all_tools().await;
        while let Err(e) = &listed {
            match self.step_up(e).await {
                Some(Ok(())) => listed = conn.service.list_all_tools().await,
                Some(Err(why)) => return Err(why),
                None => break,
            }
        }
        let listed = listed.map_err(|e| {
            self.protocol(format!(
                "listing its tools failed: {e}{}",
                conn.stderr.quoted()
            ))
        })?;
        Ok(listed
            .into_iter()
            .filter(|t| self.config.offers(&t.name))
            .collect())
    }

    /// Read the tool list again (the server said it changed); the run's
    /// tools follow from the next turn.
    pub(crate) async fn relist(self: &Arc<Self>) {
        let Some(conn) = self.state().conn.clone() else {
            return;
        };
        let listed = tokio::time::timeout(self.config.startup_timeout(), self.list(&conn)).await;
        let mut state = self.state();
        match listed {
            Ok(Ok(listed)) => state.listed = listed,
            Ok(Err(e)) => state.error = Some(e.to_string()),
            Err(_) => state.error = Some("reading its changed tool list timed out".into()),
        }
        drop(state);
        self.changed.send_modify(|n| *n += 1);
    }

    /// Call the server's tool `name`. A server found dead is started again
    /// first (once in a run); one that dies during the call is started
    /// again for the next call, and this call fails saying so (it may have
    /// had its effect: it is not repeated).
    pub(crate) async fn call(
        self: &Arc<Self>,
        name: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<CallToolResult, McpError> {
        let conn = self.live().await?;
        let params = CallToolRequestParams::new(name.to_string()).with_arguments(arguments);
        let mut called = conn.service.call_tool(params.clone()).await;
        // A refusal for want of scope: signed in again for it, sent again.
        while let Err(e) = &called {
            match self.step_up(e).await {
                Some(Ok(())) => called = conn.service.call_tool(params.clone()).await,
                Some(Err(why)) => return Err(why),
                None => break,
            }
        }
        match called {
            Ok(result) => Ok(result),
            Err(e) => {
                let mut message = format!("calling `{name}` failed: {e}{}", conn.stderr.quoted());
                let died = matches!(e, ServiceError::TransportClosed) || conn.closed();
                if died {
                    message.push_str(&self.after_death(conn));
                }
                self.state().error = Some(message.clone());
                Err(self.protocol(message))
            }
        }
    }

    /// What to say of a server that died during a call: it is started
    /// again in the background (not within this call's time), once.
    fn after_death(self: &Arc<Self>, dead: Arc<Connection>) -> String {
        if self.state().restarts >= 1 {
            let why = "it stopped again and is not restarted a second time";
            self.fail(why.into());
            return format!("; {why}");
        }
        let server = self.clone();
        tokio::spawn(async move { server.restart(&dead).await });
        "; the server stopped during the call (the call was not repeated) and is being \
         started again"
            .to_string()
    }

    /// The current connection, started again first if the server died.
    pub(crate) async fn live(self: &Arc<Self>) -> Result<Arc<Connection>, McpError> {
        let current = {
            let state = self.state();
            match (&state.conn, state.status) {
                (Some(conn), _) => conn.clone(),
                (None, ServerStatus::Starting) => {
                    return Err(self.protocol("it is still starting".into()));
                }
                (None, _) => {
                    let why = state
                        .error
                        .clone()
                        .unwrap_or_else(|| "it is not running".into());
                    return Err(self.protocol(why));
                }
            }
        };
        if !current.closed() {
            return Ok(current);
        }
        self.restart(&current).await?;
        self.state()
            .conn
            .clone()
            .ok_or_else(|| self.protocol("it is not running".into()))
    }

    /// Start the server again after `dead` died, once in a run; calls that
    /// race here restart it once between them.
    async fn restart(self: &Arc<Self>, dead: &Arc<Connection>) -> Result<(), McpError> {
        let _one = self.connecting.lock().await;
        {
            let mut state = self.state();
            match &state.conn {
                // Another call restarted it already.
                Some(c) if !Arc::ptr_eq(c, dead) => return Ok(()),
                None => return Err(self.protocol("it is not running".into())),
                Some(_) => {}
            }
            if state.restarts >= 1 {
                drop(state);
                let why = "it stopped again and is not restarted a second time";
                self.fail(why.into());
                return Err(self.protocol(why.into()));
            }
            state.restarts += 1;
        }
        if let Err(e) = self.connect_and_list(self.config.startup_timeout()).await {
            let why = format!("it stopped and starting it again failed: {e}");
            self.fail(why.clone());
            return Err(self.protocol(why));
        }
        Ok(())
    }

    pub(crate) fn protocol(&self, message: String) -> McpError {
        McpError::Protocol {
            server: self.config.name.clone(),
            message,
        }
    }
}
