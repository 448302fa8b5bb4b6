//! Model calls besides the turns: compacting a stored session now, and
//! session titles.

use tokio_util::sync::CancellationToken;

use super::run::RunCtx;
use super::setup::Loaded;
use super::state::{self, Conversation};
use super::{AgentEngine, hooks};
use crate::compaction::{CompactionReason, TaskLedger};
use crate::event::{Event, EventSink, NullSink};
use crate::lifecycle::CompactTrigger;
use crate::provider::{ModelRequest, ProviderError};
use crate::schema::Message;
use crate::store::StoreError;
use crate::tokens::CallKind;

impl AgentEngine {
    /// Compact a stored session now (`rein compact`): summarise all but its
    /// last turns. Returns false when there was nothing to compact (or a
    /// `PreCompact` hook stopped it). The compaction hooks run with the
    /// engine's mode.
    pub async fn compact_session(
        &self,
        id: &str,
        cancel: CancellationToken,
        sink: &mut dyn EventSink,
    ) -> Result<bool, StoreError> {
        let Loaded {
            id,
            earlier_requests: mut requests,
            repaired,
            seqs,
        } = self.load_session(id).await?;
        let latest = requests.pop().unwrap_or_default();
        let todos = self.inner.store.todos(&id).await?;
        let store = self.inner.store.clone();
        let mut ctx = RunCtx::new(id, &cancel, sink, store, self.token_counter());
        let seqs = state::realign_seqs(&repaired, seqs, &Default::default());
        let mut conv = Conversation::new(repaired.messages, seqs, ctx.counter.as_ref());
        let before = conv.messages.len();
        let ledger = TaskLedger {
            latest_instruction: latest,
            earlier_requests: requests,
            todos,
            ..Default::default()
        };
        let mode = self.inner.permissions.mode;
        let trigger = CompactTrigger::Manual;
        let hooks = &self.inner.hooks;
        if let Err(stop) = hooks.before_compact(&mut ctx, trigger, mode).await {
            ctx.emit(Event::Notice {
                message: stop.error.unwrap_or_default(),
            });
            return Ok(false);
        }
        let summary = self
            .compact(&mut ctx, &mut conv, CompactionReason::Manual, &ledger)
            .await?;
        if let Some(summary) = summary {
            let model = self.provider().model().to_string();
            match hooks
                .after_compact(&mut ctx, trigger, &summary, &model, mode)
                .await
            {
                Ok(context) => hooks::add_context(&mut ctx, &mut conv, context).await?,
                Err(stop) => ctx.emit(Event::Notice {
                    message: stop.error.unwrap_or_default(),
                }),
            }
        }
        Ok(conv.messages.len() != before)
    }

    /// Ask the model for a short title of a session from its first request
    /// and store it. The call is recorded in the session's cost ledger. On
    /// any failure the title stays as it was (the first line of the prompt).
    pub async fn title_session(
        &self,
        session_id: &str,
        cancel: CancellationToken,
    ) -> Result<String, TitleError> {
        let store = &self.inner.store;
        let messages = store.messages(session_id).await?;
        let first = messages
            .iter()
            .find_map(|m| match m {
                Message::User { content, .. } => Some(content.clone()),
                _ => None,
            })
            .ok_or(TitleError::NoRequest)?;
        let request: String = first.chars().take(2000).collect();
        let req = ModelRequest {
            temperature: None,
            system: "You name coding sessions. Reply with a title of at most six words for \
                     the user's request: no quotes, no final period, nothing else."
                .to_string(),
            messages: vec![Message::user(request)],
            tools: Vec::new(),
            max_output_tokens: Some(24),
            tool_choice: Default::default(),
            single_tool_call: false,
            answer_schema: None,
        };
        let began = std::time::Instant::now();
        let provider = self.provider();
        let result = provider.complete(&req, &cancel).await;
        let mut sink = NullSink;
        let mut ctx = RunCtx::new(
            session_id.to_string(),
            &cancel,
            &mut sink,
            store.clone(),
            self.token_counter(),
        );
        let usage = result
            .as_ref()
            .ok()
            .and_then(|a| a.usage)
            .unwrap_or_default();
        ctx.record_call(
            provider.as_ref(),
            CallKind::Title,
            usage,
            result.is_ok(),
            began,
        )
        .await;
        let title = clean_title(&result?.text()).ok_or(TitleError::Unusable)?;
        store.set_title(session_id, &title).await?;
        Ok(title)
    }
}

/// Why a session could not be given a model-written title (it keeps the
/// first line of its prompt).
#[derive(Debug, thiserror::Error)]
pub enum TitleError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the session has no request yet")]
    NoRequest,
    #[error("the title call failed: {0}")]
    Provider(#[from] ProviderError),
    #[error("the model gave no usable title")]
    Unusable,
}

/// A model's title answer made fit: one line, no quotes, at most 80 chars.
fn clean_title(answer: &str) -> Option<String> {
    let line = answer.lines().map(str::trim).find(|l| !l.is_empty())?;
    let t = line
        .trim_start_matches(|c: char| c == '#' || c == '*' || c.is_whitespace())
        .trim_start_matches("Title:")
        .trim()
        .trim_matches(|c: char| c == '"' || c == '\'' || c == '`' || c == '*')
        .trim_end_matches('.')
        .trim();
    (!t.is_empty()).then(|| t.chars().take(80).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_titles_are_cleaned_to_one_plain_line() {
        assert_eq!(
            clean_title("\n\"Fix the failing test.\"\nmore").as_deref(),
            Some("Fix the failing test")
        );
        assert_eq!(
            clean_title("Title: Refactor parser").as_deref(),
            Some("Refactor parser")
        );
        assert_eq!(clean_title("  \n "), None);
    }
}
