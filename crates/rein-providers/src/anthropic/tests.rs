use super::*;

#[test]
fn key_shaped_text_is_masked_and_short_words_are_kept() {
    assert_eq!(
        redact_keys("bad key sk-ant-api03-abcdefghijklmnop0123 here, sk-x ok"),
        "bad key sk-[redacted] here, sk-x ok"
    );
}

#[test]
fn long_messages_are_cut_at_a_character_boundary() {
    let s = "é".repeat(600);
    let cut = snippet(&s);
    assert_eq!(cut.chars().count(), 503);
}
