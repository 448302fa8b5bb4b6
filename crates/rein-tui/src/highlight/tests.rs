use super::*;
use crate::theme::ColorLevel;
use ratatui::style::Modifier;

fn color() -> Theme {
    Theme::with_level(ColorLevel::TrueColor)
}

/// Asserts that the span whose trimmed text is `token` on line `line`
/// has the style of `role`.
fn check(code: &str, lang: &str, line: usize, token: &str, role: Role) {
    let t = color();
    let lines = highlight(code, lang, &t);
    let spans: Vec<(String, _)> = lines[line]
        .spans
        .iter()
        .map(|s| (s.content.trim().to_string(), s.style))
        .collect();
    let found = spans.iter().find(|(text, _)| text == token);
    match found {
        Some((_, style)) => assert_eq!(*style, t.style(role), "{token:?} in {code:?}"),
        None => panic!("no span {token:?} in {spans:?}"),
    }
}

#[test]
fn languages_are_recognised_by_tag_and_alias() {
    for tag in [
        "Rust", "rs", "PY", "jsx", "tsx", "c++", "hpp", "zsh", "yml", "patch", "xml",
    ] {
        assert!(language_known(tag), "{tag}");
    }
    assert!(!language_known("brainfuck"));
    assert!(!language_known(""));
}

#[test]
fn one_line_per_source_line_and_tabs_expanded() {
    let t = Theme::plain();
    assert_eq!(highlight("a\nb\n", "rust", &t).len(), 2);
    assert_eq!(highlight("a\n\nb", "nope", &t).len(), 3);
    assert!(highlight("", "rust", &t).is_empty());
    let l = &highlight("\tx", "python", &t)[0];
    let text: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
    assert_eq!(text, "    x");
}

#[test]
fn rust_tokens_get_their_roles() {
    let code = "pub fn main() -> Result<u32, String> { let s = \"a\\\"b\"; 0x1F + 1.5e3 } // done";
    check(code, "rust", 0, "pub", Role::Keyword);
    check(code, "rust", 0, "main", Role::Function);
    check(code, "rust", 0, "String", Role::TypeName);
    check(code, "rust", 0, "\"a\\\"b\"", Role::StringLit);
    check(code, "rust", 0, "0x1F", Role::Number);
    check(code, "rust", 0, "1.5e3", Role::Number);
    check(code, "rust", 0, "// done", Role::Comment);
    check("println!(\"x\")", "rust", 0, "println!", Role::Function);
    check("let c = 'x';", "rust", 0, "'x'", Role::StringLit);
    check("fn f<'a>()", "rust", 0, "'a", Role::Keyword);
}

#[test]
fn multi_line_strings_and_comments_carry_across_lines() {
    let rs = "let s = r#\"one\n\"quoted\" two\n\"#; fn";
    check(rs, "rust", 1, "\"quoted\" two", Role::StringLit);
    check(rs, "rust", 2, "fn", Role::Keyword);
    let py = "x = '''start\nmiddle # not a comment\nend''' # comment";
    check(py, "py", 1, "middle # not a comment", Role::StringLit);
    check(py, "py", 2, "# comment", Role::Comment);
    let js = "const s = `a ${b}\nc`; let d";
    check(js, "js", 1, "c`", Role::StringLit);
    check(js, "js", 1, "let", Role::Keyword);
    let c = "int a; /* one\ntwo */ return";
    check(c, "c", 1, "two */", Role::Comment);
    check(c, "c", 1, "return", Role::Keyword);
    let nested = "/* a /* b */ still\n*/ fn";
    check(nested, "rust", 1, "fn", Role::Keyword);
    // A C string does not run past the end of its line.
    check("s = \"open\nint x;", "c", 1, "int", Role::TypeName);
}

#[test]
fn other_languages_get_their_roles() {
    check("def go(x):", "python", 0, "go", Role::Function);
    check("class thing:", "python", 0, "thing", Role::TypeName);
    check("func (r T) Name() error {", "go", 0, "Name", Role::Function);
    check(
        "func (r T) Name() error {",
        "go",
        0,
        "error",
        Role::TypeName,
    );
    check("SELECT id FROM t -- c", "sql", 0, "SELECT", Role::Keyword);
    check("SELECT id FROM t -- c", "sql", 0, "-- c", Role::Comment);
    check("echo $HOME # hi", "bash", 0, "$HOME", Role::TypeName);
    check("echo a#b", "sh", 0, "echo a#b", Role::CodeBlock);
    check("{\"k\": true}", "json", 0, "\"k\"", Role::Function);
    check("{\"k\": \"v\"}", "json", 0, "\"v\"", Role::StringLit);
    check("[deps]\nname = \"x\"", "toml", 0, "[deps]", Role::TypeName);
    check("[deps]\nname = \"x\"", "toml", 1, "name", Role::Function);
    check("- key: yes # c", "yaml", 0, "key", Role::Function);
    check("- key: yes # c", "yaml", 0, "yes", Role::Keyword);
    check("#include <stdio.h>", "c", 0, "#include", Role::Keyword);
    check("#include <stdio.h>", "c", 0, "<stdio.h>", Role::StringLit);
    check("@Override public", "java", 0, "@Override", Role::Function);
    let html = "<a href=\"x\">t</a> <!-- c\nc -->";
    check(html, "html", 0, "<a", Role::Keyword);
    check(html, "html", 0, "\"x\"", Role::StringLit);
    check(html, "html", 1, "c -->", Role::Comment);
    check("+added\n-gone", "diff", 0, "+added", Role::DiffAdd);
    check("+added\n-gone", "diff", 1, "-gone", Role::DiffDel);
}

#[test]
fn unknown_language_is_plain_code_text() {
    let t = color();
    let lines = highlight("fn x\n\"y\"", "klingon", &t);
    assert_eq!(lines.len(), 2);
    for l in &lines {
        for s in &l.spans {
            assert_eq!(s.style, t.style(Role::CodeBlock));
        }
    }
}

#[test]
fn plain_theme_has_no_colour_but_keeps_comment_italics() {
    let t = Theme::plain();
    let lines = highlight("fn main() {} // c", "rust", &t);
    assert!(lines[0].spans.iter().all(|s| s.style.fg.is_none()));
    let comment = lines[0].spans.iter().find(|s| s.content == "// c");
    assert!(comment.is_some_and(|s| s.style.add_modifier.contains(Modifier::ITALIC)));
}

#[test]
fn never_panics_and_keeps_the_text_on_odd_input() {
    let tricky = "r#\"é\"# b'\\' '\\u{1F600}' \"\u{1F600}\\\n/* ✓ /* */\n'''x\"\"\"\n\
            `${é}` $ @\t#x <a b='c' <!-- é\n0x 1e+ .5 'a 中文() @@ -1 +2 @@\n\\ \r\u{7}";
    let langs = [
        "rust", "py", "js", "ts", "go", "c", "cpp", "java", "sh", "json", "toml", "yaml", "sql",
        "diff", "html", "none",
    ];
    let t = color();
    let mut inputs: Vec<&str> = vec![
        "", "\n", "\n\n", "'", "\"", "`", "/*", "r#", "r#\"", "b'", "'''", "<", "<!--", "$", "${",
        "@", "&", "-", "---", "0x", "\\",
    ];
    inputs.extend(tricky.char_indices().map(|(i, _)| &tricky[..i]));
    inputs.push(tricky);
    for lang in langs {
        for input in &inputs {
            let lines = highlight(input, lang, &t);
            assert_eq!(lines.len(), input.lines().count(), "{lang} {input:?}");
            for (line, src) in lines.iter().zip(input.lines()) {
                let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
                assert_eq!(text, clean_line(src), "{lang} {input:?}");
            }
        }
    }
}
