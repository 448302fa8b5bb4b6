use super::*;
use crate::theme::ColorLevel;

fn render(src: &str, width: u16) -> String {
    plain_text(&render_markdown(src, width, &Theme::plain()))
}

const DOC: &str = "\
# Rein

An *agent harness* that runs **tools** for you, with `inline code`, a
[link](https://example.com/docs) and ~~old~~ text that goes on long enough to wrap.

## Steps

1. Install it:
   ```sh
   cargo install rein # then run it
   ```
2. Configure the model and the tools you trust, which can take a while to get right.
   - nested item
     - deeper item
- [x] done
- [ ] todo

> A quote that is long enough to need wrapping inside the quote bar.
> > nested

| Tool | Purpose | Risk |
|:-----|:-------:|-----:|
| read | reads files | low |
| bash | runs commands | high |

---

```rust
fn main() {
    println!(\"hello\");
}
```
";

#[test]
fn snapshot_of_a_representative_document_at_width_80() {
    insta::assert_snapshot!(render(DOC, 80));
}

#[test]
fn snapshot_of_a_representative_document_at_width_40() {
    insta::assert_snapshot!(render(DOC, 40));
}

#[test]
fn lines_never_exceed_the_width() {
    for w in [20u16, 40, 80] {
        for line in render_markdown(DOC, w, &Theme::plain()) {
            assert!(line.width() <= usize::from(w), "{w}: {line:?}");
        }
    }
    // Narrower than the prefixes: no panic, no endless loop.
    for w in 0..6 {
        assert!(!render_markdown(DOC, w, &Theme::plain()).is_empty());
    }
}

#[test]
fn no_blank_line_at_start_or_end_and_one_between_blocks() {
    assert_eq!(
        render("\n\npara one\n\n\n\npara two\n\n", 40),
        "para one\n\npara two"
    );
    assert_eq!(render("", 40), "");
    // Blocks that draw nothing yet (while streaming) add no blank line.
    assert_eq!(render("para\n\n```", 40), "para");
    assert_eq!(render("para\n\n>", 40), "para");
    assert_eq!(render("para\n\n- ", 40), "para\n\n•");
}

#[test]
fn streaming_partial_fences_render_as_code_so_far() {
    let src = "Look:\n\n```rust\nfn main() {\n    let x = 1;";
    assert_eq!(render(src, 40), "Look:\n\n  fn main() {\n      let x = 1;");
    let t = Theme::with_level(ColorLevel::TrueColor);
    let lines = render_markdown(src, 40, &t);
    let fn_span = lines[2].spans.iter().find(|s| s.content == "fn");
    assert_eq!(fn_span.map(|s| s.style), Some(t.style(Role::Keyword)));
    // Every prefix of a document renders without panicking.
    for (i, _) in DOC.char_indices() {
        render_markdown(&DOC[..i], 30, &t);
    }
}

#[test]
fn nested_lists_wrap_with_hanging_indent() {
    let src = "- outer item with enough words to wrap around\n  - inner item with \
            enough words to wrap too\n- [ ] a task with enough words to wrap";
    insta::assert_snapshot!(render(src, 24), @r"
        • outer item with enough
          words to wrap around
          ◦ inner item with
            enough words to wrap
            too
        • [ ] a task with enough
              words to wrap
        ");
}

#[test]
fn ordered_lists_number_from_their_start() {
    assert_eq!(render("7. seven\n8. eight", 40), "7. seven\n8. eight");
    assert_eq!(render("- a\n\n- b", 40), "• a\n\n• b");
}

#[test]
fn wide_characters_wrap_by_display_width() {
    let out = render("中文字符很宽 这是一个测试句子", 10);
    assert_eq!(out, "中文字符很\n宽 这是一\n个测试句子");
    for line in out.lines() {
        assert!(line.width() <= 10, "{line}");
    }
    assert_eq!(render("abcdefghijklmnop", 5), "abcde\nfghij\nklmno\np");
}

#[test]
fn table_falls_back_to_rows_at_narrow_width() {
    let src = "| Name | Description |\n|---|---|\n| a | first letter |\n| b | second |";
    assert_eq!(
        render(src, 40),
        "Name │ Description\n─────┼─────────────\na    │ first letter\nb    │ second"
    );
    insta::assert_snapshot!(render(src, 12), @r"
        Name │
        Description
        a │ first
        letter
        b │ second
        ");
}

#[test]
fn code_block_is_highlighted_in_colour_and_plain_without() {
    let src = "```rust\nlet x = 1;\n```";
    let t = Theme::with_level(ColorLevel::Ansi256);
    let lines = render_markdown(src, 40, &t);
    let kw = lines[0].spans.iter().find(|s| s.content == "let");
    assert_eq!(kw.map(|s| s.style), Some(t.style(Role::Keyword)));
    assert!(kw.is_some_and(|s| s.style.fg.is_some()));
    let plain = render_markdown(src, 40, &Theme::plain());
    assert!(plain[0].spans.iter().all(|s| s.style.fg.is_none()));
    assert_eq!(plain_text(&plain), "  let x = 1;");
}

#[test]
fn long_code_lines_are_cut_with_an_ellipsis() {
    assert_eq!(render("    0123456789abcdef", 10), "  0123456…");
}

#[test]
fn links_show_their_url_when_it_differs_from_the_text() {
    let t = Theme::with_level(ColorLevel::Ansi16);
    let lines = render_markdown("see [docs](https://x.io) or <https://y.io>", 80, &t);
    assert_eq!(
        plain_text(&lines),
        "see docs (https://x.io) or https://y.io"
    );
    let docs = lines[0].spans.iter().find(|s| s.content == "docs");
    assert_eq!(docs.map(|s| s.style), Some(t.style(Role::Link)));
    let url = lines[0].spans.iter().find(|s| s.content.contains("x.io"));
    assert!(url.is_some_and(|s| s.style.add_modifier.contains(Modifier::DIM)));
}

#[test]
fn inline_styles_and_headings() {
    let t = Theme::with_level(ColorLevel::Ansi16);
    let lines = render_markdown("## Title\n\n**b** *i* ~~s~~ `c`", 80, &t);
    assert_eq!(plain_text(&lines), "## Title\n\nb i s c");
    assert_eq!(lines[0].spans[0].style, t.style(Role::Heading));
    let style = |text: &str| {
        lines[2]
            .spans
            .iter()
            .find(|s| s.content == text)
            .map(|s| s.style)
    };
    assert_eq!(style("b"), Some(t.style(Role::Strong)));
    assert_eq!(style("i"), Some(t.style(Role::Emphasis)));
    assert!(style("s").is_some_and(|s| s.add_modifier.contains(Modifier::CROSSED_OUT)));
    assert_eq!(style("c"), Some(t.style(Role::InlineCode)));
}

#[test]
fn quotes_nest_and_html_is_plain_text() {
    assert_eq!(render("> a\n>\n> > b", 40), "▌ a\n▌\n▌ ▌ b");
    assert_eq!(render("<div>\nhi\n</div>", 40), "<div>\nhi\n</div>");
    assert_eq!(render("a <b>x</b>\nc  \nd", 40), "a <b>x</b> c\nd");
}

#[test]
fn a_two_thousand_line_document_renders_in_one_pass() {
    let block = "## Section\n\nSome *text* with `code` and a [link](http://a.b).\n\n\
            - item one\n- item two\n\n```py\nx = 1  # c\n```\n\n\
            | a | b |\n|---|---|\n| 1 | 2 |\n\n";
    let small: String = block.repeat(10);
    let big: String = block.repeat(140);
    assert!(big.lines().count() >= 2000);
    let n_small = render_markdown(&small, 80, &Theme::plain()).len();
    let n_big = render_markdown(&big, 80, &Theme::plain()).len();
    // Each block renders the same wherever it is: no state leaks along
    // the document, and the output grows linearly with it.
    assert_eq!(n_big + 1, 14 * (n_small + 1));
}
