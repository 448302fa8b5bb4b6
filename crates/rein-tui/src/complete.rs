//! Completion for the input box: slash commands, `@path` file references,
//! `$skill` names and the fuzzy matcher they use.
//!
//! The matcher scores a case-insensitive subsequence match, rewarding
//! runs of consecutive characters and characters that start a word (after
//! `/`, `_`, `-`, a space or `.`, at a camelCase hump, at the very start)
//! and charging for gaps. The best alignment is found by dynamic
//! programming, so `mdrs` matches `markdown.rs` as `m…d…rs`, not greedily.

use std::path::Path;

use ignore::WalkBuilder;

/// The slash commands with their one-line help, in the order `/help` lists
/// them.
pub const SLASH_COMMANDS: &[(&str, &str)] = &[
    ("/new", "start a new session"),
    ("/resume", "pick a recent session to continue"),
    ("/plan", "plan a task read-only: /plan [task]"),
    ("/compact", "summarise older turns now"),
    ("/todos", "show the todo list"),
    ("/model", "switch model for the next turn: /model [name]"),
    ("/mode", "show or set the permission mode: /mode [name]"),
    ("/cost", "show this session's cost"),
    ("/context", "show what fills the context window"),
    ("/mcp", "show the MCP servers: status, tools, last error"),
    (
        "/lsp",
        "show the language servers: ready, starting, slow, missing...",
    ),
    (
        "/skills",
        "list the skills ($name in a message attaches one)",
    ),
    ("/plugins", "list the installed plugins and their parts"),
    (
        "/rewind",
        "go back to a checkpoint: files, conversation or both (Esc Esc)",
    ),
    ("/help", "list commands and keys"),
    ("/quit", "exit rein"),
];

/// The help line of a slash command.
pub fn command_help(name: &str) -> Option<&'static str> {
    SLASH_COMMANDS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, h)| *h)
}

/// Commands starting with `prefix` (which includes the `/`), in list order.
pub fn complete_slash(prefix: &str) -> Vec<&'static str> {
    if !prefix.starts_with('/') {
        return Vec::new();
    }
    let prefix = prefix.to_lowercase();
    SLASH_COMMANDS
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

/// Edit distance counting a swap of two neighbours as one edit (optimal
/// string alignment).
fn edit_distance(a: &[char], b: &[char]) -> usize {
    let (n, m) = (a.len(), b.len());
    let mut d = vec![vec![0usize; m + 1]; n + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=n {
        for j in 1..=m {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[n][m]
}

/// The command the user probably meant by `unknown` (its first word): a
/// known command as is, the only command it is a prefix of, or the
/// closest by edit distance when close enough.
pub fn suggest_command(unknown: &str) -> Option<&'static str> {
    let word = unknown.split_whitespace().next()?.to_lowercase();
    let word = word.strip_prefix('/').unwrap_or(&word);
    if word.is_empty() {
        return None;
    }
    let names = || SLASH_COMMANDS.iter().map(|(n, _)| *n);
    let bare = |n: &'static str| n.strip_prefix('/').unwrap_or(n);
    if let Some(exact) = names().find(|n| bare(n) == word) {
        return Some(exact);
    }
    let prefixed: Vec<&'static str> = names().filter(|n| bare(n).starts_with(word)).collect();
    if let [only] = prefixed.as_slice() {
        return Some(only);
    }
    let w: Vec<char> = word.chars().collect();
    let limit = match w.len() {
        0..=3 => 1,
        4..=6 => 2,
        _ => 3,
    };
    names()
        .map(|n| {
            let c: Vec<char> = bare(n).chars().collect();
            (edit_distance(&w, &c), n)
        })
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, n)| n)
}

// ---- fuzzy matching ----

const SCORE_MATCH: i64 = 16;
const BONUS_START: i64 = 10;
const BONUS_PATH: i64 = 10;
const BONUS_SEPARATOR: i64 = 8;
const BONUS_CAMEL: i64 = 7;
const BONUS_CONSECUTIVE: i64 = 8;
const PENALTY_GAP_OPEN: i64 = 3;
const PENALTY_GAP_EXTEND: i64 = 1;
const NEG: i64 = i64::MIN / 4;

fn fold(c: char) -> char {
    c.to_lowercase().next().unwrap_or(c)
}

/// The bonus for matching at `j`: how much `chars[j]` starts a word.
fn position_bonus(chars: &[char], j: usize) -> i64 {
    if j == 0 {
        return BONUS_START;
    }
    let (prev, cur) = (chars[j - 1], chars[j]);
    match prev {
        '/' | '\\' => BONUS_PATH,
        '_' | '-' | ' ' | '.' | ':' => BONUS_SEPARATOR,
        _ if prev.is_lowercase() && cur.is_uppercase() => BONUS_CAMEL,
        _ if !prev.is_alphanumeric() && cur.is_alphanumeric() => BONUS_SEPARATOR / 2,
        _ => 0,
    }
}

/// Score `candidate` against `query`: `None` unless the query is a
/// case-insensitive subsequence of it; higher is better. The empty query
/// matches everything with 0.
pub fn fuzzy_score(query: &str, candidate: &str) -> Option<i64> {
    let q: Vec<char> = query.chars().map(fold).collect();
    if q.is_empty() {
        return Some(0);
    }
    let orig: Vec<char> = candidate.chars().collect();
    let c: Vec<char> = orig.iter().copied().map(fold).collect();
    // Cheap rejection before the quadratic part.
    let mut qi = 0;
    for &ch in &c {
        if qi < q.len() && ch == q[qi] {
            qi += 1;
        }
    }
    if qi < q.len() {
        return None;
    }
    let bonus: Vec<i64> = (0..c.len()).map(|j| position_bonus(&orig, j)).collect();
    // prev[j]: best score with query[..i] matched and query[i-1] at j.
    let mut prev = vec![NEG; c.len()];
    for (j, &ch) in c.iter().enumerate() {
        if ch == q[0] {
            prev[j] = SCORE_MATCH + 2 * bonus[j];
        }
    }
    for &qc in &q[1..] {
        let mut cur = vec![NEG; c.len()];
        // Best score of an earlier match followed by a gap ending before j.
        let mut gapped = NEG;
        for j in 1..c.len() {
            if j >= 2 {
                gapped = (gapped - PENALTY_GAP_EXTEND).max(prev[j - 2] - PENALTY_GAP_OPEN);
            }
            if c[j] != qc {
                continue;
            }
            let from = (prev[j - 1] + BONUS_CONSECUTIVE).max(gapped);
            if from > NEG / 2 {
                cur[j] = from + SCORE_MATCH + bonus[j];
            }
        }
        prev = cur;
    }
    prev.into_iter().filter(|&s| s > NEG / 2).max()
}

/// Indices and scores of the items whose key matches `query`, best first
/// (ties keep the original order). An empty query keeps every item, in
/// order, with score 0.
pub fn fuzzy_filter<T>(query: &str, items: &[T], key: impl Fn(&T) -> &str) -> Vec<(usize, i64)> {
    let mut out: Vec<(usize, i64)> = items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| fuzzy_score(query, key(item)).map(|s| (i, s)))
        .collect();
    // Stable: ties keep the original order.
    out.sort_by_key(|&(_, score)| std::cmp::Reverse(score));
    out
}

// ---- files ----

/// The workspace's files and directories for `@path` completion.
#[derive(Debug, Clone, Default)]
pub struct FileIndex {
    /// Relative, `/`-separated; directories end with `/`.
    paths: Vec<String>,
    truncated: bool,
}

impl FileIndex {
    /// Walk `root` honouring `.gitignore`/`.ignore` files (even outside a
    /// git repository), skipping `.git` and not following symlinks, and
    /// keep at most `limit` entries. Unreadable entries are skipped;
    /// paths that are not UTF-8 are left out.
    pub fn build(root: &Path, limit: usize) -> FileIndex {
        let mut paths = Vec::new();
        let mut truncated = false;
        let walker = WalkBuilder::new(root)
            .hidden(false)
            .follow_links(false)
            .require_git(false)
            .filter_entry(|e| e.file_name() != ".git")
            .sort_by_file_name(|a, b| a.cmp(b))
            .build();
        for entry in walker.flatten() {
            if entry.depth() == 0 {
                continue;
            }
            let Ok(rel) = entry.path().strip_prefix(root) else {
                continue;
            };
            let mut parts = Vec::new();
            let mut utf8 = true;
            for comp in rel.components() {
                match comp.as_os_str().to_str() {
                    Some(s) => parts.push(s),
                    None => utf8 = false,
                }
            }
            if !utf8 || parts.is_empty() {
                continue;
            }
            if paths.len() >= limit {
                truncated = true;
                break;
            }
            let mut p = parts.join("/");
            if entry.file_type().is_some_and(|t| t.is_dir()) {
                p.push('/');
            }
            paths.push(p);
        }
        FileIndex { paths, truncated }
    }

    /// An index over given paths (for tests and callers with their own
    /// list).
    pub fn from_paths(paths: Vec<String>) -> FileIndex {
        FileIndex {
            paths,
            truncated: false,
        }
    }

    pub fn paths(&self) -> &[String] {
        &self.paths
    }

    pub fn len(&self) -> usize {
        self.paths.len()
    }

    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// Whether the walk stopped at the limit.
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// Up to `max` paths for `query`, best first: fuzzy score, plus a bonus
    /// for a match within the basename and for a literal prefix, minus a
    /// little per character so shorter paths win. The empty query gives
    /// the shallowest paths.
    pub fn complete(&self, query: &str, max: usize) -> Vec<String> {
        if query.is_empty() {
            let mut all: Vec<&String> = self.paths.iter().collect();
            all.sort_by_key(|p| (p.trim_end_matches('/').matches('/').count(), p.len()));
            return all.into_iter().take(max).cloned().collect();
        }
        let lower = query.to_lowercase();
        let mut scored: Vec<(i64, usize, &String)> = self
            .paths
            .iter()
            .filter_map(|p| {
                let full = fuzzy_score(query, p)?;
                let trimmed = p.trim_end_matches('/');
                let base = trimmed.rsplit('/').next().unwrap_or(trimmed);
                let base_bonus = fuzzy_score(query, base).map_or(0, |s| s / 2 + 10);
                let prefix_bonus = if p.to_lowercase().starts_with(&lower) {
                    50
                } else {
                    0
                };
                let len = p.chars().count();
                let len_i = i64::try_from(len).unwrap_or(i64::MAX);
                Some((full + base_bonus + prefix_bonus - len_i / 4, len, p))
            })
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(b.2)));
        scored
            .into_iter()
            .take(max)
            .map(|(_, _, p)| p.clone())
            .collect()
    }
}

/// The `@` reference the cursor is in (see [`sigil_token`]).
pub fn at_token(line: &str, cursor_col: usize) -> Option<(usize, String)> {
    sigil_token(line, cursor_col, '@')
}

/// The `sigil`-led word the cursor is in: if the chars before
/// `cursor_col` back to the previous whitespace start with `sigil`, its
/// start column and the query after the sigil (both in chars).
pub fn sigil_token(line: &str, cursor_col: usize, sigil: char) -> Option<(usize, String)> {
    let chars: Vec<char> = line.chars().collect();
    let end = cursor_col.min(chars.len());
    let mut start = end;
    while start > 0 && !chars[start - 1].is_whitespace() {
        start -= 1;
    }
    if chars.get(start) != Some(&sigil) || start >= end {
        return None;
    }
    Some((start, chars[start + 1..end].iter().collect()))
}

/// Up to `max` of `names` for `query` (a `$skill` being typed), best
/// fuzzy match first; all of them, in order, for the empty query.
pub fn complete_names(query: &str, names: &[&str], max: usize) -> Vec<String> {
    fuzzy_filter(query, names, |n| n)
        .into_iter()
        .take(max)
        .map(|(i, _)| names[i].to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slash_completion_by_prefix() {
        assert_eq!(complete_slash("/mo"), vec!["/model", "/mode"]);
        assert_eq!(complete_slash("/co"), vec!["/compact", "/cost", "/context"]);
        assert_eq!(complete_slash("/").len(), SLASH_COMMANDS.len());
        assert_eq!(complete_slash("/Q"), vec!["/quit"]);
        assert!(complete_slash("/zz").is_empty());
        assert!(complete_slash("help").is_empty());
        assert_eq!(command_help("/quit"), Some("exit rein"));
    }

    #[test]
    fn suggestions_for_unknown_commands() {
        assert_eq!(suggest_command("/comapct"), Some("/compact"));
        assert_eq!(suggest_command("/res"), Some("/resume"));
        assert_eq!(suggest_command("/quitt"), Some("/quit"));
        assert_eq!(suggest_command("/hlep"), Some("/help"));
        assert_eq!(suggest_command("/todo now"), Some("/todos"));
        assert_eq!(suggest_command("/MODEL"), Some("/model"));
        assert_eq!(suggest_command("/xyzzyq"), None);
        assert_eq!(suggest_command("/"), None);
        assert_eq!(suggest_command(""), None);
    }

    #[test]
    fn edit_distance_counts_swaps_as_one() {
        let d = |a: &str, b: &str| {
            edit_distance(
                &a.chars().collect::<Vec<_>>(),
                &b.chars().collect::<Vec<_>>(),
            )
        };
        assert_eq!(d("comapct", "compact"), 1);
        assert_eq!(d("", "abc"), 3);
        assert_eq!(d("kitten", "sitting"), 3);
    }

    #[test]
    fn fuzzy_score_requires_a_subsequence() {
        assert!(fuzzy_score("abc", "a_b_c").is_some());
        assert!(fuzzy_score("ABC", "xaxbxc").is_some());
        assert_eq!(fuzzy_score("abd", "abc"), None);
        assert_eq!(fuzzy_score("ba", "ab"), None);
        assert_eq!(fuzzy_score("", "anything"), Some(0));
        assert_eq!(fuzzy_score("a", ""), None);
    }

    #[test]
    fn fuzzy_prefers_runs_word_starts_and_the_start() {
        let s = |q: &str, c: &str| fuzzy_score(q, c).unwrap_or(i64::MIN);
        assert!(s("mdrs", "src/markdown.rs") > s("mdrs", "src/model/dir/rules.txt"));
        assert!(s("main", "src/main.rs") > s("main", "src/my_animation.rs"));
        assert!(s("fb", "foo_bar") > s("fb", "fizzbuzz"));
        assert!(s("fb", "fooBar") > s("fb", "fizzbuzz"));
        assert!(s("ed", "editor.rs") > s("ed", "crates/red.rs"));
        assert!(s("abc", "abcxyz") > s("abc", "xabcyz"));
        assert!(s("ab", "ab") > s("ab", "a-b"));
    }

    #[test]
    fn fuzzy_filter_sorts_by_score_then_order() {
        let items = [
            "src/model/dir/rules.txt",
            "README.md",
            "src/markdown.rs",
            "x",
        ];
        let out = fuzzy_filter("mdrs", &items, |s| s);
        let idx: Vec<usize> = out.iter().map(|&(i, _)| i).collect();
        assert_eq!(idx, vec![2, 0]);
        let all = fuzzy_filter("", &items, |s| s);
        assert_eq!(all, vec![(0, 0), (1, 0), (2, 0), (3, 0)]);
        let same = ["ab", "ab", "ab"];
        let ties: Vec<usize> = fuzzy_filter("ab", &same, |s| s)
            .iter()
            .map(|p| p.0)
            .collect();
        assert_eq!(ties, vec![0, 1, 2]);
    }

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in ["src/model", ".git", "target/debug", "docs"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in [
            "src/main.rs",
            "src/markdown.rs",
            "src/model/rules.txt",
            ".git/HEAD",
            "target/debug/rein",
            "docs/notes.log",
            "docs/guide.md",
            ".gitignore",
            "README.md",
        ] {
            std::fs::write(root.join(f), "x").unwrap();
        }
        std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
        dir
    }

    #[test]
    fn file_index_respects_gitignore_and_hides_git() {
        let dir = tree();
        let idx = FileIndex::build(dir.path(), 1000);
        let paths = idx.paths();
        for want in [
            "src/",
            "src/main.rs",
            "src/model/",
            "src/model/rules.txt",
            "docs/guide.md",
            ".gitignore",
            "README.md",
        ] {
            assert!(paths.iter().any(|p| p == want), "{want} missing: {paths:?}");
        }
        for p in paths {
            assert!(!p.starts_with(".git/") && p != ".git/", "{p}");
            assert!(!p.starts_with("target"), "{p}");
            assert!(!p.ends_with(".log"), "{p}");
        }
        assert!(!idx.truncated());
    }

    #[test]
    fn file_index_stops_at_the_limit() {
        let dir = tree();
        let idx = FileIndex::build(dir.path(), 3);
        assert_eq!(idx.len(), 3);
        assert!(idx.truncated());
        assert!(FileIndex::build(dir.path(), 0).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn file_index_does_not_follow_symlinks() {
        let dir = tree();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        let idx = FileIndex::build(dir.path(), 1000);
        assert!(idx.paths().iter().any(|p| p == "link"));
        assert!(!idx.paths().iter().any(|p| p.contains("secret")));
    }

    #[test]
    fn file_completion_ranks_basenames_and_short_paths() {
        let dir = tree();
        let idx = FileIndex::build(dir.path(), 1000);
        let got = idx.complete("mdrs", 10);
        assert_eq!(got.first().map(String::as_str), Some("src/markdown.rs"));
        let got = idx.complete("main", 2);
        assert_eq!(got, vec!["src/main.rs"]);
        // A literal prefix wins; among those, shorter paths first.
        let got = idx.complete("src/m", 10);
        assert!(got[..4].iter().all(|p| p.starts_with("src/m")), "{got:?}");
        assert_eq!(got[3], "src/model/rules.txt");
        let top = idx.complete("", 3);
        assert!(
            top.iter().all(|p| !p.trim_end_matches('/').contains('/')),
            "{top:?}"
        );
        assert!(idx.complete("zzzz", 10).is_empty());

        let idx = FileIndex::from_paths(vec![
            "a/very/long/path/to/some/readme.md".into(),
            "README.md".into(),
        ]);
        assert_eq!(idx.complete("readme", 1), vec!["README.md"]);
    }

    #[test]
    fn at_token_finds_the_reference_under_the_cursor() {
        assert_eq!(at_token("see @src/ma", 11), Some((4, "src/ma".into())));
        assert_eq!(at_token("@", 1), Some((0, String::new())));
        assert_eq!(at_token("see @src/ma more", 8), Some((4, "src".into())));
        // Cursor at the start of the token or of the line: nothing typed.
        assert_eq!(at_token("@foo", 0), None);
        assert_eq!(at_token("see @foo", 4), None);
        assert_eq!(at_token("", 0), None);
        // An email address is not a reference.
        assert_eq!(at_token("mail a@b.c", 10), None);
        assert_eq!(at_token("plain words", 5), None);
        // Columns are chars, not bytes.
        assert_eq!(at_token("日本 @ü/文", 7), Some((3, "ü/文".into())));
        // A cursor past the end is clamped.
        assert_eq!(at_token("x @ab", 99), Some((2, "ab".into())));
        // After whitespace, the token is over.
        assert_eq!(at_token("@abc ", 5), None);
    }
}
