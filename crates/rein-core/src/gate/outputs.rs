//! Outputs bounded to what a context can hold: big ones saved to a file
//! with a preview in their place, or cut to their head and tail.

use super::Gate;
use crate::text::truncate_middle;

impl Gate {
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
}
