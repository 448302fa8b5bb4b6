//! How one scripted turn streams: reasoning, text in small deltas, tool
//! calls as argument fragments, usage and the finish, as a real provider
//! sends them.

use rein_core::{ProviderError, StreamChunk};

use super::{ReplayTurn, WORDS_PER_DELTA};

/// Everything one turn streams, in order. `number` is the 1-based turn
/// number (for default call ids).
pub(super) fn plan(turn: &ReplayTurn, number: usize) -> Vec<Result<StreamChunk, ProviderError>> {
    let mut out = Vec::new();
    if let Some(reasoning) = &turn.reasoning {
        out.extend(
            split_text(reasoning, turn.chunk_chars)
                .into_iter()
                .map(|d| Ok(StreamChunk::ReasoningDelta(d))),
        );
    }
    if let Some(signature) = &turn.reasoning_signature {
        out.push(Ok(StreamChunk::ReasoningEnd {
            signature: Some(signature.clone()),
            encrypted: None,
            id: None,
        }));
    }
    if let Some(text) = &turn.text {
        out.extend(
            split_text(text, turn.chunk_chars)
                .into_iter()
                .map(|d| Ok(StreamChunk::TextDelta(d))),
        );
    }
    if let Some(failure) = &turn.error {
        out.push(Err(failure.to_provider_error()));
        return out;
    }
    for (index, call) in turn.tool_calls.iter().enumerate() {
        let id = call
            .id
            .clone()
            .unwrap_or_else(|| format!("call_{number}_{}", index + 1));
        for (k, fragment) in split_arguments(&call.arguments).into_iter().enumerate() {
            let first = k == 0;
            out.push(Ok(StreamChunk::ToolCallDelta {
                index,
                id: first.then(|| id.clone()),
                name: first.then(|| call.name.clone()),
                arguments: fragment,
            }));
        }
    }
    if let Some(usage) = turn.usage {
        out.push(Ok(StreamChunk::Usage(usage)));
    }
    out.push(Ok(StreamChunk::Done(turn.finish_reason())));
    out
}

/// Split text into deltas: `chunk_chars` characters each, or a few words
/// each (whitespace stays with the word before it). Never splits a char.
pub(super) fn split_text(text: &str, chunk_chars: Option<usize>) -> Vec<String> {
    match chunk_chars {
        Some(n) if n > 0 => split_chars(text, n),
        _ => split_words(text, WORDS_PER_DELTA),
    }
}

pub(super) fn split_chars(text: &str, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut count = 0;
    for ch in text.chars() {
        current.push(ch);
        count += 1;
        if count == n {
            out.push(std::mem::take(&mut current));
            count = 0;
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

pub(super) fn split_words(text: &str, words_per_delta: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut words = 0;
    let mut after_space = true;
    for (i, ch) in text.char_indices() {
        let space = ch.is_whitespace();
        if !space && after_space {
            if words == words_per_delta {
                out.push(text[start..i].to_string());
                start = i;
                words = 0;
            }
            words += 1;
        }
        after_space = space;
    }
    if start < text.len() {
        out.push(text[start..].to_string());
    }
    out
}

/// Split argument text into up to three fragments on char boundaries; an
/// empty text is one empty fragment.
pub(super) fn split_arguments(arguments: &str) -> Vec<String> {
    let count = arguments.chars().count();
    if count < 2 {
        return vec![arguments.to_string()];
    }
    let pieces = count.min(3);
    let mut out = Vec::with_capacity(pieces);
    let mut chars = arguments.chars();
    for k in 0..pieces {
        let len = (k + 1) * count / pieces - k * count / pieces;
        out.push(chars.by_ref().take(len).collect());
    }
    out
}
