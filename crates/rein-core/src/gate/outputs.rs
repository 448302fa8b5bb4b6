//! What the gate hands back besides running a call: outputs bounded to
//! what a context can hold, and the tools that arrive late or not at all.

use super::{Gate, Registered, RunPolicy, UNKNOWN_TOOL};
use crate::schema::ToolCall;
use crate::text::truncate_middle;
use crate::tool::ToolError;

/// Tools still arriving, as a child engine may see them: only those its
/// policy keeps.
struct KeptLate {
    inner: std::sync::Arc<dyn crate::tool::LateTools>,
    keep: std::sync::Arc<dyn Fn(&str) -> bool + Send + Sync>,
}

#[async_trait::async_trait]
impl crate::tool::LateTools for KeptLate {
    async fn wait_for(&self, name: &str) -> Option<std::sync::Arc<dyn crate::tool::Tool>> {
        if !(self.keep)(name) {
            return None;
        }
        self.inner.wait_for(name).await
    }
}

impl Gate {
    /// This gate narrowed for a child engine: the tools `keep` accepts,
    /// now and as they arrive.
    pub fn for_child(&self, keep: std::sync::Arc<dyn Fn(&str) -> bool + Send + Sync>) -> Gate {
        let mut gate = self.narrowed(|name| keep(name));
        gate.late = self.late.clone().map(|inner| {
            std::sync::Arc::new(KeptLate { inner, keep })
                as std::sync::Arc<dyn crate::tool::LateTools>
        });
        gate
    }

    /// An observation the context can hold: big outputs go to a file with a
    /// preview in their place, or are cut to their head and tail.
    pub(super) fn bound_output(&self, session_id: &str, call_id: &str, content: String) -> String {
        let limits = &self.limits;
        if content.len() <= limits.spill_bytes.min(limits.max_output_bytes) {
            return content;
        }
        if let Some(spill) = &self.spill
            && content.len() > limits.spill_bytes
        {
            match spill.save(session_id, call_id, &content) {
                Ok(path) => {
                    let preview_bytes = (limits.spill_bytes / 2).clamp(1024, 8 * 1024);
                    return format!(
                        "{}\n[rein: the whole output ({} bytes, {} lines) is saved in {}; {}]",
                        truncate_middle(&content, preview_bytes),
                        content.len(),
                        content.lines().count(),
                        path.display(),
                        spill.reading_hint()
                    );
                }
                Err(e) => {
                    return format!(
                        "{}\n[rein: the output was cut; saving it whole failed: {e}]",
                        truncate_middle(&content, limits.max_output_bytes)
                    );
                }
            }
        }
        truncate_middle(&content, limits.max_output_bytes)
    }

    /// A tool that arrives late (a server still starting), waited for (the
    /// wait is bounded by its source); else the unknown-tool error.
    pub(super) async fn late_entry(
        &self,
        call: &ToolCall,
        policy: &RunPolicy,
    ) -> Result<Box<Registered>, ToolError> {
        let late = match &self.late {
            Some(late) => late.wait_for(&call.name).await,
            None => None,
        };
        let Some(tool) = late else {
            return Err(self.unknown_tool(call, policy));
        };
        Ok(Box::new(Registered {
            access: tool.access(),
            spec: tool.spec(),
            tool,
        }))
    }

    /// The error for a call naming no tool there is, with the tools the
    /// mode offers.
    fn unknown_tool(&self, call: &ToolCall, policy: &RunPolicy) -> ToolError {
        let available: Vec<String> = self
            .specs(policy.mode)
            .into_iter()
            .map(|s| s.name)
            .collect();
        ToolError(format!(
            "{UNKNOWN_TOOL}{}`. Available tools: {}.",
            call.name,
            available.join(", ")
        ))
    }
}
