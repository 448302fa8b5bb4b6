//! What a run starts from: the session (created, or loaded and repaired),
//! the policy of the gate, and the system prompt and tools a mode shows.

use std::collections::HashMap;
use std::sync::Mutex;

use super::state::{self, Opened};
use super::{AgentEngine, RunRequest, RunScope, title_of};
use crate::compaction;
use crate::context::{self, PromptFacts};
use crate::event::{Event, EventSink};
use crate::gate::{Gate, RunPolicy};
use crate::history::{Repaired, repair_history};
use crate::instructions::Instructions;
use crate::permission::PermissionMode;
use crate::profile::{self, Lever};
use crate::provider::ModelRequest;
use crate::request_size::{Fixed, Measured, RequestSize, SizeBasis, fixed_id, request_size};
use crate::schema::{Message, ToolSpec};
use crate::store::{NewSession, StoreError};
use crate::tokens::{CallKind, TokenCounter, count_message};

/// Tokens every request of a run carries besides the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FixedTokens {
    /// rein's own instructions (the system prompt without the project's).
    pub system_prompt: u64,
    /// The project's AGENTS.md and long-term memory, as sent.
    pub instructions: u64,
    /// The tool definitions: names, descriptions and schemas.
    pub tools: u64,
    /// How many tools are offered.
    pub tool_count: usize,
}

impl FixedTokens {
    pub fn total(&self) -> u64 {
        self.system_prompt + self.instructions + self.tools
    }
}

/// The next request of a session, part by part, and its size in the one
/// accounting.
#[derive(Debug, Clone)]
pub struct ContextSize {
    /// What every request carries besides the history (estimated).
    pub fixed: FixedTokens,
    /// The history the next request carries.
    pub messages: Vec<Message>,
    /// The whole request: the figure the status line and `token_update`
    /// show after a turn.
    pub next: RequestSize,
    /// The provider's count of this session's last request, when a run
    /// of this process made one.
    pub last_reported: Option<u64>,
}

/// The system prompt and tools a mode shows the model, and their size.
pub(super) struct FixedPart {
    pub system: String,
    pub tools: Vec<ToolSpec>,
    /// Tokens of the system prompt and the tools together.
    pub tokens: u64,
    /// Of which the tool definitions.
    pub tool_tokens: u64,
    pub chars: u64,
    /// The identity of the system prompt and tools
    /// ([`crate::request_size::fixed_id`]).
    pub id: u64,
}

/// What the system prompt is built from besides the mode and tools.
pub(super) struct PromptInputs {
    /// The AGENTS.md files (see [`crate::instructions`]); folders below
    /// the workspace add theirs as the run works there.
    pub instructions: Instructions,
    /// `YYYY-MM-DD`.
    pub date: String,
    /// The workspace's files, listed for a lean prompt.
    pub files: Option<String>,
}

/// A stored session loaded for the model.
pub(super) struct Loaded {
    pub id: String,
    /// The user's requests in the whole session, oldest first.
    pub earlier_requests: Vec<String>,
    pub repaired: Repaired,
    /// Store sequence numbers of the messages before the repair.
    pub seqs: Vec<Option<u64>>,
}

impl FixedPart {
    /// What the one accounting needs of it.
    pub fn as_fixed(&self) -> Fixed {
        Fixed {
            id: self.id,
            tokens: self.tokens,
        }
    }
}

/// Tokens of a fixed part (system prompt and tools), and of its tools.
pub(super) fn count_fixed(
    system: &str,
    tools: &[ToolSpec],
    counter: &dyn TokenCounter,
) -> (u64, u64) {
    let tool_tokens = tools
        .iter()
        .map(|t| {
            counter.count(&t.name)
                + counter.count(&t.description)
                + counter.count(&t.parameters.to_string())
        })
        .sum::<u64>();
    (counter.count(system) + tool_tokens, tool_tokens)
}

impl AgentEngine {
    /// The system prompt and tools a mode shows the model, and their size.
    pub(super) fn fixed_part(
        &self,
        gate: &Gate,
        mode: PermissionMode,
        inputs: &PromptInputs,
        counter: &dyn TokenCounter,
    ) -> FixedPart {
        let inner = &self.inner;
        let lean = inner.config.helps(Lever::Lean);
        let mut tools = gate.specs(mode);
        if lean {
            tools = tools.iter().map(profile::compact_spec).collect();
        }
        let mut system = context::system_prompt(&PromptFacts {
            workspace: &inner.workspace,
            date: &inputs.date,
            os: std::env::consts::OS,
            tools: &tools,
            plan: mode == PermissionMode::Plan,
            agents_md: Some(inputs.instructions.text.as_str()).filter(|t| !t.trim().is_empty()),
            lean,
            files: inputs.files.as_deref(),
        });
        if let Some(note) = &inner.config.system_note
            && !note.trim().is_empty()
        {
            system.push('\n');
            system.push_str(note.trim_end());
            system.push('\n');
        }
        let (tokens, tool_tokens) = count_fixed(&system, &tools, counter);
        let chars = (system.len()
            + tools
                .iter()
                .map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len())
                .sum::<usize>()) as u64;
        FixedPart {
            id: fixed_id(&system, &tools),
            system,
            tools,
            tokens,
            tool_tokens,
            chars,
        }
    }

    /// The permission state of a run: the session's earlier approvals
    /// come back from the store.
    pub(super) async fn run_policy(
        &self,
        session_id: &str,
        mode: PermissionMode,
        scope: &RunScope,
        sink: &mut dyn EventSink,
    ) -> Result<RunPolicy, StoreError> {
        let (granted, unreadable) = self.inner.store.grants(session_id).await?;
        if unreadable > 0 {
            sink.emit(Event::Notice {
                message: format!(
                    "ignoring {unreadable} stored approvals of this session that are not valid rules"
                ),
            });
        }
        let mut policy = self.fresh_policy(mode);
        *policy.granted.lock().unwrap_or_else(|p| p.into_inner()) = granted;
        policy.for_run = scope.allow.clone();
        policy.ask_for_run = scope.ask.clone();
        Ok(policy)
    }

    /// The permission state of a run with no earlier approvals.
    pub(super) fn fresh_policy(&self, mode: PermissionMode) -> RunPolicy {
        RunPolicy {
            mode,
            permissions: self.inner.permissions.clone(),
            granted: Mutex::new(Vec::new()),
            for_run: Vec::new(),
            ask_for_run: Vec::new(),
            approvals: self.inner.config.approvals.clone(),
            project_rules: self.inner.project_rules.clone(),
            agent_id: self.inner.agent.as_ref().map(|a| a.id.clone()),
        }
    }

    /// A new, empty session of this engine's workspace titled after
    /// `prompt`, for a front end that runs something for the user (a
    /// command's context lines) before the prompt's run, which then
    /// continues it. Its first run counts as a new session's, not a
    /// resumed one's.
    pub async fn start_session(&self, prompt: &str) -> Result<String, StoreError> {
        let info = self
            .inner
            .store
            .create_session(NewSession {
                workspace: self.inner.workspace.display().to_string(),
                title: title_of(prompt),
                model: self.provider().model().to_string(),
                parent_id: self
                    .inner
                    .agent
                    .as_ref()
                    .and_then(|a| a.parent_session.clone()),
            })
            .await?;
        Ok(info.id)
    }

    /// Create the session, or load and repair the one to resume: the
    /// model's view is the latest compaction's summary and what follows it.
    /// A session with no messages yet ([`AgentEngine::start_session`]'s)
    /// is not a resumed one, and takes its first prompt as its title when
    /// it has none.
    pub(super) async fn open_session(&self, request: &RunRequest) -> Result<Opened, StoreError> {
        let store = &self.inner.store;
        match &request.resume {
            None => {
                let id = self.start_session(&request.prompt).await?;
                Ok(Opened {
                    id,
                    messages: Vec::new(),
                    seqs: Vec::new(),
                    resumed: false,
                    earlier_requests: Vec::new(),
                })
            }
            Some(id) => {
                let Loaded {
                    id,
                    earlier_requests,
                    repaired,
                    seqs,
                } = self.load_session(id).await?;
                // Results made up for the last message's dangling calls are
                // stored too, so the transcript says what happened (earlier
                // ones are rebuilt the same way on every load).
                let last_assistant = repaired
                    .messages
                    .iter()
                    .rposition(|m| matches!(m, Message::Assistant(_)))
                    .unwrap_or(0);
                let mut seq_of: HashMap<usize, u64> = HashMap::new();
                for (index, result) in &repaired.added {
                    if *index > last_assistant {
                        let seq = store
                            .append_message(&id, &Message::Tool(result.clone()))
                            .await?;
                        seq_of.insert(*index, seq);
                    }
                }
                let repaired_seqs = state::realign_seqs(&repaired, seqs, &seq_of);
                store.set_model(&id, self.provider().model()).await?;
                let resumed = !repaired.messages.is_empty();
                // A session made empty beforehand (a command's calls, an
                // editor's or a client's new session) with no title yet
                // is named by its first prompt, as a new one is.
                if !resumed
                    && !request.prompt.is_empty()
                    && store.get_session(&id).await?.title.is_empty()
                {
                    store.set_title(&id, &title_of(&request.prompt)).await?;
                }
                Ok(Opened {
                    id,
                    messages: repaired.messages,
                    seqs: repaired_seqs,
                    resumed,
                    earlier_requests,
                })
            }
        }
    }

    /// What the model is sent of a stored session now: the latest
    /// compaction's summary and the messages after it, repaired.
    pub async fn model_messages(&self, session_id: &str) -> Result<Vec<Message>, StoreError> {
        Ok(self.load_session(session_id).await?.repaired.messages)
    }

    /// Tokens of what every request of a run in `mode` carries besides the
    /// history, part by part.
    pub fn fixed_tokens(&self, mode: PermissionMode) -> FixedTokens {
        let inputs = self.prompt_inputs();
        let counter = self.token_counter();
        let fixed = self.fixed_part(&self.gate(), mode, &inputs, counter.as_ref());
        self.fixed_tokens_of(&fixed, &inputs, counter.as_ref())
    }

    /// The size of the next request of `session_id` (or of a new
    /// session) in `mode`, in the one accounting ([`request_size`]): what
    /// `/context` and `rein context` show.
    pub async fn context_size(
        &self,
        session_id: Option<&str>,
        mode: PermissionMode,
    ) -> Result<ContextSize, StoreError> {
        let messages = match session_id {
            Some(id) => self.model_messages(id).await?,
            None => Vec::new(),
        };
        let inputs = self.prompt_inputs();
        let counter = self.token_counter();
        let part = self.fixed_part(&self.gate(), mode, &inputs, counter.as_ref());
        let fixed = self.fixed_tokens_of(&part, &inputs, counter.as_ref());
        let mut measured = session_id.and_then(|id| self.inner.sizes.get(id));
        if measured.is_none()
            && let Some(id) = session_id
        {
            measured = self.last_turn_report(id, &messages, part.id).await;
        }
        let fixed_part = part.as_fixed();
        let request = ModelRequest {
            temperature: None,
            system: part.system,
            messages,
            tools: part.tools,
            max_output_tokens: None,
            tool_choice: Default::default(),
            single_tool_call: self.inner.config.helps(Lever::SingleCall),
            answer_schema: None,
        };
        let next = match self.provider().count_request(&request) {
            Some(tokens) => RequestSize {
                tokens,
                basis: SizeBasis::Counted,
            },
            None => {
                let history = request
                    .messages
                    .iter()
                    .map(|m| count_message(counter.as_ref(), m))
                    .sum();
                request_size(
                    measured.as_ref(),
                    fixed_part,
                    &request.messages,
                    history,
                    counter.as_ref(),
                )
            }
        };
        Ok(ContextSize {
            fixed,
            messages: request.messages,
            next,
            last_reported: measured.map(|m| m.input()),
        })
    }

    /// A report of a session no run of this process measured (a resumed
    /// one), from its ledger: the last model call, when it was a turn,
    /// read the history up to the last answer. Taken to be with the
    /// current system prompt and tools.
    async fn last_turn_report(
        &self,
        session_id: &str,
        messages: &[Message],
        fixed_id: u64,
    ) -> Option<Measured> {
        let (entries, _) = self.inner.store.ledger(session_id).await.ok()?;
        let last = entries
            .iter()
            .rev()
            .find(|e| !matches!(e.kind, CallKind::Title | CallKind::Subagent))?;
        if last.kind != CallKind::Turn || !last.ok || last.usage.input_tokens == 0 {
            return None;
        }
        let answer = messages
            .iter()
            .rposition(|m| matches!(m, Message::Assistant(_)))?;
        Some(Measured::new(
            last.usage.input_tokens,
            fixed_id,
            &messages[..answer],
        ))
    }

    /// The parts of a fixed part, counted.
    fn fixed_tokens_of(
        &self,
        fixed: &FixedPart,
        inputs: &PromptInputs,
        counter: &dyn TokenCounter,
    ) -> FixedTokens {
        let count = |text: Option<&str>| text.map_or(0, |t| counter.count(t));
        let instructions = count(Some(&inputs.instructions.text))
            + count(self.inner.config.system_note.as_deref());
        let tools = fixed.tool_tokens;
        FixedTokens {
            system_prompt: fixed
                .tokens
                .saturating_sub(tools)
                .saturating_sub(instructions),
            instructions,
            tools,
            tool_count: fixed.tools.len(),
        }
    }

    /// The instructions a run starting now would take in: the user's
    /// global file and the project's, within the cap (`rein context` and
    /// `/context` show them).
    pub fn instructions(&self) -> Instructions {
        let config = &self.inner.config;
        Instructions::load(
            config.global_instructions.as_deref(),
            &self.inner.workspace,
            config.instructions_cap,
        )
    }

    /// What the system prompt is built from, read once per run: the
    /// project's AGENTS.md files, today's date, and (lean prompts) the
    /// workspace's files.
    pub(super) fn prompt_inputs(&self) -> PromptInputs {
        let workspace = &self.inner.workspace;
        PromptInputs {
            instructions: self.instructions(),
            date: crate::time::format_date(crate::time::now_millis()),
            // Listed for the lean prompt, and to know whether there is
            // anything to look at before a first call is required.
            files: (self.inner.config.helps(Lever::Lean)
                || self.inner.config.helps(Lever::FirstCall))
            .then(|| context::list_files(workspace))
            .flatten(),
        }
    }

    /// A stored session as the model sees it (from its latest compaction
    /// on), with dangling tool calls repaired, and the user's requests.
    pub(super) async fn load_session(&self, id: &str) -> Result<Loaded, StoreError> {
        let store = &self.inner.store;
        let info = store.get_session(id).await?;
        let stored = store.messages(&info.id).await?;
        let earlier_requests = compaction::user_requests(&stored);
        let (view, seqs) = self.model_view(&info.id, stored).await?;
        Ok(Loaded {
            id: info.id,
            earlier_requests,
            repaired: repair_history(view),
            seqs,
        })
    }

    /// What the model sees of stored messages: after a compaction, its
    /// summary and the messages after it.
    pub(super) async fn model_view(
        &self,
        id: &str,
        stored: Vec<Message>,
    ) -> Result<(Vec<Message>, Vec<Option<u64>>), StoreError> {
        let compactions = self.inner.store.compactions(id).await?;
        match compactions.last() {
            Some(c) if (c.upto_seq as usize) <= stored.len() => {
                let mut messages = vec![c.summary.clone()];
                let mut seqs = vec![None];
                for (i, m) in stored.into_iter().enumerate().skip(c.upto_seq as usize) {
                    messages.push(m);
                    seqs.push(Some(i as u64 + 1));
                }
                Ok((messages, seqs))
            }
            _ => {
                let seqs = (1..=stored.len() as u64).map(Some).collect();
                Ok((stored, seqs))
            }
        }
    }
}
