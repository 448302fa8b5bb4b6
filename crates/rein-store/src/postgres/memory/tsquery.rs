//! Turning what a user or model typed into a `tsquery` that cannot fail.
//!
//! `to_tsquery` has a syntax (`&`, `|`, `!`, `<->`, `:*`, quotes) a search
//! box should not expose, so the text is cut into words (runs of letters
//! and digits, lowercased), each becomes a quoted lexeme matched as a
//! prefix, and they are joined with `|`: `ts_rank` then ranks entries that
//! match more of them, and more often, first.

/// The tsquery text for the words of `text`: `'word':* | 'other':*`, or
/// `None` when it has no words.
pub(crate) fn ts_query(text: &str) -> Option<String> {
    let words = crate::memory::fts::search_words(text);
    if words.is_empty() {
        return None;
    }
    // Letters and digits hold no quote or backslash; doubled anyway, so a
    // lexeme can never end early whatever `is_alphanumeric` lets through.
    let terms: Vec<String> = words
        .iter()
        .map(|w| format!("'{}':*", w.replace('\\', "\\\\").replace('\'', "''")))
        .collect();
    Some(terms.join(" | "))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn words_become_quoted_prefix_lexemes_joined_with_or() {
        assert_eq!(
            ts_query("Run the TESTS").unwrap(),
            "'run':* | 'the':* | 'tests':*"
        );
    }

    #[test]
    fn operators_and_quotes_are_only_words_or_nothing() {
        assert_eq!(
            ts_query("a & !b | c<->d 'e':* it's").unwrap(),
            "'a':* | 'b':* | 'c':* | 'd':* | 'e':* | 'it':* | 's':*"
        );
        for nothing in ["", "   ", "'", "\\", "&|!", "<->", ":*", "…"] {
            assert_eq!(ts_query(nothing), None, "{nothing:?}");
        }
    }

    #[test]
    fn repeated_words_count_once_and_long_queries_are_capped() {
        assert_eq!(ts_query("a A a").unwrap(), "'a':*");
        let long: Vec<String> = (0..100).map(|i| format!("w{i}")).collect();
        let q = ts_query(&long.join(" ")).unwrap();
        assert_eq!(q.matches(" | ").count(), crate::memory::fts::MAX_TERMS - 1);
    }
}
