//! `read_file`: a text file with numbered lines, a window at a time.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use async_trait::async_trait;
use rein_core::{
    Assessment, CancellationToken, PathLock, Tool, ToolAccess, ToolContext, ToolError, ToolOutput,
    ToolSpec,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::beneath::{self, Kind};
use crate::{fileio, workspace};

/// Lines returned when no `limit` is given.
pub const DEFAULT_LIMIT: usize = 2000;
/// Longest line shown, in characters; the rest is cut with a marker.
pub const MAX_LINE_CHARS: usize = 2000;
/// Most bytes of numbered lines returned by one call. Kept under the gate's
/// default 64 KiB output cap so a window is never cut in the middle.
pub const MAX_OUTPUT_BYTES: usize = 56 * 1024;
/// Bytes of one line kept in memory: enough for [`MAX_LINE_CHARS`]
/// characters of any UTF-8 (the rest of a longer line is counted, not kept).
const MAX_LINE_BYTES: usize = 4 * MAX_LINE_CHARS + 4;
/// Most bytes read from the window's first line on (64 MiB): a file that
/// goes on further is shown without its line count.
pub const MAX_SCAN_BYTES: u64 = 64 * 1024 * 1024;
/// How much of the file's start is checked for NUL bytes.
const BINARY_SNIFF_BYTES: usize = 8 * 1024;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Path of the file, relative to the workspace (or absolute inside it, or
    /// the absolute path of a saved tool output).
    path: String,
    /// First line to show, 1-based. Defaults to 1.
    #[schemars(range(min = 1))]
    offset: Option<usize>,
    /// Most lines to show. Defaults to 2000.
    #[schemars(range(min = 1))]
    limit: Option<usize>,
}

/// Reads a text file and shows it with line numbers.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadFile {
    /// Say more when the file is missing (the small profile's
    /// read_file): see [`ReadFile::with_hints`].
    hints: bool,
}

/// Most lines a missing file's hint shows.
const HINT_LINES: usize = 5;

impl ReadFile {
    /// The read_file of the small profile: asked for a file that does
    /// not exist, it also shows the lines of the workspace that name it
    /// (measured: the 1.5B model asked for `LICENSE` in a project whose
    /// README says "Released under the Apache License 2.0; see LICENSE",
    /// got "does not exist" and answered MIT).
    pub fn with_hints() -> ReadFile {
        ReadFile { hints: true }
    }
}

#[async_trait]
impl Tool for ReadFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_file".into(),
            description: format!(
                "Read a text file from the workspace (or a saved tool output, by the absolute \
                 path a result gave), shown with line numbers like `cat -n` (number, tab, line). Shows at most {DEFAULT_LIMIT} lines and about {} KiB per \
                 call, starting at `offset` (1-based); a note at the end tells you the offset \
                 to continue from. Lines longer than {MAX_LINE_CHARS} characters are cut. \
                 Binary files are refused; use glob to list folders.",
                MAX_OUTPUT_BYTES / 1024
            ),
            parameters: crate::schema_of::<Args>(),
        }
    }

    fn access(&self) -> ToolAccess {
        ToolAccess::Read
    }

    fn touches(&self, args: &Value) -> Vec<std::path::PathBuf> {
        crate::path_arg(args, "path")
    }

    fn assess(&self, args: &Value, ctx: &ToolContext) -> Assessment {
        crate::path_assessment(
            args,
            ctx,
            "path",
            false,
            format!("read {}", crate::str_arg(args, "path")),
        )
    }

    fn locks(&self, args: &Value, ctx: &ToolContext) -> Result<Vec<PathLock>, ToolError> {
        let args: Args = crate::parse_args("read_file", args.clone())?;
        Ok(vec![PathLock::Read(workspace::resolve_for_read(
            ctx, &args.path,
        )?)])
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = crate::parse_args("read_file", args)?;
        let path = workspace::resolve_for_read(&ctx, &args.path)?;
        let shown = workspace::display(&ctx.workspace, &path);
        let window = Window {
            offset: args.offset.unwrap_or(1).max(1),
            limit: args.limit.unwrap_or(DEFAULT_LIMIT).max(1),
        };
        let hint_ctx = self.hints.then(|| ctx.clone());
        let missing = path.clone();
        let read = tokio::task::spawn_blocking(move || read_window(&ctx, &path, &shown, window))
            .await
            .map_err(|e| ToolError::new(format!("reading the file failed: {e}")))?;
        match (read, hint_ctx) {
            (Err(e), Some(ctx)) if std::fs::symlink_metadata(&missing).is_err() => {
                Err(with_lines_naming(e, &ctx, &missing).await)
            }
            (read, _) => read.map(ToolOutput::ok),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Window {
    offset: usize,
    limit: usize,
}

fn read_window(
    ctx: &ToolContext,
    path: &Path,
    shown: &str,
    window: Window,
) -> Result<String, ToolError> {
    let mut file = fileio::open_read(ctx, path, shown)?.map_err(|e| open_error(shown, &e))?;
    let meta = beneath::stat_file(&file).map_err(|e| open_error(shown, &e))?;
    if meta.kind == Kind::Dir {
        return Err(ToolError::new(format!(
            "`{shown}` is a directory, not a file; use glob (e.g. pattern `{}/*`) to list its files",
            shown.trim_end_matches('/')
        )));
    }
    if meta.kind != Kind::File {
        return Err(ToolError::new(format!(
            "`{shown}` is not a regular file (a device, socket or pipe); read_file reads files only"
        )));
    }
    let size = meta.size;
    if size == 0 {
        return Ok(empty_note(shown));
    }
    let mut head = Vec::with_capacity(BINARY_SNIFF_BYTES);
    (&mut file)
        .take(BINARY_SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| read_error(shown, &e))?;
    if head.contains(&0) {
        return Err(binary_error(shown, size));
    }
    let reader = BufReader::with_capacity(64 * 1024, head.as_slice().chain(file));
    render(reader, shown, window, &ctx.cancel)
}

/// A text read by other means (an editor's buffer) shown as `read_file`
/// shows a file: the same window, numbering, cuts and notes. `offset` and
/// `limit` default as the tool's arguments do.
pub fn render_text(
    text: &str,
    shown: &str,
    offset: Option<usize>,
    limit: Option<usize>,
    cancel: &CancellationToken,
) -> Result<String, ToolError> {
    if text.is_empty() {
        return Ok(empty_note(shown));
    }
    let head = &text.as_bytes()[..text.len().min(BINARY_SNIFF_BYTES)];
    if head.contains(&0) {
        return Err(binary_error(shown, text.len() as u64));
    }
    let window = Window {
        offset: offset.unwrap_or(1).max(1),
        limit: limit.unwrap_or(DEFAULT_LIMIT).max(1),
    };
    render(text.as_bytes(), shown, window, cancel)
}

fn empty_note(shown: &str) -> String {
    format!("`{shown}` is empty (0 bytes).")
}

fn binary_error(shown: &str, size: u64) -> ToolError {
    ToolError::new(format!(
        "`{shown}` looks like a binary file ({size} bytes); read_file shows text only. \
         Use bash (e.g. `file`, `xxd | head`) to inspect it."
    ))
}

/// One line as read: at most [`MAX_LINE_BYTES`] of it kept.
#[derive(Debug, Default)]
struct LineRead {
    /// Bytes of the line, newline included.
    bytes: u64,
    /// Characters of the line past what was kept.
    dropped_chars: u64,
    /// The scan budget ran out before the line ended.
    unfinished: bool,
}

/// Read one line into `kept` (at most `keep` bytes of it; the rest is
/// counted, not stored), reading at most `budget` bytes; `None` at the end
/// of the file.
fn read_line(
    reader: &mut impl BufRead,
    kept: &mut Vec<u8>,
    keep: usize,
    budget: Option<u64>,
    cancel: &CancellationToken,
) -> std::io::Result<Option<LineRead>> {
    kept.clear();
    let mut line = LineRead::default();
    loop {
        if cancel.is_cancelled() {
            return Err(std::io::Error::other("cancelled"));
        }
        let avail = reader.fill_buf()?;
        if avail.is_empty() {
            return Ok((line.bytes > 0).then_some(line));
        }
        let mut chunk = match avail.iter().position(|&b| b == b'\n') {
            Some(i) => &avail[..=i],
            None => avail,
        };
        let ends = chunk.last() == Some(&b'\n');
        if let Some(b) = budget {
            let left = usize::try_from(b.saturating_sub(line.bytes)).unwrap_or(usize::MAX);
            if chunk.len() > left {
                chunk = &chunk[..left];
                line.unfinished = true;
            }
        }
        let room = keep.saturating_sub(kept.len()).min(chunk.len());
        kept.extend_from_slice(&chunk[..room]);
        if keep > 0 {
            // Characters start at every byte that is not a UTF-8
            // continuation byte.
            let mut dropped = &chunk[room..];
            if ends && !line.unfinished {
                dropped = dropped.strip_suffix(b"\n").unwrap_or(dropped);
                dropped = dropped.strip_suffix(b"\r").unwrap_or(dropped);
            }
            line.dropped_chars += dropped.iter().filter(|&&b| (b as i8) >= -0x40).count() as u64;
        }
        let used = chunk.len();
        line.bytes += used as u64;
        reader.consume(used);
        if line.unfinished {
            return Ok(Some(line));
        }
        if ends && used > 0 {
            return Ok(Some(line));
        }
    }
}

/// Number the lines of `reader` inside `window`, within the byte budget.
/// Memory stays bounded whatever the file holds: lines are cut at
/// [`MAX_LINE_BYTES`] while reading, and at most [`MAX_SCAN_BYTES`] are read
/// from the window's first line on (beyond that the line count is not
/// known).
fn render(
    mut reader: impl BufRead,
    shown: &str,
    window: Window,
    cancel: &CancellationToken,
) -> Result<String, ToolError> {
    let mut out = String::new();
    let mut buf = Vec::new();
    let mut total = 0usize;
    let mut last_shown = 0usize;
    let mut stopped_by_bytes = false;
    let mut scanned: u64 = 0;
    let mut scan_stopped = false;
    loop {
        let next = total + 1;
        let budget = (next >= window.offset).then(|| MAX_SCAN_BYTES.saturating_sub(scanned));
        if budget == Some(0) {
            scan_stopped = true;
            break;
        }
        let wanted =
            next >= window.offset && next - window.offset < window.limit && !stopped_by_bytes;
        let keep = if wanted { MAX_LINE_BYTES } else { 0 };
        let Some(read) = read_line(&mut reader, &mut buf, keep, budget, cancel)
            .map_err(|e| read_error(shown, &e))?
        else {
            break;
        };
        total = next;
        if budget.is_some() {
            scanned += read.bytes;
        }
        if wanted {
            let line = numbered_line(total, &buf, &read);
            if !out.is_empty() && out.len() + line.len() > MAX_OUTPUT_BYTES {
                stopped_by_bytes = true;
            } else {
                out.push_str(&line);
                last_shown = total;
            }
        }
        if read.unfinished {
            scan_stopped = true;
            break;
        }
    }
    if window.offset > total {
        return Err(ToolError::new(format!(
            "offset {} is past the end of `{shown}`, which has {total} line{}",
            window.offset,
            if total == 1 { "" } else { "s" }
        )));
    }
    if scan_stopped {
        out.push_str(&format!(
            "[showing lines {}-{last_shown}; the file goes on past the {} MiB read from line {} \
             on, so its line count is unknown; call read_file with offset={} to continue]\n",
            window.offset,
            MAX_SCAN_BYTES / (1024 * 1024),
            window.offset,
            last_shown + 1
        ));
    } else if last_shown < total {
        out.push_str(&format!(
            "[showing lines {}-{last_shown} of {total}; call read_file with offset={} to continue]\n",
            window.offset,
            last_shown + 1
        ));
    }
    if out.ends_with('\n') {
        out.pop();
    }
    Ok(out)
}

/// One `cat -n` style line, cut when very long, ending in `\n`.
fn numbered_line(number: usize, raw: &[u8], read: &LineRead) -> String {
    let mut raw = raw.strip_suffix(b"\n").unwrap_or(raw);
    raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    let text = String::from_utf8_lossy(raw);
    let mut line = format!("{number:>6}\t");
    let cut = text.char_indices().nth(MAX_LINE_CHARS).map(|(i, _)| i);
    let shown_end = cut.unwrap_or(text.len());
    line.push_str(&text[..shown_end]);
    let more = text[shown_end..].chars().count() as u64 + read.dropped_chars;
    if read.unfinished {
        line.push_str(&format!("… [line cut: at least {more} more characters]"));
    } else if more > 0 {
        line.push_str(&format!("… [line cut: {more} more characters]"));
    }
    line.push('\n');
    line
}

/// `error` (the file `missing` does not exist) with the lines of the
/// workspace that name the file's stem in any case, if any.
async fn with_lines_naming(error: ToolError, ctx: &ToolContext, missing: &Path) -> ToolError {
    let stem = missing
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    if stem.chars().count() < 3 {
        return error;
    }
    let lines = crate::grep::lines_holding(ctx, stem, HINT_LINES).await;
    if lines.is_empty() {
        return error;
    }
    ToolError::new(format!(
        "{error}. Lines that name `{stem}` (any case):\n{}",
        lines.join("\n")
    ))
}

fn open_error(shown: &str, e: &std::io::Error) -> ToolError {
    match e.kind() {
        std::io::ErrorKind::NotFound => ToolError::new(format!(
            "`{shown}` does not exist; use glob to find the right path"
        )),
        std::io::ErrorKind::PermissionDenied => {
            ToolError::new(format!("`{shown}` cannot be read: permission denied"))
        }
        _ => ToolError::new(format!("cannot open `{shown}`: {e}")),
    }
}

fn read_error(shown: &str, e: &std::io::Error) -> ToolError {
    ToolError::new(format!("error while reading `{shown}`: {e}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn run(text: &str, offset: usize, limit: usize) -> Result<String, ToolError> {
        render(
            text.as_bytes(),
            "f.txt",
            Window { offset, limit },
            &CancellationToken::new(),
        )
    }

    fn ctx(workspace: &Path, read_roots: Vec<std::path::PathBuf>) -> ToolContext {
        ToolContext {
            workspace: workspace.to_path_buf(),
            session_id: "s".into(),
            call_id: "c".into(),
            cancel: rein_core::CancellationToken::new(),
            session: rein_core::SessionHandle::new(
                std::sync::Arc::new(rein_core::InMemorySessionStore::new()),
                "s",
            ),
            sandbox: rein_core::SandboxPolicy::default(),
            read_roots,
            events: None,
        }
    }

    #[tokio::test]
    async fn a_saved_output_in_a_read_root_is_read_and_described_by_its_absolute_path() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let ws = base.join("ws");
        let outputs = base.join("data/sessions/s/outputs");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&outputs).unwrap();
        let saved = outputs.join("call_7.txt");
        std::fs::write(&saved, "line one\nline two\n").unwrap();
        let args = serde_json::json!({"path": saved.to_str().unwrap(), "offset": 2});

        let with_root = ctx(&ws, vec![outputs.clone()]);
        let out = ReadFile::default()
            .call(args.clone(), with_root.clone())
            .await
            .unwrap();
        assert_eq!(out.content, "     2\tline two");
        assert_eq!(
            ReadFile::default().locks(&args, &with_root).unwrap(),
            [PathLock::Read(saved.clone())]
        );
        let a = ReadFile::default().assess(&args, &with_root);
        assert_eq!(a.subjects, [saved.display().to_string()]);
        assert_eq!(a.reads, std::slice::from_ref(&saved));

        // Without the read root the same path is outside the workspace.
        let without = ctx(&ws, Vec::new());
        let e = ReadFile::default()
            .call(args.clone(), without.clone())
            .await
            .unwrap_err();
        assert!(e.to_string().contains("outside the workspace"), "{e}");
        assert!(ReadFile::default().locks(&args, &without).is_err());
    }

    #[test]
    fn lines_are_numbered_like_cat_n() {
        assert_eq!(run("a\nb\n", 1, 10).unwrap(), "     1\ta\n     2\tb");
        assert_eq!(run("a\r\nb", 1, 10).unwrap(), "     1\ta\n     2\tb");
    }

    #[test]
    fn a_window_ends_with_how_to_read_on() {
        let text: String = (1..=10).map(|i| format!("l{i}\n")).collect();
        let out = run(&text, 3, 2).unwrap();
        assert_eq!(
            out,
            "     3\tl3\n     4\tl4\n[showing lines 3-4 of 10; call read_file with offset=5 to continue]"
        );
        assert!(!run(&text, 9, 5).unwrap().contains("showing"));
    }

    #[test]
    fn offset_past_the_end_names_the_line_count() {
        let e = run("a\nb\n", 5, 10).unwrap_err();
        assert_eq!(
            e.to_string(),
            "offset 5 is past the end of `f.txt`, which has 2 lines"
        );
    }

    #[test]
    fn long_lines_are_cut_with_a_marker() {
        let text = "é".repeat(MAX_LINE_CHARS + 7);
        let out = run(&text, 1, 1).unwrap();
        assert!(out.ends_with("… [line cut: 7 more characters]"), "{out}");
    }

    #[test]
    fn a_long_line_is_counted_not_kept_and_the_next_lines_still_show() {
        let text = format!("{}\nnext\n", "a".repeat(100_000));
        let out = run(&text, 1, 10).unwrap();
        let mut lines = out.lines();
        let first = lines.next().unwrap();
        assert!(
            first.ends_with(&format!(
                "… [line cut: {} more characters]",
                100_000 - MAX_LINE_CHARS
            )),
            "{}",
            &first[first.len() - 60..]
        );
        assert_eq!(lines.next(), Some("     2\tnext"));
        // Multi-byte characters past the kept bytes are counted as
        // characters, not bytes.
        let text = "é".repeat(10_000);
        let out = run(&text, 1, 1).unwrap();
        assert!(
            out.ends_with("… [line cut: 8000 more characters]"),
            "{out:.40}"
        );
    }

    #[test]
    fn the_byte_budget_stops_early_and_says_where_to_continue() {
        let text: String = (0..5000)
            .map(|_| format!("{}\n", "x".repeat(100)))
            .collect();
        let out = run(&text, 1, 5000).unwrap();
        assert!(out.len() <= MAX_OUTPUT_BYTES + 200);
        let last = out.lines().last().unwrap();
        assert!(last.starts_with("[showing lines 1-"), "{last}");
        assert!(
            last.contains("of 5000; call read_file with offset="),
            "{last}"
        );
    }
}
