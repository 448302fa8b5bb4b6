//! The frontmatter of a Markdown file (a custom command, a skill): a first
//! line `---`, then `key: value` lines up to the next `---` line. The YAML
//! such files use in practice is read: plain and quoted scalars, flow lists
//! (`[a, "b c"]`), block lists (`- item`), one level of nested map, and
//! folded or literal block scalars (`>`, `|`). Anything else is an error
//! naming the line, so a broken file is one clear warning.

/// Why a Markdown file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadFileError {
    #[error("not a regular file (a symbolic link)")]
    Symlink,
    #[error("not a regular file")]
    NotRegular,
    #[error("larger than {} KiB", .max / 1024)]
    TooLarge { max: u64 },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Why a frontmatter block could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrontmatterError {
    #[error("the frontmatter (from line 1) is never closed with `---`")]
    Unclosed,
    #[error("line {line}: {problem}")]
    Line { line: usize, problem: LineProblem },
}

/// What is wrong with one line of the block.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineProblem {
    #[error("indented, but under no key")]
    IndentedUnderNoKey,
    #[error("not `key: value`")]
    NotKeyValue,
    #[error("indented, but `{0}` has a value")]
    IndentedUnderValue(String),
    #[error("not `key: value` under the key")]
    NotKeyValueUnderKey,
    #[error("a list that does not end with `]`")]
    UnclosedList,
    #[error("a quote that is never closed")]
    UnclosedQuote,
}

/// `problem` at line `line`.
fn at(line: usize, problem: LineProblem) -> FrontmatterError {
    FrontmatterError::Line { line, problem }
}

/// One `key: value` of the block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub key: String,
    pub value: Value,
    /// Its line in the file (1-based).
    pub line: usize,
}

/// A field's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Text(String),
    List(Vec<String>),
    Map(Vec<(String, String)>),
}

impl Value {
    /// The value as one string (a list joined with `, `; a map empty).
    pub fn text(&self) -> String {
        match self {
            Value::Text(t) => t.clone(),
            Value::List(items) => items.join(", "),
            Value::Map(_) => String::new(),
        }
    }

    /// The value as a list: a text split at commas or spaces, but not
    /// inside parentheses (`Bash(git add:*), Read` is two items).
    pub fn list(&self) -> Vec<String> {
        match self {
            Value::List(items) => items.clone(),
            Value::Text(t) => split_items(t),
            Value::Map(_) => Vec::new(),
        }
    }
}

/// `text`'s items, parted by commas and whitespace outside parentheses.
fn split_items(text: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth == 0 && (c == ',' || c.is_whitespace()) {
            if !current.is_empty() {
                items.push(std::mem::take(&mut current));
            }
        } else {
            current.push(c);
        }
    }
    if !current.is_empty() {
        items.push(current);
    }
    items
}

/// The `*.md` files of folder `dir`, sorted by name (none when it cannot
/// be read).
pub fn markdown_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<std::path::PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    paths.sort();
    paths
}

/// The Markdown files at `path`: the folder's (as [`markdown_files`]), or
/// the file itself when it is a regular `.md` file.
pub fn markdown_files_at(path: &std::path::Path) -> Vec<std::path::PathBuf> {
    let is_md = path.extension().is_some_and(|e| e == "md");
    match path.symlink_metadata() {
        Ok(meta) if meta.is_file() && is_md => vec![path.to_path_buf()],
        _ => markdown_files(path),
    }
}

/// A Markdown file's text (a command, an agent, a skill): a regular file,
/// never read through a symlink nor from a FIFO or device, of at most
/// `max` bytes (a larger one is an error).
pub fn read_file(path: &std::path::Path, max: u64) -> Result<String, ReadFileError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => ReadFileError::Symlink,
            _ => ReadFileError::Io(e),
        })?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(ReadFileError::NotRegular);
    }
    if meta.len() > max {
        return Err(ReadFileError::TooLarge { max });
    }
    let mut text = String::new();
    file.take(max).read_to_string(&mut text)?;
    Ok(text)
}

/// The fields and the body after the block; a file without frontmatter is
/// all body.
pub fn split(text: &str) -> Result<(Vec<Field>, &str), FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let Some(first) = lines.next() else {
        return Ok((Vec::new(), text));
    };
    if first.trim_end() != "---" {
        return Ok((Vec::new(), text));
    }
    let mut block: Vec<&str> = Vec::new();
    let mut offset = first.len();
    for line in lines {
        offset += line.len();
        if line.trim_end() == "---" {
            return Ok((parse(&block)?, &text[offset..]));
        }
        block.push(line.trim_end_matches(['\n', '\r']));
    }
    Err(FrontmatterError::Unclosed)
}

fn indented(line: &str) -> bool {
    line.starts_with(' ') || line.starts_with('\t')
}

fn skip(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

/// The block's lines (without the `---`s) as fields.
fn parse(block: &[&str]) -> Result<Vec<Field>, FrontmatterError> {
    let mut fields = Vec::new();
    let mut i = 0;
    while i < block.len() {
        let line = block[i];
        let number = i + 2;
        i += 1;
        if skip(line) {
            continue;
        }
        if indented(line) {
            return Err(at(number, LineProblem::IndentedUnderNoKey));
        }
        let Some((key, rest)) = line.split_once(':') else {
            return Err(at(number, LineProblem::NotKeyValue));
        };
        let key = key.trim().to_string();
        let rest = rest.trim();
        // The indented lines that follow belong to this key.
        let start = i;
        while i < block.len() && (indented(block[i]) || block[i].trim().is_empty()) {
            i += 1;
        }
        let nested: Vec<&str> = block[start..i]
            .iter()
            .copied()
            .filter(|l| !skip(l))
            .collect();
        let value = match rest {
            "" if nested.is_empty() => Value::Text(String::new()),
            "" => nested_value(&nested, number)?,
            r if r.starts_with(['|', '>']) => Value::Text(block_scalar(r, &block[start..i])),
            r if r.starts_with('[') => Value::List(flow_list(r, number)?),
            r => {
                if !nested.is_empty() {
                    return Err(at(number + 1, LineProblem::IndentedUnderValue(key)));
                }
                Value::Text(scalar(r))
            }
        };
        fields.push(Field {
            key,
            value,
            line: number,
        });
    }
    Ok(fields)
}

/// A block list (`- a`) or a one-level map (`k: v`).
fn nested_value(lines: &[&str], number: usize) -> Result<Value, FrontmatterError> {
    if lines.iter().all(|l| l.trim_start().starts_with('-')) {
        return Ok(Value::List(
            lines
                .iter()
                .map(|l| scalar(l.trim_start()[1..].trim()))
                .collect(),
        ));
    }
    lines
        .iter()
        .map(|l| {
            let (k, v) = l
                .trim()
                .split_once(':')
                .ok_or_else(|| at(number + 1, LineProblem::NotKeyValueUnderKey))?;
            Ok((k.trim().to_string(), scalar(v.trim())))
        })
        .collect::<Result<Vec<_>, FrontmatterError>>()
        .map(Value::Map)
}

/// `|` keeps line breaks, `>` folds them into spaces.
fn block_scalar(indicator: &str, lines: &[&str]) -> String {
    let parts: Vec<&str> = lines.iter().map(|l| l.trim()).collect();
    let joined = if indicator.starts_with('|') {
        parts.join("\n")
    } else {
        parts
            .split(|l| l.is_empty())
            .map(|para| para.join(" "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    joined.trim().to_string()
}

/// `[a, "b, c", 'd']`.
fn flow_list(text: &str, number: usize) -> Result<Vec<String>, FrontmatterError> {
    let inner = text
        .strip_prefix('[')
        .and_then(|t| t.trim_end().strip_suffix(']'))
        .ok_or_else(|| at(number, LineProblem::UnclosedList))?;
    let mut items = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    for c in inner.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => current.push(c),
            (None, '"' | '\'') => quote = Some(c),
            (None, ',') => items.push(std::mem::take(&mut current).trim().to_string()),
            (None, c) => current.push(c),
        }
    }
    if quote.is_some() {
        return Err(at(number, LineProblem::UnclosedQuote));
    }
    items.push(current.trim().to_string());
    Ok(items.into_iter().filter(|s| !s.is_empty()).collect())
}

/// A plain or quoted scalar (a trailing ` # comment` dropped from a plain
/// one).
fn scalar(text: &str) -> String {
    let t = text.trim();
    for q in ['"', '\''] {
        if t.len() >= 2 && t.starts_with(q) && t.ends_with(q) {
            return t[1..t.len() - 1].to_string();
        }
    }
    match t.find(" #") {
        Some(i) => t[..i].trim_end().to_string(),
        None => t.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_a_regular_file_within_the_cap_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.md");
        std::fs::write(&file, "---\nname: a\n---\nbody\n").unwrap();
        assert!(read_file(&file, 1024).unwrap().ends_with("body\n"));
        assert_eq!(
            read_file(&file, 4).unwrap_err().to_string(),
            "larger than 0 KiB"
        );
        let link = dir.path().join("link.md");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(
            read_file(&link, 1024)
                .unwrap_err()
                .to_string()
                .contains("symbolic link")
        );
        // A FIFO would block a plain read forever.
        let fifo = dir.path().join("fifo.md");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(
            read_file(&fifo, 1024).unwrap_err().to_string(),
            "not a regular file"
        );
    }

    use super::*;

    #[test]
    fn the_shapes_skill_and_command_files_use_are_read() {
        let text = "---\nname: pdf-tools\ndescription: >\n  Fill PDF forms\n  and merge files.\nlicense: \"Apache-2.0\"\nallowed-tools: [Read, 'Bash(python3:*)']\nmetadata:\n  author: team # owner\n  version: '1.2'\nsteps:\n  - one\n  - \"two\"\n# a comment\n---\n# Body\n";
        let (fields, body) = split(text).unwrap();
        let get = |k: &str| fields.iter().find(|f| f.key == k).unwrap().value.clone();
        assert_eq!(get("name").text(), "pdf-tools");
        assert_eq!(get("description").text(), "Fill PDF forms and merge files.");
        assert_eq!(get("license").text(), "Apache-2.0");
        assert_eq!(get("allowed-tools").list(), ["Read", "Bash(python3:*)"]);
        // Claude's one-line form: commas or spaces, never inside a pattern.
        let line = Value::Text("Bash(git add:*), Bash(git status:*) Read,Grep".into());
        assert_eq!(
            line.list(),
            ["Bash(git add:*)", "Bash(git status:*)", "Read", "Grep"]
        );
        assert_eq!(
            get("metadata"),
            Value::Map(vec![
                ("author".into(), "team".into()),
                ("version".into(), "1.2".into())
            ])
        );
        assert_eq!(get("steps").list(), ["one", "two"]);
        assert_eq!(body, "# Body\n");
        assert_eq!(fields.iter().find(|f| f.key == "license").unwrap().line, 6);
    }

    #[test]
    fn no_frontmatter_is_all_body_and_bad_lines_are_named() {
        assert_eq!(split("# Title\n").unwrap(), (Vec::new(), "# Title\n"));
        assert_eq!(split("").unwrap().0, Vec::new());
        let e = split("---\nname: x\n  stray: y\nno colon\n---\n").unwrap_err();
        assert_eq!(e.to_string(), "line 3: indented, but `name` has a value");
        let e = split("---\nlist: [a, \"b\n---\n").unwrap_err();
        assert_eq!(e, at(2, LineProblem::UnclosedList));
        assert_eq!(e.to_string(), "line 2: a list that does not end with `]`");
        let e = split("---\nlist: [a, \"b]\n---\n").unwrap_err();
        assert_eq!(e.to_string(), "line 2: a quote that is never closed");
        assert_eq!(
            split("---\nname: x\n").unwrap_err().to_string(),
            "the frontmatter (from line 1) is never closed with `---`"
        );
    }
}
