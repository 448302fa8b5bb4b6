//! Which part of the KV cache a new prompt can reuse.

/// Number of leading items `a` and `b` share.
pub(crate) fn common_prefix<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// How many cached tokens to keep for `prompt`: the shared prefix, but at
/// least the last prompt token is always evaluated again, since its logits
/// are needed to sample the first new token.
pub(crate) fn reusable_prefix<T: PartialEq>(cached: &[T], prompt: &[T]) -> usize {
    common_prefix(cached, prompt).min(prompt.len().saturating_sub(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_prefix_is_kept() {
        assert_eq!(common_prefix(&[1, 2, 3, 4], &[1, 2, 9]), 2);
        assert_eq!(reusable_prefix(&[1, 2, 3, 4], &[1, 2, 3, 4, 5, 6]), 4);
        assert_eq!(reusable_prefix(&[1, 2, 3, 4, 5], &[1, 2, 3, 7, 8]), 3);
        assert_eq!(reusable_prefix::<u8>(&[], &[1, 2]), 0);
        assert_eq!(reusable_prefix(&[5, 6], &[1, 2]), 0);
    }

    #[test]
    fn a_fully_cached_prompt_still_evaluates_its_last_token() {
        assert_eq!(reusable_prefix(&[1, 2, 3], &[1, 2, 3]), 2);
        assert_eq!(reusable_prefix(&[1, 2, 3, 4], &[1, 2, 3]), 2);
        assert_eq!(reusable_prefix::<u8>(&[], &[]), 0);
    }
}
