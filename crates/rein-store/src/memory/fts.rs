//! Turning what a user or model typed into an FTS5 query that cannot fail.
//!
//! FTS5 has a query language (`"phrases"`, `prefix*`, `-`, `col:`, `( )`,
//! `AND`/`OR`/`NOT`/`NEAR`); a search box should not expose it, since a stray
//! quote or a dash in `rein-core` would be a syntax error. So the text is cut
//! into words (runs of letters and digits), each word becomes a quoted
//! string with a prefix star, and the words are joined with `OR`: bm25 then
//! ranks entries that match more of them, and more often, first.

/// Most words taken from one query.
pub(crate) const MAX_TERMS: usize = 32;

/// The distinct words of `text` (runs of letters and digits, lowercased),
/// at most [`MAX_TERMS`], in order: what both stores' search syntaxes
/// are built from.
pub(crate) fn search_words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() {
            continue;
        }
        let word = word.to_lowercase();
        if !words.contains(&word) {
            words.push(word);
        }
        if words.len() == MAX_TERMS {
            break;
        }
    }
    words
}

/// The FTS5 query for the words of `text`, or `None` when it has no words.
pub(crate) fn fts_query(text: &str) -> Option<String> {
    let words = search_words(text);
    if words.is_empty() {
        return None;
    }
    let terms: Vec<String> = words.iter().map(|w| quoted_prefix(w)).collect();
    Some(terms.join(" OR "))
}

/// `"word"*`: a string (double quotes doubled inside it, though a word of
/// letters and digits has none) matched as a prefix.
fn quoted_prefix(word: &str) -> String {
    format!("\"{}\"*", word.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn words_become_quoted_prefix_terms_joined_with_or() {
        assert_eq!(
            fts_query("Run the TESTS").unwrap(),
            r#""run"* OR "the"* OR "tests"*"#
        );
    }

    #[test]
    fn syntax_characters_and_operators_are_only_words_or_nothing() {
        assert_eq!(
            fts_query(r#"title:"x" AND -y* (NEAR z)"#).unwrap(),
            r#""title"* OR "x"* OR "and"* OR "y"* OR "near"* OR "z"*"#
        );
        for nothing in ["", "   ", "\"", "*", "-", ":", "()", "\"*\"-:^+{}", "…"] {
            assert_eq!(fts_query(nothing), None, "{nothing:?}");
        }
    }

    #[test]
    fn repeated_words_count_once_and_long_queries_are_capped() {
        assert_eq!(fts_query("a A a").unwrap(), r#""a"*"#);
        let long: Vec<String> = (0..100).map(|i| format!("w{i}")).collect();
        let q = fts_query(&long.join(" ")).unwrap();
        assert_eq!(q.matches(" OR ").count(), MAX_TERMS - 1);
    }

    #[test]
    fn a_quote_inside_a_word_is_doubled() {
        assert_eq!(quoted_prefix(r#"a"b"#), r#""a""b"*"#);
    }
}
