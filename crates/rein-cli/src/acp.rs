//! `rein acp`: rein as an Agent Client Protocol agent on stdin and
//! stdout, for editors (Zed, JetBrains, Neovim) that drive agents.
//!
//! Each request is served here and by the modules below:
//! - `initialize`: rein's capabilities (sessions can be loaded, prompts
//!   may embed files, MCP servers over stdio and HTTP); the client's are
//!   kept: when it offers its file system, the file tools read and write
//!   the editor's buffers ([`client_fs`]); when it offers its terminal,
//!   bash commands run in one, still in rein's sandbox
//!   ([`client_terminal`], and [`initialize`] for how).
//! - `session/new` and `session/load` ([`agent`]): a stored rein session
//!   in the client's folder with an engine of its own; a load first
//!   replays the stored conversation ([`transcript`]).
//! - `session/prompt` ([`session`]): one run, its events streamed as
//!   `session/update`s ([`updates`]), approvals asked with
//!   `session/request_permission` ([`permission`]).
//! - `session/cancel` stops the running prompt; `session/set_mode`
//!   switches rein's permission mode.
//!
//! stdout carries the protocol only: notes go to stderr.

mod agent;
mod client_fs;
mod client_terminal;
mod elicit;
mod mcp;
mod permission;
mod session;
mod transcript;
mod updates;

use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, Implementation, InitializeRequest, InitializeResponse,
    LoadSessionRequest, LoadSessionResponse, McpCapabilities, NewSessionRequest,
    NewSessionResponse, PromptCapabilities, PromptRequest, PromptResponse, SessionNotification,
    SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::{Agent, Client, Responder, Stdio, V1};
use anyhow::anyhow;

use crate::cli::AcpArgs;
use crate::exit::{self, Failure};
use agent::{AcpAgent, Target};

/// Serve one client on stdin and stdout until it closes them.
pub async fn run(args: AcpArgs) -> Result<i32, Failure> {
    let mode = crate::setup::settings::parse_mode(args.mode.as_deref())?;
    // The store is the rein home's (or REIN_STORE's): one for every
    // workspace a client opens.
    let here = crate::setup::workspace::resolve_workspace(None)?;
    let (cfg, _) = crate::setup::settings::load_config(&here, args.models.clone(), false)?;
    let (store, _) = crate::setup::store::open_store(&cfg, 4).await?;
    // Each prompt's run is a trace (export failures on stderr, which
    // editors log); the rest is sent when the client goes.
    let telemetry = crate::otel::start(args.otel)?;
    let host = crate::hosting::Host::new(args.models, mode, store, cfg.store.clone())
        .observed(telemetry.as_ref().map(|t| t.observers()));
    let agent = Arc::new(AcpAgent::new(host));
    let served = serve(agent).await;
    crate::otel::finish(telemetry).await;
    served.map_err(|e| Failure::harness(anyhow!("the ACP connection failed: {e}")))?;
    Ok(exit::COMPLETED)
}

/// The connection: one handler per method.
async fn serve(agent: Arc<AcpAgent>) -> Result<(), agent_client_protocol::Error> {
    let (on_init, on_new, on_load, on_prompt, on_mode, on_cancel) = (
        agent.clone(),
        agent.clone(),
        agent.clone(),
        agent.clone(),
        agent.clone(),
        agent,
    );
    Agent
        .v1()
        .name("rein")
        .on_receive_request(
            async move |request: InitializeRequest,
                        responder: Responder<InitializeResponse, V1>,
                        _client: ConnectionTo<Client>| {
                on_init.set_client(request.client_capabilities.clone());
                responder.respond(initialize(&request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest,
                        responder: Responder<NewSessionResponse, V1>,
                        client: ConnectionTo<Client>| {
                let opened = on_new
                    .open(&request.cwd, &request.mcp_servers, Target::New, &client)
                    .await;
                match opened {
                    Ok(session) => {
                        let response =
                            NewSessionResponse::new(session.id.clone()).modes(session.modes());
                        responder.respond(response)?;
                        client.send_notification(SessionNotification::new(
                            session.id.clone(),
                            session.commands_update(),
                        ))
                    }
                    Err(e) => responder.respond_with_error(e),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest,
                        responder: Responder<LoadSessionResponse, V1>,
                        client: ConnectionTo<Client>| {
                load_session(&on_load, request, responder, client).await
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest,
                        responder: Responder<PromptResponse, V1>,
                        client: ConnectionTo<Client>| {
                let turn = on_prompt
                    .session(&request.session_id.0)
                    .and_then(|s| s.begin(&request.prompt));
                let turn = match turn {
                    Ok(t) => t,
                    Err(e) => return responder.respond_with_error(e),
                };
                // The run goes on beside the connection, which keeps
                // reading (cancels, permission answers, other sessions).
                tokio::spawn(async move {
                    let result = match turn.run(&client).await {
                        Ok(stop) => responder.respond(PromptResponse::new(stop)),
                        Err(e) => responder.respond_with_error(e),
                    };
                    if let Err(e) = result {
                        crate::output::err(&format!("rein acp: cannot answer a prompt: {e}"));
                    }
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest,
                        responder: Responder<SetSessionModeResponse, V1>,
                        _client: ConnectionTo<Client>| {
                let set = on_mode
                    .session(&request.session_id.0)
                    .and_then(|s| s.set_mode(&request.mode_id.0));
                match set {
                    Ok(()) => responder.respond(SetSessionModeResponse::new()),
                    Err(e) => responder.respond_with_error(e),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notice: CancelNotification, _client: ConnectionTo<Client>| {
                if let Ok(session) = on_cancel.session(&notice.session_id.0) {
                    session.cancel();
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(Stdio::new())
        .await
}

/// `session/load`: the stored conversation replayed as updates, then the
/// answer, then the commands menu.
async fn load_session(
    agent: &AcpAgent,
    request: LoadSessionRequest,
    responder: Responder<LoadSessionResponse, V1>,
    client: ConnectionTo<Client>,
) -> Result<(), agent_client_protocol::Error> {
    let id = request.session_id.0.to_string();
    let opened = agent
        .open(
            &request.cwd,
            &request.mcp_servers,
            Target::Load(&id),
            &client,
        )
        .await;
    let session = match opened {
        Ok(s) => s,
        Err(e) => return responder.respond_with_error(e),
    };
    // The conversation is replayed before the answer, as the
    // protocol asks.
    let updates = match session.replay().await {
        Ok(u) => u,
        Err(e) => return responder.respond_with_error(e),
    };
    for update in updates {
        client.send_notification(SessionNotification::new(id.clone(), update))?;
    }
    responder.respond(LoadSessionResponse::new().modes(session.modes()))?;
    client.send_notification(SessionNotification::new(
        id.clone(),
        session.commands_update(),
    ))
}

/// rein's side of the handshake.
///
/// A client's `terminal` is used for bash without giving up the sandbox,
/// which is not only an argv: Landlock, the rlimits and the cgroup are
/// applied inside the child before `exec`, and the environment is an
/// allowlist, while `terminal/create` spawns the process in the editor,
/// with the editor's environment (its API keys included). So the editor
/// is asked to run `rein sandbox-run` (this executable, the request's
/// `env` empty) with a private spec rein wrote: the sandbox, the policy
/// and the command's environment as rein computed them. The wrapper drops
/// the editor's environment first and sets the sandbox up inside, as the
/// bash tool does ([`client_terminal`], [`crate::sandbox_run`]). Without
/// a terminal (or when creating one fails), commands run as rein runs
/// them, and their output reaches the editor in the call's updates.
fn initialize(_request: &InitializeRequest) -> InitializeResponse {
    let capabilities = AgentCapabilities::new()
        .load_session(true)
        .prompt_capabilities(PromptCapabilities::new().embedded_context(true))
        .mcp_capabilities(McpCapabilities::new().http(true));
    InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(capabilities)
        .agent_info(Implementation::new("rein", env!("CARGO_PKG_VERSION")).title("rein"))
}
