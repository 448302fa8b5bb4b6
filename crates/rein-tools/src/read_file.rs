//! `read_file`: a text file with numbered lines, a window at a time.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use async_trait::async_trait;
use rein_core::{
    Assessment, PathLock, Tool, ToolAccess, ToolContext, ToolError, ToolOutput, ToolSpec,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::workspace;

/// Lines returned when no `limit` is given.
pub const DEFAULT_LIMIT: usize = 2000;
/// Longest line shown, in characters; the rest is cut with a marker.
pub const MAX_LINE_CHARS: usize = 2000;
/// Most bytes of numbered lines returned by one call. Kept under the gate's
/// default 64 KiB output cap so a window is never cut in the middle.
pub const MAX_OUTPUT_BYTES: usize = 56 * 1024;
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
pub struct ReadFile;

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
        tokio::task::spawn_blocking(move || read_window(&path, &shown, window))
            .await
            .map_err(|e| ToolError(format!("reading the file failed: {e}")))?
            .map(ToolOutput::ok)
    }
}

#[derive(Debug, Clone, Copy)]
struct Window {
    offset: usize,
    limit: usize,
}

fn read_window(path: &Path, shown: &str, window: Window) -> Result<String, ToolError> {
    let meta = std::fs::metadata(path).map_err(|e| open_error(shown, &e))?;
    if meta.is_dir() {
        return Err(ToolError(format!(
            "`{shown}` is a directory, not a file; use glob (e.g. pattern `{}/*`) to list its files",
            shown.trim_end_matches('/')
        )));
    }
    if !meta.is_file() {
        return Err(ToolError(format!(
            "`{shown}` is not a regular file (a device, socket or pipe); read_file reads files only"
        )));
    }
    let size = meta.len();
    if size == 0 {
        return Ok(format!("`{shown}` is empty (0 bytes)."));
    }
    let mut file = File::open(path).map_err(|e| open_error(shown, &e))?;
    let mut head = Vec::with_capacity(BINARY_SNIFF_BYTES);
    (&mut file)
        .take(BINARY_SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| read_error(shown, &e))?;
    if head.contains(&0) {
        return Err(ToolError(format!(
            "`{shown}` looks like a binary file ({size} bytes); read_file shows text only. \
             Use bash (e.g. `file`, `xxd | head`) to inspect it."
        )));
    }
    let reader = BufReader::new(head.as_slice().chain(file));
    render(reader, shown, window)
}

/// Number the lines of `reader` inside `window`, within the byte budget.
fn render(mut reader: impl BufRead, shown: &str, window: Window) -> Result<String, ToolError> {
    let mut out = String::new();
    let mut buf = Vec::new();
    let mut total = 0usize;
    let mut last_shown = 0usize;
    let mut stopped_by_bytes = false;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| read_error(shown, &e))?;
        if n == 0 {
            break;
        }
        total += 1;
        let in_window =
            total >= window.offset && total - window.offset < window.limit && !stopped_by_bytes;
        if !in_window {
            continue;
        }
        let line = numbered_line(total, &buf);
        if !out.is_empty() && out.len() + line.len() > MAX_OUTPUT_BYTES {
            stopped_by_bytes = true;
            continue;
        }
        out.push_str(&line);
        last_shown = total;
    }
    if window.offset > total {
        return Err(ToolError(format!(
            "offset {} is past the end of `{shown}`, which has {total} line{}",
            window.offset,
            if total == 1 { "" } else { "s" }
        )));
    }
    if last_shown < total {
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
fn numbered_line(number: usize, raw: &[u8]) -> String {
    let mut raw = raw.strip_suffix(b"\n").unwrap_or(raw);
    raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    let text = String::from_utf8_lossy(raw);
    let mut line = format!("{number:>6}\t");
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut, _)) => {
            let more = text[cut..].chars().count();
            line.push_str(&text[..cut]);
            line.push_str(&format!("… [line cut: {more} more characters]"));
        }
        None => line.push_str(&text),
    }
    line.push('\n');
    line
}

fn open_error(shown: &str, e: &std::io::Error) -> ToolError {
    match e.kind() {
        std::io::ErrorKind::NotFound => ToolError(format!(
            "`{shown}` does not exist; use glob to find the right path"
        )),
        std::io::ErrorKind::PermissionDenied => {
            ToolError(format!("`{shown}` cannot be read: permission denied"))
        }
        _ => ToolError(format!("cannot open `{shown}`: {e}")),
    }
}

fn read_error(shown: &str, e: &std::io::Error) -> ToolError {
    ToolError(format!("error while reading `{shown}`: {e}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn run(text: &str, offset: usize, limit: usize) -> Result<String, ToolError> {
        render(text.as_bytes(), "f.txt", Window { offset, limit })
    }

    fn ctx(workspace: &Path, read_roots: Vec<std::path::PathBuf>) -> ToolContext {
        ToolContext {
            workspace: workspace.to_path_buf(),
            session_id: "s".into(),
            call_id: "c".into(),
            cancel: rein_core::CancellationToken::new(),
            store: std::sync::Arc::new(rein_core::MemoryStore::new()),
            sandbox: rein_core::SandboxPolicy::default(),
            read_roots,
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
        let out = ReadFile
            .call(args.clone(), with_root.clone())
            .await
            .unwrap();
        assert_eq!(out.content, "     2\tline two");
        assert_eq!(
            ReadFile.locks(&args, &with_root).unwrap(),
            [PathLock::Read(saved.clone())]
        );
        let a = ReadFile.assess(&args, &with_root);
        assert_eq!(a.subjects, [saved.display().to_string()]);
        assert_eq!(a.reads, std::slice::from_ref(&saved));

        // Without the read root the same path is outside the workspace.
        let without = ctx(&ws, Vec::new());
        let e = ReadFile
            .call(args.clone(), without.clone())
            .await
            .unwrap_err();
        assert!(e.0.contains("outside the workspace"), "{e}");
        assert!(ReadFile.locks(&args, &without).is_err());
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
            e.0,
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
