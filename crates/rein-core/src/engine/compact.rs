//! The engine's compaction step: ask the model for a summary of the older
//! turns, keep the task ledger and the last turns, store the record.

use crate::compaction::{self, CompactionReason, TaskLedger};
use crate::engine::AgentEngine;
use crate::engine::run::RunCtx;
use crate::engine::state::Conversation;
use crate::event::Event;
use crate::schema::Message;
use crate::store::{CompactionRecord, StoreError};
use crate::tokens::CallKind;

impl AgentEngine {
    /// Compact `conv` in place and store the record; returns the message
    /// that now stands for the older turns, if it made one. Only a store
    /// failure is an error; a failed summary falls back to dropping turns.
    pub(crate) async fn compact(
        &self,
        ctx: &mut RunCtx<'_>,
        conv: &mut Conversation,
        reason: CompactionReason,
        ledger: &TaskLedger,
    ) -> Result<Option<String>, StoreError> {
        let counter = ctx.counter.clone();
        let counter = counter.as_ref();
        let cfg = &self.inner.config.compaction;
        let before = conv.tokens();
        let Some(cut) = compaction::split_point(&conv.messages, cfg.keep_turns) else {
            // Nothing older to summarise: cut big outputs, if any.
            let mut messages = conv.messages.clone();
            let shrunk = compaction::shrink_tool_outputs(&mut messages, cfg.fallback_output_bytes);
            if shrunk > 0 {
                conv.replace(messages, conv.seqs.clone(), counter);
                ctx.emit(Event::Compaction {
                    reason,
                    summarized: false,
                    replaced_messages: 0,
                    tokens_before: before,
                    tokens_after: conv.tokens(),
                    note: Some(format!(
                        "nothing older to summarise; {shrunk} big tool outputs were cut to their head and tail"
                    )),
                });
            }
            return Ok(None);
        };
        let window = self.provider().capabilities().context_window;
        // The summariser sees at most half the window (about 4 bytes a
        // token), and its answer may take a quarter.
        let transcript_bytes = window.map_or(200_000, |w| (w as usize * 2).clamp(8_000, 400_000));
        let summary_bytes = window.map_or(32_000, |w| (w as usize).clamp(2_000, 64_000));
        let max_tokens = window.map_or(2_000, |w| (w / 8).clamp(256, 4_000)) as u32;
        let older = &conv.messages[..cut];
        let request = compaction::summary_request(
            &compaction::transcript(older, transcript_bytes),
            max_tokens,
        );
        let began = std::time::Instant::now();
        let provider = self.provider();
        let answer = tokio::select! {
            a = provider.complete(&request, ctx.cancel) => a,
            _ = ctx.cancel.cancelled() => Err(crate::provider::ProviderError::new(
                crate::provider::ProviderErrorKind::Cancelled, "cancelled")),
        };
        let summary = match answer {
            Ok(a) => {
                let usage = a.usage.unwrap_or_default();
                ctx.record_call(provider.as_ref(), CallKind::Compaction, usage, true, began)
                    .await;
                compaction::check_summary(&a.text(), summary_bytes)
            }
            Err(e) => {
                let usage = Default::default();
                ctx.record_call(provider.as_ref(), CallKind::Compaction, usage, false, began)
                    .await;
                Err(e.into())
            }
        };
        let summary = summary.map_err(|e: compaction::SummaryError| e.to_string());
        let summarized = summary.is_ok();
        let note = summary.as_ref().err().cloned();
        let head =
            compaction::summary_message(summary.as_deref().map_err(String::as_str), ledger, cut);
        let mut kept: Vec<Message> = conv.messages[cut..].to_vec();
        if !summarized {
            compaction::shrink_tool_outputs(&mut kept, cfg.fallback_output_bytes);
        }
        let upto_seq = conv.seqs[..cut].iter().flatten().max().copied();
        if let Some(upto_seq) = upto_seq {
            ctx.store
                .add_compaction(
                    &ctx.session_id,
                    &CompactionRecord {
                        upto_seq,
                        summary: head.clone(),
                        summarized,
                        at: crate::time::now_millis(),
                    },
                )
                .await?;
        }
        let summary_text = match &head {
            Message::User { content, .. } => content.clone(),
            other => other.text(),
        };
        let mut messages = vec![head];
        let mut seqs = vec![None];
        messages.extend(kept);
        seqs.extend(conv.seqs[cut..].iter().copied());
        conv.replace(messages, seqs, counter);
        ctx.emit(Event::Compaction {
            reason,
            summarized,
            replaced_messages: cut as u64,
            tokens_before: before,
            tokens_after: conv.tokens(),
            note: note.map(|n| format!("{n}; the oldest turns were dropped instead")),
        });
        Ok(Some(summary_text))
    }
}
