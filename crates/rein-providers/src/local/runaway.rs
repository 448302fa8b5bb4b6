//! Catching a generation that has fallen into a loop: the same short run of
//! tokens over and over (`.*\n.*\n.*\n…` in a grep pattern, one line of a
//! table forever). Greedy decoding never leaves such a loop by itself, and
//! on two cores each token costs 50–80 ms: the 1.5B model spent 168 s
//! filling its output cap with one pattern before this check.

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

#[cfg(test)]
mod tests {
    use super::*;

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
