//! Names from the OpenTelemetry GenAI semantic conventions (development
//! status; the names of the conventions' registry as of 2026), and rein's
//! own names where the conventions have none (`rein.*`).

pub const OPERATION_NAME: &str = "gen_ai.operation.name";
pub const PROVIDER_NAME: &str = "gen_ai.provider.name";
pub const REQUEST_MODEL: &str = "gen_ai.request.model";
pub const AGENT_NAME: &str = "gen_ai.agent.name";
pub const AGENT_DESCRIPTION: &str = "gen_ai.agent.description";
pub const CONVERSATION_ID: &str = "gen_ai.conversation.id";
pub const USAGE_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
pub const USAGE_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
/// Input tokens served from the provider's cache (a subset of input).
pub const USAGE_CACHE_READ_INPUT_TOKENS: &str = "gen_ai.usage.cache_read.input_tokens";
/// Output tokens spent on reasoning (a subset of output).
pub const USAGE_REASONING_OUTPUT_TOKENS: &str = "gen_ai.usage.reasoning.output_tokens";
pub const RESPONSE_FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
pub const TOOL_NAME: &str = "gen_ai.tool.name";
pub const TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
pub const TOKEN_TYPE: &str = "gen_ai.token.type";
pub const ERROR_TYPE: &str = "error.type";

/// Content: recorded only when capture is on.
pub const INPUT_MESSAGES: &str = "gen_ai.input.messages";
pub const OUTPUT_MESSAGES: &str = "gen_ai.output.messages";
pub const TOOL_CALL_ARGUMENTS: &str = "gen_ai.tool.call.arguments";
pub const TOOL_CALL_RESULT: &str = "gen_ai.tool.call.result";

/// Every content attribute, for tests that prove none leaks.
pub const CONTENT_ATTRIBUTES: [&str; 5] = [
    INPUT_MESSAGES,
    OUTPUT_MESSAGES,
    TOOL_CALL_ARGUMENTS,
    TOOL_CALL_RESULT,
    AGENT_DESCRIPTION,
];

/// rein's own: why the run stopped (`StopReason::as_str`).
pub const REIN_STOP_REASON: &str = "rein.stop_reason";
/// rein's own: the turn a chat span belongs to (from 1).
pub const REIN_TURN: &str = "rein.turn";
/// rein's own: failed attempts of a model call that were retried.
pub const REIN_RETRIES: &str = "rein.retries";
/// rein's own: a run's cost in US dollars when every call's price is known.
pub const REIN_COST_USD: &str = "rein.cost_usd";
/// rein's own: the sub-agent run's id (`Event::Subagent.agent_id`).
pub const REIN_AGENT_ID: &str = "rein.agent_id";

/// Operation names (`gen_ai.operation.name` values).
pub const OP_INVOKE_AGENT: &str = "invoke_agent";
pub const OP_CHAT: &str = "chat";
pub const OP_EXECUTE_TOOL: &str = "execute_tool";

/// Metric names.
pub const METRIC_TOKEN_USAGE: &str = "gen_ai.client.token.usage";
pub const METRIC_OPERATION_DURATION: &str = "gen_ai.client.operation.duration";
/// rein's own: the GenAI conventions publish no tool-duration metric
/// (checked by the `independent` telemetry test against their package).
pub const METRIC_TOOL_DURATION: &str = "rein.tool.duration";
pub const METRIC_TOOL_ERRORS: &str = "rein.tool.errors";
pub const METRIC_COST: &str = "rein.cost.usd";
