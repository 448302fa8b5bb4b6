//! Catching a generation that has fallen into a loop: the same short run of
//! tokens over and over (`.*\n.*\n.*\n…` in a grep pattern, one line of a
//! table forever). Greedy decoding never leaves such a loop by itself, and
//! on two cores each token costs 50–80 ms: the 1.5B model spent 168 s
//! filling its output cap with one pattern before this check.

//!
//! A loop caught inside a tool call leaves a call that cannot be read,
//! and the answer fails (the engine retries it). The same prompt sampled
//! the same way loops the same way (greedy decoding is deterministic: the
//! 1.5B model spent all four retries of count-csv-rows on one `.*\n`
//! pattern), so [`Resample`] remembers the prompt whose call broke and
//! samples its retries warmer, with a new seed each time. A warm loop
//! varies and escapes [`is_runaway`], so a retry is also held to a few
//! times the broken answer's length: unbounded, one ran to the output cap
//! and past the task's time (answer-license, 660 s on one thread).

/// Tokens looked at: a loop must fill all of them.
const WINDOW: usize = 96;
/// Longest cycle recognised, in tokens.
const MAX_PERIOD: usize = 24;

/// Whether the last [`WINDOW`] tokens of `tokens` repeat one cycle of at
/// most [`MAX_PERIOD`] tokens (at least four times over).
pub(crate) fn is_runaway(tokens: &[i32]) -> bool {
    if tokens.len() < WINDOW {
        return false;
    }
    let window = &tokens[tokens.len() - WINDOW..];
    (1..=MAX_PERIOD).any(|p| (p..WINDOW).all(|i| window[i] == window[i - p]))
}

/// The temperature of the first retry of a broken answer, raised by
/// [`RETRY_WARMER`] each time it breaks again, up to [`RETRY_HOTTEST`].
const RETRY_TEMPERATURE: f32 = 0.6;
const RETRY_WARMER: f32 = 0.2;
const RETRY_HOTTEST: f32 = 1.0;
/// A retry may generate this many times the broken answer's tokens, and
/// at least [`RETRY_MIN_TOKENS`].
const RETRY_LENGTHS: u32 = 2;
const RETRY_MIN_TOKENS: u32 = 256;

/// How one answer is sampled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Sampling {
    pub(crate) temperature: f32,
    pub(crate) seed: u32,
    /// Most tokens to generate, when lower than the request's own cap.
    pub(crate) cap: Option<u32>,
}

/// The prompt whose answer last broke (its call cut off, or looping),
/// and how many times in a row it did.
#[derive(Debug, Default)]
pub(crate) struct Resample {
    prompt: Vec<i32>,
    times: u32,
    /// Tokens the last broken answer generated.
    length: u32,
}

impl Resample {
    /// How to sample `prompt`: the request's own `temperature` and the
    /// `seed`, unless `prompt` is the one whose answer broke, which gets
    /// warmer, a different seed with each retry, and a shorter leash.
    pub(crate) fn sampling(&self, prompt: &[i32], temperature: f32, seed: u32) -> Sampling {
        if self.times == 0 || self.prompt != prompt {
            return Sampling {
                temperature,
                seed,
                cap: None,
            };
        }
        let warmer = RETRY_TEMPERATURE + RETRY_WARMER * (self.times - 1) as f32;
        Sampling {
            temperature: temperature.max(warmer.min(RETRY_HOTTEST)),
            seed: seed.wrapping_add(self.times),
            cap: Some((self.length.saturating_mul(RETRY_LENGTHS)).max(RETRY_MIN_TOKENS)),
        }
    }

    /// Note how the answer to `prompt` ended: `broke` when its call
    /// could not be read, after `length` tokens.
    pub(crate) fn answered(&mut self, prompt: &[i32], broke: bool, length: u64) {
        if !broke {
            *self = Resample::default();
            return;
        }
        if self.prompt != prompt {
            self.prompt = prompt.to_vec();
            self.times = 0;
        }
        self.times += 1;
        self.length = u32::try_from(length).unwrap_or(u32::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_whose_call_broke_is_retried_warmer_with_a_new_seed_and_a_leash() {
        let mut memory = Resample::default();
        let (prompt, other) = ([1, 2, 3], [1, 2, 4]);
        let own = Sampling {
            temperature: 0.0,
            seed: 42,
            cap: None,
        };
        assert_eq!(memory.sampling(&prompt, 0.0, 42), own);
        memory.answered(&prompt, true, 300);
        let first = memory.sampling(&prompt, 0.0, 42);
        assert!(first.temperature > 0.0 && first.seed != 42, "{first:?}");
        assert_eq!(first.cap, Some(600));
        // Another prompt keeps its own sampling.
        assert_eq!(memory.sampling(&other, 0.0, 42), own);
        memory.answered(&prompt, true, 40);
        let second = memory.sampling(&prompt, 0.0, 42);
        assert!(second.temperature > first.temperature && second.seed != first.seed);
        assert_eq!(second.cap, Some(RETRY_MIN_TOKENS), "{second:?}");
        for _ in 0..10 {
            memory.answered(&prompt, true, 100);
        }
        assert!(memory.sampling(&prompt, 0.0, 42).temperature <= RETRY_HOTTEST);
        // A warmer request is never cooled.
        assert_eq!(memory.sampling(&prompt, 1.5, 42).temperature, 1.5);
        // An answer that did not break, or a new prompt breaking, starts over.
        memory.answered(&prompt, false, 10);
        assert_eq!(memory.sampling(&prompt, 0.0, 42), own);
        memory.answered(&prompt, true, 300);
        memory.answered(&other, true, 300);
        assert_eq!(memory.sampling(&prompt, 0.0, 42), own);
        assert_eq!(memory.sampling(&other, 0.0, 42), first);
    }

    #[test]
    fn a_short_cycle_filling_the_window_is_a_runaway() {
        let cycle = [5, 6, 7];
        let tokens: Vec<i32> = (0..200).map(|i| cycle[i % 3]).collect();
        assert!(is_runaway(&tokens));
        let one: Vec<i32> = vec![9; WINDOW];
        assert!(is_runaway(&one));
    }

    #[test]
    fn ordinary_text_and_long_cycles_are_not() {
        let text: Vec<i32> = (0..300).map(|i| i * 7919 % 1000).collect();
        assert!(!is_runaway(&text));
        let long: Vec<i32> = (0..300).map(|i| i % 40).collect();
        assert!(!is_runaway(&long), "a 40-token cycle is left alone");
        let short: Vec<i32> = vec![1; WINDOW - 1];
        assert!(!is_runaway(&short), "too few tokens to tell");
        let mut broken: Vec<i32> = vec![1; WINDOW * 2];
        broken[WINDOW + 10] = 2;
        assert!(!is_runaway(&broken));
    }
}
