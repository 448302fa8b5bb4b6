//! With content capture off, nothing an attacker chose reaches the
//! collector: an MCP tool's name (the server picks it) becomes `mcp`, and
//! a provider's error text (which may echo the prompt) is replaced by its
//! error type. With capture on, both are exported as they are.

use rein_core::{Event, LedgerTotals, StopReason, Usage};
use rein_telemetry::Telemetry;

use crate::events::{SHUTDOWN, config, run_started, tool_finished, tool_started};
use crate::receiver::Receiver;

const MCP_TOOL: &str = "mcp__evil__exfiltrate_AKIA1234";
const PROVIDER_ERROR: &str = "HTTP 400: the prompt `PROMPT-SECRET-42` is too long";

/// A run that calls an MCP tool and a built-in one, then fails at the
/// provider; everything exported (spans and metrics), as debug text.
async fn exported(capture: bool) -> String {
    let receiver = Receiver::start(200).await;
    let endpoint = receiver.endpoint();
    let (config, _lines) = config(
        capture,
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())],
    );
    let telemetry = Telemetry::start(config).unwrap();
    let mut observer = telemetry.observer();
    for event in [
        run_started("sess-hostile"),
        Event::TurnStarted { turn: 1 },
        tool_started("call_1", MCP_TOOL, "{}"),
        tool_finished("call_1", MCP_TOOL, true, "boom"),
        tool_started("call_2", "shell", "{}"),
        tool_finished("call_2", "shell", false, "ok"),
        Event::TurnStarted { turn: 2 },
        Event::Stopped {
            reason: StopReason::ProviderError,
            turns: 2,
            usage: Usage::default(),
            final_text: String::new(),
            error: Some(PROVIDER_ERROR.to_string()),
            totals: LedgerTotals::default(),
            refused: Vec::new(),
        },
    ] {
        observer.observe(&event);
    }
    drop(observer);
    telemetry.shutdown(SHUTDOWN).await;
    format!("{:?}\n{:?}", receiver.spans(), receiver.latest_metrics())
}

#[tokio::test]
async fn without_capture_no_mcp_tool_name_or_provider_error_text_is_exported() {
    let sent = exported(false).await;
    for secret in [
        "evil",
        "exfiltrate",
        "AKIA1234",
        "PROMPT-SECRET-42",
        "too long",
    ] {
        assert!(!sent.contains(secret), "{secret} exported: {sent}");
    }
    // What stays: built-in tool names, `mcp`, and the error's type.
    for kept in [
        "execute_tool mcp",
        "execute_tool shell",
        "provider_error",
        "the run stopped: provider_error",
    ] {
        assert!(sent.contains(kept), "{kept} missing: {sent}");
    }
}

#[tokio::test]
async fn with_capture_the_mcp_tool_name_and_provider_error_text_are_exported() {
    let sent = exported(true).await;
    assert!(sent.contains(&format!("execute_tool {MCP_TOOL}")), "{sent}");
    assert!(sent.contains("PROMPT-SECRET-42"), "{sent}");
}
