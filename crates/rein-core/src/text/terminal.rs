//! Text made safe for a terminal.
//!
//! Text from a file, a command or a model may try to drive the terminal
//! that shows it: escape sequences clear the screen, move the cursor or
//! retitle the window, and Unicode's bidirectional controls reorder what is
//! shown so that code reads differently from what it is ("Trojan Source",
//! CVE-2021-42574). Invisible formatting characters (zero-width spaces,
//! word joiners, tag characters) hide text in plain sight. [`terminal_safe`]
//! removes escape sequences and control characters and shows every bidi
//! control and invisible formatting character as a visible `<U+XXXX>`
//! marker, so the reader sees that something is there.
//!
//! Two joiners keep their meaning where scripts and emoji need them: the
//! zero-width joiner and non-joiner between two non-ASCII characters (Indic
//! and Arabic-script words, emoji sequences), and tag characters right
//! after a black flag (subdivision flags). Between ASCII characters, where
//! they only hide things, they are shown.

use std::borrow::Cow;

/// Why a character may not reach a terminal as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Shown as itself.
    Plain,
    /// A bidirectional control: always made visible.
    Bidi,
    /// Invisible formatting: made visible.
    Invisible,
    /// A joiner that is kept between two non-ASCII characters.
    Joiner,
    /// A tag character: kept after a black flag or another kept tag.
    Tag,
}

fn kind(c: char) -> Kind {
    match c {
        '\u{061C}'
        | '\u{200E}'
        | '\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2066}'..='\u{2069}' => Kind::Bidi,
        '\u{200C}' | '\u{200D}' => Kind::Joiner,
        '\u{E0020}'..='\u{E007F}' => Kind::Tag,
        '\u{00AD}'
        | '\u{115F}'
        | '\u{1160}'
        | '\u{180E}'
        | '\u{200B}'
        | '\u{2028}'
        | '\u{2029}'
        | '\u{2060}'..='\u{2064}'
        | '\u{206A}'..='\u{206F}'
        | '\u{3164}'
        | '\u{FEFF}'
        | '\u{FFA0}'
        | '\u{FFF9}'..='\u{FFFB}'
        | '\u{1BCA0}'..='\u{1BCA3}'
        | '\u{1D173}'..='\u{1D17A}'
        | '\u{E0001}' => Kind::Invisible,
        _ => Kind::Plain,
    }
}

/// Whether `c` is a bidi control or an invisible formatting character that
/// [`terminal_safe`] may show as a marker.
pub fn is_hidden_format(c: char) -> bool {
    kind(c) != Kind::Plain
}

/// `text` safe to print on a terminal: escape sequences (CSI, OSC, DCS and
/// the two-byte ones, in their 7- and 8-bit forms) are removed whole, tabs
/// become four spaces, every other control character but the newline is
/// dropped, and bidi controls and invisible formatting characters become
/// `<U+XXXX>` markers (see the module docs for the joiners that stay).
/// Borrowed when nothing had to change.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    if !text
        .chars()
        .any(|c| (c.is_control() && c != '\n') || is_hidden_format(c))
    {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    // The last character written and whether a tag run is open.
    let mut prev: Option<char> = None;
    let mut in_tags = false;
    while let Some(c) = chars.next() {
        match c {
            '\n' => out.push('\n'),
            '\t' => out.push_str("    "),
            '\u{1b}' => skip_escape(&mut chars),
            '\u{9b}' => skip_csi(&mut chars),
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if c.is_control() => continue,
            c => {
                let keep = match kind(c) {
                    Kind::Plain => true,
                    Kind::Bidi | Kind::Invisible => false,
                    Kind::Joiner => {
                        prev.is_some_and(|p| !p.is_ascii())
                            && chars
                                .peek()
                                .is_some_and(|n| !n.is_ascii() && !n.is_control())
                    }
                    Kind::Tag => in_tags || prev == Some('\u{1F3F4}'),
                };
                in_tags = keep && kind(c) == Kind::Tag && c != '\u{E007F}';
                if keep {
                    out.push(c);
                } else {
                    out.push_str(&format!("<U+{:04X}>", u32::from(c)));
                }
                prev = Some(c);
                continue;
            }
        }
        prev = None;
        in_tags = false;
    }
    Cow::Owned(out)
}

/// Skip what follows an ESC: a CSI, a control string or one more byte.
fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.next() {
        // CSI: parameters, then one final byte in @..~.
        Some('[') => skip_csi(chars),
        // OSC, DCS, SOS, PM, APC: up to BEL or ESC \.
        Some(']' | 'P' | 'X' | '^' | '_') => skip_string(chars),
        // Two-byte sequences (ESC 7, ESC c, ...).
        _ => {}
    }
}

/// Skip a CSI's parameters and its final byte.
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for n in chars.by_ref() {
        if ('@'..='~').contains(&n) {
            break;
        }
    }
}

/// Skip a control string up to its terminator (BEL, ESC \ or ST).
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(n) = chars.next() {
        match n {
            '\u{7}' | '\u{9c}' => break,
            '\u{1b}' => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                break;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_go_whole_and_plain_text_stays_borrowed() {
        assert!(matches!(
            terminal_safe("plain text\nline two ✓ é 日本"),
            Cow::Borrowed(_)
        ));
        assert_eq!(terminal_safe("a\x1b[31mred\x1b[0m b"), "ared b");
        assert_eq!(terminal_safe("x\x1b]0;title\x07y"), "xy");
        assert_eq!(terminal_safe("\u{9b}2Jz"), "z");
        assert_eq!(terminal_safe("tab\there\r\x08\x07!"), "tab    here!");
        assert_eq!(terminal_safe("ok\x1b]0;never ends"), "ok");
    }

    #[test]
    fn trojan_source_bidi_controls_become_visible_markers() {
        // The classic: a comment that hides the end of a string.
        let line =
            "if access_level != \"user\u{202E} \u{2066}// Check if admin\u{2069} \u{2066}\" {";
        let shown = terminal_safe(line);
        assert_eq!(
            shown,
            "if access_level != \"user<U+202E> <U+2066>// Check if admin<U+2069> <U+2066>\" {"
        );
        for c in [
            '\u{061C}', '\u{200E}', '\u{200F}', '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}',
            '\u{202E}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}',
        ] {
            let s = format!("a{c}b");
            let shown = terminal_safe(&s);
            assert!(!shown.contains(c), "{:04X} survived", u32::from(c));
            assert_eq!(shown, format!("a<U+{:04X}>b", u32::from(c)));
        }
    }

    #[test]
    fn invisible_characters_inside_ascii_become_visible() {
        assert_eq!(terminal_safe("pass\u{200B}word"), "pass<U+200B>word");
        assert_eq!(terminal_safe("rm\u{200D} -rf"), "rm<U+200D> -rf");
        assert_eq!(terminal_safe("\u{FEFF}start"), "<U+FEFF>start");
        assert_eq!(terminal_safe("a\u{2060}b\u{00AD}c"), "a<U+2060>b<U+00AD>c");
        // Tag characters spell hidden ASCII ("hi") when not part of a flag.
        assert_eq!(
            terminal_safe("ok\u{E0068}\u{E0069}"),
            "ok<U+E0068><U+E0069>"
        );
        assert_eq!(terminal_safe("x\u{3164}y"), "x<U+3164>y");
    }

    #[test]
    fn emoji_and_script_joiners_and_flag_tags_stay() {
        let family = "👨\u{200D}👩\u{200D}👧";
        assert_eq!(terminal_safe(family), family);
        let persian = "می\u{200C}خواهم";
        assert_eq!(terminal_safe(persian), persian);
        let scotland = "🏴\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F} ok";
        assert_eq!(terminal_safe(scotland), scotland);
        // After the cancel tag, the run is over.
        assert_eq!(
            terminal_safe("🏴\u{E0067}\u{E007F}\u{E0068}"),
            "🏴\u{E0067}\u{E007F}<U+E0068>"
        );
        // A joiner at the edge of the text is shown.
        assert_eq!(terminal_safe("👨\u{200D}"), "👨<U+200D>");
    }
}
