//! The model call of a turn: a whole answer, committed. The context is
//! compacted first when it is full, and once more when the service says
//! it overflowed; a failed transport is retried with backoff.

use std::time::{Duration, Instant};

use futures_util::StreamExt;

use super::{RunCtx, RunLoop, Stop, TurnFailure};
use crate::assemble::AssistantAssembler;
use crate::compaction::CompactionReason;
use crate::engine::hooks;
use crate::engine::setup::count_fixed;
use crate::event::Event;
use crate::lifecycle::CompactTrigger;
use crate::provider::{ModelRequest, Provider, ProviderError, ProviderErrorKind};
use crate::request_size::{Measured, RequestSize, request_size};
use crate::schema::{AssistantMessage, Message, StreamChunk, ToolCall};
use crate::tokens::CallKind;

/// The share of the compaction threshold past which a counter that
/// estimates until asked ([`crate::ExactOnDemand`]) is made exact: far
/// enough below it that an estimate a third short still crosses it.
const SHARPEN_AT: f64 = 0.5;

impl RunLoop<'_> {
    /// Get the model's answer and commit it; returns its tool calls. A
    /// full context is compacted first; an answer refused for overflow is
    /// compacted and asked once more. A failed turn commits what streamed
    /// before it (if anything) and stops.
    pub(super) async fn answer(&mut self, ctx: &mut RunCtx<'_>) -> Result<Vec<ToolCall>, Stop> {
        // The provider may have been switched (`set_provider`).
        let window = self.provider().capabilities().context_window;
        let cfg = &self.engine.inner.config.compaction;
        let mut used = self.next_request_size(ctx).tokens;
        if cfg.enabled
            && window.is_some_and(|w| used as f64 > SHARPEN_AT * cfg.threshold * w as f64)
            && ctx.counter.sharpen()
        {
            self.recount(ctx);
            used = self.next_request_size(ctx).tokens;
        }
        if cfg.enabled && window.is_some_and(|w| used as f64 > cfg.threshold * w as f64) {
            self.compact(ctx, CompactionReason::Threshold).await?;
        }
        // Compaction spent too: the budget tree is checked before every
        // call.
        if let Some(reason) = ctx.budget.as_ref().and_then(|b| b.exceeded()) {
            return Err(Stop::new(reason));
        }
        let mut outcome = self.ask(ctx).await;
        if let Err(f) = &outcome
            && f.context_overflow
            && f.partial.content.is_empty()
            && cfg.enabled
        {
            self.compact(ctx, CompactionReason::ContextLengthExceeded)
                .await?;
            outcome = self.ask(ctx).await;
        }
        let (mut assistant, failure) = match outcome {
            Ok(a) => (a, None),
            Err(f) => (f.partial, Some(f.stop)),
        };
        self.conv.unique_call_ids(&mut assistant);
        // The request just sent: the conversation as it stands (a
        // compaction on overflow replaced it before the second ask).
        let sent_estimate = self.fixed.tokens.saturating_add(self.conv.tokens());
        let reported = assistant.usage.map(|u| u.input_tokens).filter(|&n| n > 0);
        if let Some(u) = &assistant.usage {
            ctx.st.usage.add(u);
        }
        if let Some(input) = reported {
            let chars = self.fixed.chars.saturating_add(self.conv.chars());
            ctx.counter.observe(chars, input);
            let measured = Measured::new(input, self.fixed.id, &self.conv.messages);
            self.engine.inner.sizes.put(&ctx.session_id, measured);
        }
        if assistant.content.is_empty()
            && let Some(stop) = failure
        {
            return Err(stop);
        }
        ctx.st.final_text = assistant.text();
        let calls: Vec<ToolCall> = assistant.tool_calls().cloned().collect();
        ctx.commit_to(&mut self.conv, Message::Assistant(assistant))
            .await?;
        ctx.emit(Event::TokenUpdate {
            estimated: sent_estimate,
            actual: reported,
            window,
            next_request: self.next_request_size(ctx).tokens,
        });
        match failure {
            Some(stop) => Err(stop),
            None => Ok(calls),
        }
    }

    /// Count the conversation and the fixed part again, after the counter
    /// changed from an estimate to exact counts.
    fn recount(&mut self, ctx: &RunCtx<'_>) {
        let counter = ctx.counter.as_ref();
        let messages = std::mem::take(&mut self.conv.messages);
        let seqs = std::mem::take(&mut self.conv.seqs);
        self.conv.replace(messages, seqs, counter);
        let (tokens, tool_tokens) = count_fixed(&self.req.system, &self.req.tools, counter);
        self.fixed.tokens = tokens;
        self.fixed.tool_tokens = tool_tokens;
    }

    /// The size of the next request, in the one accounting
    /// ([`crate::request_size`]): the provider's last report of this
    /// session plus what was added since, else the estimate.
    pub(super) fn next_request_size(&self, ctx: &RunCtx<'_>) -> RequestSize {
        let measured = self.engine.inner.sizes.get(&ctx.session_id);
        request_size(
            measured.as_ref(),
            self.fixed.as_fixed(),
            &self.conv.messages,
            self.conv.tokens(),
            ctx.counter.as_ref(),
        )
    }

    /// One model turn on the conversation as it stands.
    async fn ask(&mut self, ctx: &mut RunCtx<'_>) -> Result<AssistantMessage, TurnFailure> {
        std::mem::swap(&mut self.req.messages, &mut self.conv.messages);
        let outcome = self.model_turn(ctx, &self.req).await;
        std::mem::swap(&mut self.req.messages, &mut self.conv.messages);
        outcome
    }

    /// Compact the run's context, with the compaction hooks around it.
    async fn compact(
        &mut self,
        ctx: &mut RunCtx<'_>,
        reason: CompactionReason,
    ) -> Result<(), Stop> {
        let (engine, trigger) = (self.engine, CompactTrigger::Auto);
        let hooks = &engine.inner.hooks;
        hooks.before_compact(ctx, trigger, self.mode).await?;
        let summary = engine
            .compact(ctx, &mut self.conv, reason, &self.track.ledger)
            .await?;
        if let Some(summary) = summary {
            let model = self.provider().model().to_string();
            let context = hooks
                .after_compact(ctx, trigger, &summary, &model, self.mode)
                .await?;
            hooks::add_context(ctx, &mut self.conv, context).await?;
        }
        Ok(())
    }

    /// One model call, retried on a transport failure (a refused or cut
    /// connection, an overloaded service, a stream that went silent or
    /// stopped before its end) up to `provider_retries` times. Whatever a
    /// failed attempt streamed is discarded: only a whole answer is
    /// returned, so a broken stream's text is never stored and its tool
    /// calls never run. Each attempt is one ledger entry.
    pub(super) async fn model_turn(
        &self,
        ctx: &mut RunCtx<'_>,
        req: &ModelRequest,
    ) -> Result<AssistantMessage, TurnFailure> {
        let engine = self.engine;
        let cfg = &engine.inner.config;
        let mut attempt = 0u32;
        loop {
            let mut asm =
                AssistantAssembler::with_args_cap(engine.gate().limits().max_argument_bytes);
            let provider = self.provider();
            let began = Instant::now();
            let result = stream_once(provider.as_ref(), req, ctx, &mut asm).await;
            let err = match result {
                Ok(()) => {
                    let answer = asm.finish();
                    let usage = answer.usage.unwrap_or_default();
                    ctx.record_call(provider.as_ref(), CallKind::Turn, usage, true, began)
                        .await;
                    return Ok(answer);
                }
                Err(e) => e,
            };
            let partial = asm.partial();
            let usage = partial.usage.unwrap_or_default();
            if err.kind == ProviderErrorKind::Cancelled || ctx.cancel.is_cancelled() {
                ctx.record_call(provider.as_ref(), CallKind::Turn, usage, false, began)
                    .await;
                return Err(TurnFailure::cancelled(partial));
            }
            if !(err.is_retryable() && attempt < cfg.provider_retries) {
                ctx.record_call(provider.as_ref(), CallKind::Turn, usage, false, began)
                    .await;
                return Err(TurnFailure::provider(err, partial));
            }
            ctx.record_call(provider.as_ref(), CallKind::Retry, usage, false, began)
                .await;
            attempt += 1;
            let delay = backoff(cfg.retry_base_delay, attempt, err.retry_after);
            ctx.emit(Event::Retry {
                attempt,
                max_retries: cfg.provider_retries,
                delay_ms: delay.as_millis() as u64,
                error: err.to_string(),
                discarded: !asm.is_empty(),
            });
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = ctx.cancel.cancelled() => return Err(TurnFailure::cancelled(AssistantMessage::default())),
            }
        }
    }
}

/// Stream one answer of `provider` into `asm`, passing its text on as
/// it comes.
async fn stream_once(
    provider: &dyn Provider,
    req: &ModelRequest,
    ctx: &mut RunCtx<'_>,
    asm: &mut AssistantAssembler,
) -> Result<(), ProviderError> {
    let cancel = ctx.cancel;
    let cancelled = || ProviderError::new(ProviderErrorKind::Cancelled, "cancelled");
    let mut stream = tokio::select! {
        s = provider.stream(req, cancel) => s?,
        _ = cancel.cancelled() => return Err(cancelled()),
    };
    loop {
        let next = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(cancelled()),
            n = stream.next() => n,
        };
        let Some(chunk) = next else { return Ok(()) };
        let chunk = chunk?;
        match &chunk {
            StreamChunk::TextDelta(t) if !t.is_empty() => {
                ctx.emit(Event::TextDelta { text: t.clone() })
            }
            StreamChunk::ReasoningDelta(t) if !t.is_empty() => {
                ctx.emit(Event::ReasoningDelta { text: t.clone() })
            }
            StreamChunk::Progress(progress) => {
                ctx.emit(Event::ModelProgress {
                    progress: *progress,
                });
                continue;
            }
            _ => {}
        }
        if asm.push(chunk) {
            return Ok(());
        }
        if let Some(bytes) = asm.oversized_call() {
            // Stop reading: a model streaming gigabytes of arguments
            // would otherwise fill memory. The call is refused by the
            // gate; what came before it stands.
            ctx.emit(Event::Notice {
                message: format!(
                    "the model's answer was cut: a tool call's arguments passed {bytes} bytes, \
                     over the limit"
                ),
            });
            return Ok(());
        }
    }
}

/// Delay before retry `attempt` (1-based): the service's wish when it gave
/// one (capped at a minute), else exponential from `base` with ±25% jitter.
fn backoff(base: Duration, attempt: u32, retry_after: Option<Duration>) -> Duration {
    if let Some(wait) = retry_after {
        return wait.min(Duration::from_secs(60));
    }
    let exp = base.saturating_mul(1u32 << attempt.saturating_sub(1).min(10));
    let capped = exp.min(Duration::from_secs(30));
    let jitter = 0.75 + fastrand::f64() * 0.5;
    capped.mul_f64(jitter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_honours_retry_after() {
        let base = Duration::from_millis(100);
        for attempt in 1..5u32 {
            let d = backoff(base, attempt, None).as_millis() as f64;
            let nominal = 100.0 * f64::from(1u32 << (attempt - 1));
            assert!(d >= nominal * 0.74 && d <= nominal * 1.26, "{attempt}: {d}");
        }
        assert_eq!(
            backoff(base, 1, Some(Duration::from_secs(7))),
            Duration::from_secs(7)
        );
        assert!(backoff(Duration::from_secs(10), 9, None) <= Duration::from_secs(38));
    }
}
