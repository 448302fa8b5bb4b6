use super::*;

fn typed(s: &str) -> Editor {
    let mut e = Editor::new();
    for c in s.chars() {
        e.insert_char(c);
    }
    e
}

#[test]
fn typing_builds_text_and_moves_cursor() {
    let e = typed("hello");
    assert_eq!(e.text(), "hello");
    assert_eq!(e.cursor(), (0, 5));
    assert!(!e.is_empty());
    assert!(Editor::new().is_empty());
    assert_eq!(e.line_count(), 1);
}

#[test]
fn control_characters_are_not_typed() {
    let e = typed("a\x07b\x1bc\td");
    assert_eq!(e.text(), "abc\td");
}

#[test]
fn newline_in_the_middle_splits_the_line() {
    let mut e = typed("hello world");
    for _ in 0..6 {
        e.left();
    }
    e.newline();
    assert_eq!(e.text(), "hello\n world");
    assert_eq!(e.cursor(), (1, 0));
    assert_eq!(e.line_count(), 2);
}

#[test]
fn backspace_at_line_start_joins_lines() {
    let mut e = typed("ab\ncd");
    e.home();
    e.backspace();
    assert_eq!(e.text(), "abcd");
    assert_eq!(e.cursor(), (0, 2));
    e.backspace();
    assert_eq!(e.text(), "acd");
    assert_eq!(e.cursor(), (0, 1));
}

#[test]
fn delete_at_line_end_joins_the_next_line() {
    let mut e = typed("ab\ncd");
    assert!(e.up());
    e.end();
    e.delete();
    assert_eq!(e.text(), "abcd");
    assert_eq!(e.cursor(), (0, 2));
    e.delete();
    assert_eq!(e.text(), "abd");
}

#[test]
fn combining_marks_and_emoji_move_as_one() {
    let mut e = typed("e\u{301}x");
    assert_eq!(e.cursor(), (0, 2));
    e.left();
    e.left();
    assert_eq!(e.cursor(), (0, 0));
    e.right();
    assert_eq!(e.cursor(), (0, 1));
    assert_eq!(e.cursor_char_col(), 2);
    e.backspace();
    assert_eq!(e.text(), "x");

    let mut e = typed("a👍🏽b");
    assert_eq!(e.cursor(), (0, 3));
    e.left();
    e.backspace();
    assert_eq!(e.text(), "ab");
    let mut e = typed("👍🏽");
    e.home();
    e.delete();
    assert!(e.is_empty());
}

#[test]
fn word_moves_skip_blanks_and_words() {
    let mut e = typed("foo bar.baz  qux");
    e.word_left();
    assert_eq!(e.cursor(), (0, 13));
    e.word_left();
    assert_eq!(e.cursor(), (0, 8));
    e.word_left();
    assert_eq!(e.cursor(), (0, 7));
    e.word_left();
    assert_eq!(e.cursor(), (0, 4));
    e.home();
    e.word_right();
    assert_eq!(e.cursor(), (0, 3));
    e.word_right();
    assert_eq!(e.cursor(), (0, 7));
    // Across lines.
    let mut e = typed("ab\ncd");
    e.home();
    e.word_left();
    assert_eq!(e.cursor(), (0, 2));
    e.word_right();
    assert_eq!(e.cursor(), (1, 0));
}

#[test]
fn delete_word_left_is_ctrl_w() {
    let mut e = typed("git commit  -m");
    e.delete_word_left();
    assert_eq!(e.text(), "git commit  -");
    e.delete_word_left();
    assert_eq!(e.text(), "git commit  ");
    e.delete_word_left();
    assert_eq!(e.text(), "git ");
    let mut e = typed("a\n");
    e.delete_word_left();
    assert_eq!(e.text(), "a");
}

#[test]
fn delete_word_right_deletes_to_word_end() {
    let mut e = typed("foo bar baz");
    e.home();
    e.word_right();
    e.delete_word_right();
    assert_eq!(e.text(), "foo baz");
}

#[test]
fn kills_to_end_and_start() {
    let mut e = typed("hello world");
    for _ in 0..5 {
        e.left();
    }
    e.kill_to_end();
    assert_eq!(e.text(), "hello ");
    e.left();
    e.kill_to_start();
    assert_eq!(e.text(), " ");
    assert_eq!(e.cursor(), (0, 0));

    let mut e = typed("ab\ncd");
    assert!(e.up());
    e.end();
    e.kill_to_end();
    assert_eq!(e.text(), "abcd");
    let mut e = typed("ab\ncd");
    e.home();
    e.kill_to_start();
    assert_eq!(e.text(), "abcd");
    assert_eq!(e.cursor(), (0, 2));
}

#[test]
fn up_and_down_report_the_edges() {
    let mut e = typed("first line\nx\nthird line");
    assert!(!e.down());
    assert_eq!(e.cursor(), (2, 10));
    assert!(e.up());
    assert_eq!(e.cursor(), (1, 1));
    assert!(e.up());
    // The goal column survives the short line.
    assert_eq!(e.cursor(), (0, 10));
    assert!(!e.up());
    assert_eq!(e.cursor(), (0, 10));
    assert!(e.down());
    assert!(e.down());
    assert!(!e.down());
    let mut single = typed("one");
    assert!(!single.up());
    assert!(!single.down());
}

#[test]
fn insert_str_with_newlines_and_set_text() {
    let mut e = typed("ad");
    e.left();
    e.insert_str("b\r\nc");
    assert_eq!(e.text(), "ab\ncd");
    assert_eq!(e.cursor(), (1, 1));
    e.set_text("x\ny");
    assert_eq!(e.text(), "x\ny");
    assert_eq!(e.cursor(), (1, 1));
    e.clear();
    assert!(e.is_empty());
    assert_eq!(e.cursor(), (0, 0));
}

#[test]
fn small_paste_is_inserted_with_crlf_normalised() {
    let mut e = typed("<>");
    e.left();
    assert_eq!(e.paste("a\r\nb\rc\x1b[31md\x1b[0m"), PasteOutcome::Inserted);
    assert_eq!(e.text(), "<a\nb\ncd>");
    assert_eq!(e.cursor(), (2, 2));
    assert_eq!(e.submit(), "<a\nb\ncd>");
    assert!(e.is_empty());
}

#[test]
fn large_paste_collapses_and_expands_on_submit() {
    let big: String = (1..=42).map(|i| format!("line {i}\n")).collect();
    let mut e = typed("see ");
    let out = e.paste(&big);
    let PasteOutcome::Collapsed { placeholder } = out else {
        panic!("expected a collapsed paste, got {out:?}");
    };
    assert_eq!(placeholder, "[Pasted text #1 +42 lines]");
    assert_eq!(e.text(), format!("see {placeholder}"));
    assert_eq!(e.line_count(), 1);
    e.insert_str(" and ");
    let long = "x".repeat(1500);
    let out = e.paste(&long);
    assert_eq!(
        out,
        PasteOutcome::Collapsed {
            placeholder: "[Pasted text #2 1500 chars]".to_string()
        }
    );
    assert_eq!(e.submit(), format!("see {big} and {long}"));
    assert!(e.is_empty());
    // Numbering and stored pastes start afresh.
    let out = e.paste(&big);
    assert_eq!(
        out,
        PasteOutcome::Collapsed {
            placeholder: "[Pasted text #1 +42 lines]".to_string()
        }
    );
}

#[test]
fn placeholder_is_deleted_and_stepped_over_whole() {
    let big = "a\n".repeat(10);
    let mut e = typed("x");
    e.paste(&big);
    e.insert_char('y');
    e.left();
    e.left();
    assert_eq!(e.cursor(), (0, 1), "left steps over the placeholder");
    e.right();
    assert_eq!(e.cursor(), (0, 1 + "[Pasted text #1 +10 lines]".len()));
    e.backspace();
    assert_eq!(e.text(), "xy");
    assert_eq!(e.submit(), "xy", "the deleted paste is forgotten");

    let mut e = typed("x");
    e.paste(&big);
    e.home();
    e.right();
    e.delete();
    assert_eq!(e.text(), "x");

    let mut e = typed("x ");
    e.paste(&big);
    e.insert_char(' ');
    e.delete_word_left();
    assert_eq!(e.text(), "x ");
}

#[test]
fn up_down_never_land_inside_a_placeholder() {
    let mut e = typed("abcdefghij\n");
    e.paste(&"z\n".repeat(8));
    e.up();
    e.end();
    assert!(e.down());
    let (row, col) = e.cursor();
    assert_eq!(row, 1);
    assert_eq!(col, "[Pasted text #1 +8 lines]".len());
}

#[test]
fn binary_paste_is_rejected() {
    let mut e = typed("keep");
    let out = e.paste("PK\x03\x04\0\0\x14\0");
    assert_eq!(
        out,
        PasteOutcome::Rejected("binary paste ignored".to_string())
    );
    let out = e.paste("\x01\x02\x03\u{FFFD}\u{FFFD}ab");
    assert!(matches!(out, PasteOutcome::Rejected(_)));
    assert_eq!(e.text(), "keep");
}

#[test]
fn paste_strips_control_and_bidi_characters() {
    let mut e = Editor::new();
    assert_eq!(
        e.paste("a\x08b\tc\u{202E}d\x1b]0;title\x07e"),
        PasteOutcome::Inserted
    );
    assert_eq!(e.text(), "ab\tcde");
}

#[test]
fn replace_before_cursor_accepts_a_completion() {
    let mut e = typed("look at @sr please");
    for _ in 0.." please".len() {
        e.left();
    }
    e.replace_before_cursor(8, "@src/main.rs");
    assert_eq!(e.text(), "look at @src/main.rs please");
    assert_eq!(e.cursor(), (0, 20));
}

#[test]
fn wrapping_counts_display_columns() {
    let e = typed("abcdefgh");
    assert_eq!(e.visual_lines(3), vec!["abc", "def", "gh"]);
    assert_eq!(e.cursor_position(3), (2, 2));
    // Wide characters take two columns and never split.
    let mut e = typed("a日本語b");
    assert_eq!(e.visual_lines(4), vec!["a日", "本語", "b"]);
    assert_eq!(e.cursor_position(4), (2, 1));
    e.left();
    e.left();
    assert_eq!(e.cursor_position(4), (1, 2));
    e.home();
    assert_eq!(e.cursor_position(4), (0, 0));
    assert_eq!(e.desired_height(4, 10), 3);
    assert_eq!(e.desired_height(4, 2), 2);
}

#[test]
fn cursor_at_a_full_row_end_gets_its_own_row() {
    let mut e = typed("abcd\nxy");
    assert_eq!(e.visual_lines(4), vec!["abcd", "xy"]);
    assert!(e.up());
    e.end();
    assert_eq!(e.visual_lines(4), vec!["abcd", "", "xy"]);
    assert_eq!(e.cursor_position(4), (1, 0));
    let e = typed("ab\u{65e5}");
    assert_eq!(e.cursor_position(4), (1, 0));
    assert_eq!(e.desired_height(4, 5), 2);
}

#[test]
fn wrapped_multiline_layout_and_emoji_width() {
    let mut e = typed("👍🏽👍🏽👍🏽\n\tx");
    // The cursor ends a full row, so it gets an empty row of its own.
    assert_eq!(e.visual_lines(5), vec!["👍🏽👍🏽", "👍🏽", "    x", ""]);
    assert_eq!(e.cursor_position(5), (3, 0));
    assert!(e.up());
    assert_eq!(e.cursor_position(5), (1, 0));
    assert_eq!(Editor::new().visual_lines(10), vec![""]);
    assert_eq!(Editor::new().desired_height(10, 5), 1);
}

#[test]
fn scroll_offset_follows_the_cursor() {
    let mut e = typed("1\n2\n3\n4\n5");
    assert_eq!(e.scroll_offset(10, 3), 2);
    while e.up() {}
    assert_eq!(e.scroll_offset(10, 3), 0);
}
