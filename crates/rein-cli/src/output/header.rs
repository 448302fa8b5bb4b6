//! The line `rein exec` starts with (session, model, workspace, mode),
//! fitted to the terminal.
//!
//! Steps:
//! 1. The header is a list of parts ("session ID", "provider/model", the
//!    workspace, "auto mode", …), none of which may be broken.
//! 2. Without a width (stderr is a pipe or a file) they make one line.
//! 3. With one, parts join with ` · ` while they fit; the next part starts
//!    a new line led by `· `. A part wider than a line is shortened: a
//!    path keeps its last folders (`…/src/project`), anything else its
//!    start.

use unicode_width::UnicodeWidthStr;

/// One part of the header.
pub struct Part {
    pub text: String,
    /// A path: shortened from the left.
    pub is_path: bool,
}

impl Part {
    pub fn word(text: String) -> Part {
        Part {
            text,
            is_path: false,
        }
    }

    pub fn path(text: String) -> Part {
        Part {
            text,
            is_path: true,
        }
    }
}

const SEPARATOR: &str = " · ";
/// What a continued line starts with.
const LEAD: &str = "· ";

/// The header's lines: one without a `width`, else as many as it takes
/// for no part to be broken.
pub fn lines(parts: &[Part], width: Option<usize>) -> Vec<String> {
    let Some(width) = width else {
        let texts: Vec<&str> = parts.iter().map(|p| p.text.as_str()).collect();
        return vec![texts.join(SEPARATOR)];
    };
    let room = width.saturating_sub(LEAD.width()).max(8);
    let mut out: Vec<String> = Vec::new();
    let mut line = String::new();
    for part in parts {
        let text = if part.text.width() > room {
            shorten(part, room)
        } else {
            part.text.clone()
        };
        if line.is_empty() {
            line = text;
        } else if line.width() + SEPARATOR.width() + text.width() <= width {
            line.push_str(SEPARATOR);
            line.push_str(&text);
        } else {
            out.push(std::mem::take(&mut line));
            line = format!("{LEAD}{text}");
        }
    }
    out.push(line);
    out
}

/// `part` in at most `room` columns.
fn shorten(part: &Part, room: usize) -> String {
    if !part.is_path {
        return rein_tui::cells::fit(&part.text, room);
    }
    // The last folders that fit after "…/".
    let mut tail = String::new();
    for component in part.text.rsplit('/').filter(|c| !c.is_empty()) {
        let longer = if tail.is_empty() {
            component.to_string()
        } else {
            format!("{component}/{tail}")
        };
        if longer.width() + "…/".width() > room {
            break;
        }
        tail = longer;
    }
    if tail.is_empty() {
        // Not even the last folder fits: its start.
        let last = part.text.rsplit('/').find(|c| !c.is_empty()).unwrap_or("");
        return rein_tui::cells::fit(last, room);
    }
    format!("…/{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(workspace: &str) -> Vec<Part> {
        vec![
            Part::word("rein".into()),
            Part::word("session 01jexample0000000000000000".into()),
            Part::word("openai/gpt-4.1-mini".into()),
            Part::path(workspace.into()),
            Part::word("auto mode".into()),
        ]
    }

    #[test]
    fn without_a_width_the_header_is_one_line() {
        let shown = lines(&parts("/w"), None);
        assert_eq!(
            shown,
            ["rein · session 01jexample0000000000000000 · openai/gpt-4.1-mini · /w · auto mode"]
        );
    }

    #[test]
    fn parts_move_whole_to_the_next_line_and_long_paths_keep_their_end() {
        let ws = "/home/someone/projects/clients/a-rather-long-folder-name/the-project";
        for width in [120, 60, 40] {
            let shown = lines(&parts(ws), Some(width));
            for line in &shown {
                assert!(line.width() <= width, "{width}: {line:?}");
            }
            let text = shown.join(" ");
            assert!(
                text.contains("session 01jexample0000000000000000"),
                "{width}: {shown:?}"
            );
            assert!(text.contains("auto mode"), "{width}: {shown:?}");
            assert!(text.contains("the-project"), "{width}: {shown:?}");
        }
        assert_eq!(lines(&parts(ws), Some(200)).len(), 1);
        // As many of the last folders as fit.
        let narrow = lines(&parts(ws), Some(60)).join("\n");
        assert!(
            narrow.contains("· …/projects/clients/a-rather-long-folder-name/the-project"),
            "{narrow}"
        );
    }
}
