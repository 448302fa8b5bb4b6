//! A scripted provider and test tools.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::stream;
use rein_core::*;
use serde_json::{Value, json};

/// One scripted model call: chunks to stream, or an error.
pub type Step = Result<Vec<StreamChunk>, ProviderError>;

/// Plays scripted steps and records every request it gets.
pub struct Scripted {
    steps: Mutex<Vec<Step>>,
    pub requests: Mutex<Vec<ModelRequest>>,
    /// When the script runs out, keep answering with this.
    pub repeat: Option<Vec<StreamChunk>>,
    pub chunk_delay: Duration,
    pub window: u64,
    pub pricing: Option<Pricing>,
    /// Summary requests (compaction) answered, without using the script.
    pub summaries: Mutex<u32>,
    /// What summary requests get: None = a fixed, good summary.
    pub summary_reply: Option<Result<String, ProviderError>>,
    /// Whether it says it takes images in the user's message.
    pub images: bool,
    /// Its own token counter, if any.
    pub counter: Option<Arc<dyn TokenCounter>>,
}

impl Scripted {
    pub fn new(steps: Vec<Step>) -> Arc<Self> {
        Arc::new(Self::build(steps))
    }

    pub fn build(mut steps: Vec<Step>) -> Self {
        steps.reverse();
        Scripted {
            steps: Mutex::new(steps),
            requests: Mutex::new(Vec::new()),
            repeat: None,
            chunk_delay: Duration::ZERO,
            window: 1000,
            pricing: None,
            summaries: Mutex::new(0),
            summary_reply: None,
            images: false,
            counter: None,
        }
    }

    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().unwrap().clone()
    }
}

#[async_trait]
impl Provider for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }
    fn model(&self) -> &str {
        "test-model"
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            parallel_tool_calls: true,
            context_window: Some(self.window),
            images: self.images,
            ..Default::default()
        }
    }
    fn pricing(&self) -> Option<Pricing> {
        self.pricing
    }
    fn token_counter(&self) -> Option<Arc<dyn TokenCounter>> {
        self.counter.clone()
    }
    async fn stream(
        &self,
        request: &ModelRequest,
        _cancel: &CancellationToken,
    ) -> Result<ChunkStream, ProviderError> {
        if request.system == rein_core::compaction::SUMMARY_SYSTEM {
            let n = {
                let mut n = self.summaries.lock().unwrap();
                *n += 1;
                *n
            };
            let reply = match &self.summary_reply {
                None => Ok(format!(
                    "## Goal\nFinish the task.\n## Current state\nSummary number {n}.\n## Next step\nContinue."
                )),
                Some(r) => r.clone(),
            };
            let chunks = match reply {
                Ok(t) => {
                    let mut c = text(&t);
                    c.insert(
                        0,
                        StreamChunk::Usage(Usage {
                            input_tokens: 300,
                            output_tokens: 40,
                            ..Default::default()
                        }),
                    );
                    c
                }
                Err(e) => return Err(e),
            };
            return Ok(Box::pin(stream::iter(chunks.into_iter().map(Ok))));
        }
        self.requests.lock().unwrap().push(request.clone());
        let step = self.steps.lock().unwrap().pop();
        let chunks = match step {
            Some(s) => s?,
            None => match &self.repeat {
                Some(r) => r.clone(),
                None => {
                    return Err(ProviderError::new(
                        ProviderErrorKind::Config,
                        "script exhausted",
                    ));
                }
            },
        };
        let delay = self.chunk_delay;
        Ok(Box::pin(stream::unfold(
            chunks.into_iter(),
            move |mut it| async move {
                let next = it.next()?;
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                Some((Ok(next), it))
            },
        )))
    }
}

pub fn text(t: &str) -> Vec<StreamChunk> {
    vec![
        StreamChunk::TextDelta(t.to_string()),
        StreamChunk::Done(FinishReason::Stop),
    ]
}

pub fn calls(list: &[(&str, &str, Value)]) -> Vec<StreamChunk> {
    let mut out: Vec<StreamChunk> = list
        .iter()
        .map(|(id, name, args)| {
            StreamChunk::ToolCall(ToolCall {
                id: id.to_string(),
                name: name.to_string(),
                arguments: args.to_string(),
            })
        })
        .collect();
    out.push(StreamChunk::Usage(Usage {
        input_tokens: 10,
        output_tokens: 5,
        ..Default::default()
    }));
    out.push(StreamChunk::Done(FinishReason::ToolCalls));
    out
}

/// Sleeps `ms` then echoes its label; honours cancellation unless `stubborn`.
pub struct Sleep;

#[async_trait]
impl Tool for Sleep {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "sleep".into(),
            description: "sleep".into(),
            parameters: json!({"type": "object", "properties": {
                "ms": {"type": "integer"}, "label": {"type": "string"}, "stubborn": {"type": "boolean"}
            }, "required": ["ms"]}),
        }
    }
    fn access(&self) -> ToolAccess {
        ToolAccess::Read
    }
    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let ms = args["ms"].as_u64().unwrap();
        let label = args["label"].as_str().unwrap_or("slept").to_string();
        if args["stubborn"].as_bool().unwrap_or(false) {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        } else {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(ms)) => {}
                _ = ctx.cancel.cancelled() => return Ok(ToolOutput::error(format!("{label} (partial)"))),
            }
        }
        Ok(ToolOutput::ok(label))
    }
}

/// Always fails with a message.
pub struct Fail;

#[async_trait]
impl Tool for Fail {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "fail".into(),
            description: "fails".into(),
            parameters: json!({"type": "object"}),
        }
    }
    fn access(&self) -> ToolAccess {
        ToolAccess::Read
    }
    async fn call(&self, _args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Err(ToolError::new("disk on fire"))
    }
}

/// Panics.
pub struct Boom;

#[async_trait]
impl Tool for Boom {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "boom".into(),
            description: "panics".into(),
            parameters: json!({"type": "object"}),
        }
    }
    fn access(&self) -> ToolAccess {
        ToolAccess::Read
    }
    async fn call(&self, _args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        panic!("index out of range")
    }
}

/// A tool that writes: records that it ran.
pub struct Writer(pub Arc<Mutex<u32>>);

#[async_trait]
impl Tool for Writer {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write".into(),
            description: "writes".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        }
    }
    fn access(&self) -> ToolAccess {
        ToolAccess::Write
    }
    async fn call(&self, _args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        *self.0.lock().unwrap() += 1;
        Ok(ToolOutput::ok("written"))
    }
}

pub fn tools() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(Sleep), Arc::new(Fail), Arc::new(Boom)]
}

pub struct Harness {
    pub provider: Arc<Scripted>,
    pub store: Arc<InMemorySessionStore>,
    pub engine: AgentEngine,
}

pub fn harness(
    provider: Arc<Scripted>,
    configure: impl FnOnce(AgentEngineBuilder) -> AgentEngineBuilder,
) -> Harness {
    let store = Arc::new(InMemorySessionStore::new());
    let builder = AgentEngine::builder(provider.clone(), store.clone())
        .workspace(std::env::temp_dir())
        .tools(tools())
        // The loop's own scenarios: every call runs. Permission scenarios
        // pick their own mode.
        .mode(rein_core::PermissionMode::Auto)
        // The scripted model's window is tiny; compaction has its own
        // scenarios.
        .compaction(rein_core::compaction::CompactionConfig {
            enabled: false,
            ..Default::default()
        })
        .retry_base_delay(Duration::from_millis(1));
    Harness {
        engine: configure(builder).build().unwrap(),
        provider,
        store,
    }
}

impl Harness {
    pub async fn run(&self, request: RunRequest) -> (RunOutcome, Vec<Event>) {
        let mut events = Vec::new();
        let outcome = self
            .engine
            .run(request, CancellationToken::new(), &mut events)
            .await;
        (outcome, events)
    }

    pub async fn stored(&self, outcome: &RunOutcome) -> Vec<Message> {
        self.store
            .messages(outcome.session_id.as_deref().unwrap())
            .await
            .unwrap()
    }
}

/// The `type` tag of each event, for order checks.
pub fn kinds(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            serde_json::to_value(e).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

pub fn tool_results(messages: &[Message]) -> Vec<ToolResult> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}
