//! `rein mcp serve`: rein as an MCP server over stdio, so another agent or
//! an editor can hand it a task as a tool call.
//!
//! Two tools:
//! - `rein` (`prompt`, and optional `cwd` inside the folder the server
//!   was started for, `mode`, `model`, `session_id` to continue one): runs
//!   rein on the prompt exactly as `rein exec` does (the same setup, the
//!   same config and flags; approvals follow the mode, and what a
//!   headless run refuses is refused and said in the result), and returns
//!   the final answer; while it runs, each event is a progress
//!   notification when the call asked for them; `notifications/cancelled`
//!   stops it;
//! - `rein_result` (`session_id`): the final answer of a run this server
//!   made.
//!
//! Standard output is the protocol's; the runs' progress lines go to
//! standard error.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, JsonObject, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ServerCapabilities, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::cli::{ExecArgs, McpServeArgs, SessionArgs};
use crate::exit::Failure;

/// `rein mcp serve`.
pub async fn run(args: McpServeArgs) -> Result<i32, Failure> {
    let root = crate::setup::workspace::session_workspace(args.workspace.as_deref())?;
    let server = ReinServer {
        root,
        args: Arc::new(args),
        results: Arc::new(Mutex::new(HashMap::new())),
    };
    let service = server.serve(rmcp::transport::stdio()).await.map_err(|e| {
        Failure::usage(anyhow::anyhow!(
            "the MCP client did not start a session: {e}"
        ))
    })?;
    let _ = service.waiting().await;
    Ok(crate::exit::COMPLETED)
}

/// The server: its folder, the flags every run gets, the answers so far.
#[derive(Clone)]
struct ReinServer {
    root: PathBuf,
    args: Arc<McpServeArgs>,
    results: Arc<Mutex<HashMap<String, Ran>>>,
}

/// How a run ended, for `rein_result`.
#[derive(Debug, Clone)]
struct Ran {
    answer: String,
    reason: rein_core::StopReason,
    exit_code: i32,
}

/// The `rein` tool's arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunArgs {
    prompt: String,
    cwd: Option<String>,
    mode: Option<String>,
    model: Option<String>,
    session_id: Option<String>,
}

fn tools() -> Vec<Tool> {
    let schema =
        |v: Value| -> Arc<JsonObject> { Arc::new(v.as_object().cloned().unwrap_or_default()) };
    vec![
        Tool::new(
            "rein",
            "Run the rein coding agent on a task in this project and return its final answer. \
             It reads, edits and runs commands in its sandbox under its permission mode.",
            schema(json!({
                "type": "object",
                "properties": {
                    "prompt": {"type": "string", "description": "The task."},
                    "cwd": {"type": "string", "description": "A folder inside the project to work in (default: the project)."},
                    "mode": {"type": "string", "enum": ["default", "accept-edits", "plan", "auto"], "description": "Permission mode (default: the config's)."},
                    "model": {"type": "string", "description": "The model (default: the config's)."},
                    "session_id": {"type": "string", "description": "Continue this session."}
                },
                "required": ["prompt"],
                "additionalProperties": false
            })),
        ),
        Tool::new(
            "rein_result",
            "The final answer, stop reason and exit code of a run this server made.",
            schema(json!({
                "type": "object",
                "properties": {"session_id": {"type": "string"}},
                "required": ["session_id"],
                "additionalProperties": false
            })),
        ),
    ]
}

impl ServerHandler for ReinServer {
    fn get_info(&self) -> InitializeResult {
        let mut info = InitializeResult::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("rein", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(
            "`rein` runs the rein coding agent on a task in this project; `rein_result` reads \
             a finished run's answer."
                .into(),
        );
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        let result = match request.name.as_ref() {
            "rein" => match serde_json::from_value::<RunArgs>(args) {
                Ok(run) => self.run_task(run, context).await,
                Err(e) => tool_error(format!("bad arguments for `rein`: {e}")),
            },
            "rein_result" => self.result(&args),
            other => {
                return Err(McpError::invalid_params(
                    format!("no tool named `{other}`"),
                    None,
                ));
            }
        };
        Ok(result.into())
    }
}

impl ReinServer {
    async fn run_task(&self, run: RunArgs, context: RequestContext<RoleServer>) -> CallToolResult {
        let workspace = match self.cwd(run.cwd.as_deref()) {
            Ok(w) => w,
            Err(why) => return tool_error(why),
        };
        let mut models = self.args.models.clone();
        if run.model.is_some() {
            models.model = run.model;
        }
        let exec = ExecArgs {
            images: Vec::new(),
            prompt: vec![run.prompt],
            command: None,
            input_format: None,
            json: false,
            session: SessionArgs {
                resume: run.session_id,
                mode: run.mode,
                ..SessionArgs::default()
            },
            budget: self.args.budget.clone(),
            models,
            workspace: Some(workspace),
            trust: self.args.trust,
            otel: Default::default(),
            output_schema: None,
            output_last_message: None,
            keep_answer: true,
            cancel: Some(context.ct.clone()),
            tap: progress_tap(&context),
        };
        match crate::exec::run_task(exec).await {
            Ok((code, outcome)) => {
                let ran = Ran {
                    answer: outcome.final_text.clone(),
                    reason: outcome.reason,
                    exit_code: code,
                };
                if let Some(id) = &outcome.session_id
                    && let Ok(mut r) = self.results.lock()
                {
                    r.insert(id.clone(), ran.clone());
                }
                finished(outcome.session_id.as_deref(), &ran, &outcome)
            }
            Err(failure) => tool_error(format!("{:#}", failure.error)),
        }
    }

    /// The run's folder: `cwd` inside the server's folder, or the folder.
    fn cwd(&self, cwd: Option<&str>) -> Result<PathBuf, String> {
        let Some(cwd) = cwd else {
            return Ok(self.root.clone());
        };
        let joined = self.root.join(cwd);
        let real = std::fs::canonicalize(&joined).map_err(|e| format!("cwd `{cwd}`: {e}"))?;
        if !real.starts_with(&self.root) || !real.is_dir() {
            return Err(format!(
                "cwd `{cwd}` is not a folder inside {}",
                self.root.display()
            ));
        }
        Ok(real)
    }

    fn result(&self, args: &Value) -> CallToolResult {
        let Some(id) = args.get("session_id").and_then(Value::as_str) else {
            return tool_error("`session_id` is required".into());
        };
        let found = self.results.lock().ok().and_then(|r| r.get(id).cloned());
        match found {
            Some(ran) => CallToolResult::success(vec![ContentBlock::text(
                json!({"session_id": id, "answer": ran.answer, "stop_reason": ran.reason,
                       "exit_code": ran.exit_code})
                .to_string(),
            )]),
            None => tool_error(format!("no run of this server has the session `{id}`")),
        }
    }
}

/// The result of a finished run: its answer, and what else happened.
fn finished(id: Option<&str>, ran: &Ran, outcome: &rein_core::RunOutcome) -> CallToolResult {
    let mut text = ran.answer.trim().to_string();
    for refused in &outcome.refused {
        text.push_str(&format!(
            "\n[refused: {} ({}): {}]",
            refused.tool, refused.summary, refused.why
        ));
    }
    if ran.reason != rein_core::StopReason::Completed {
        text.push_str(&format!(
            "\n[the run stopped: {} (exit code {})]",
            ran.reason.as_str(),
            ran.exit_code
        ));
    }
    if let Some(id) = id {
        text.push_str(&format!("\n[session {id}]"));
    }
    let block = vec![ContentBlock::text(text)];
    if ran.reason == rein_core::StopReason::Completed {
        CallToolResult::success(block)
    } else {
        CallToolResult::error(block)
    }
}

fn tool_error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// Each event of the run as a progress notification, when the call asked
/// for them (it sent a progress token).
fn progress_tap(context: &RequestContext<RoleServer>) -> Option<crate::cli::EventTap> {
    let token = context.meta.get_progress_token()?;
    let peer = context.peer.clone();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        let mut n = 0.0;
        while let Some(line) = rx.recv().await {
            n += 1.0;
            let note = ProgressNotificationParam::new(token.clone(), n).with_message(line);
            if peer.notify_progress(note).await.is_err() {
                break;
            }
        }
    });
    Some(crate::cli::EventTap(Arc::new(
        move |event: &rein_core::Event| {
            if let Some(line) = progress_line(event) {
                let _ = tx.send(line);
            }
        },
    )))
}

/// What an event says as a progress line (None: nothing worth a line).
fn progress_line(event: &rein_core::Event) -> Option<String> {
    use rein_core::Event;
    match event {
        Event::TurnStarted { turn } => Some(format!("turn {turn}")),
        Event::ToolStarted {
            name, arguments, ..
        } => Some(format!(
            "{name} {}",
            rein_core::text::preview(&rein_tui::summary::call_summary(name, arguments), 1, 200)
        )),
        Event::PermissionDenied { tool, why, .. } => Some(format!("refused {tool}: {why}")),
        Event::Notice { message } => Some(message.clone()),
        _ => None,
    }
}
