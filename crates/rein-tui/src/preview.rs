//! What an edit or a write would change, shown in the approval modal
//! before the call runs: the real diff when the file is at hand in the
//! workspace, a listing built from the arguments otherwise.

use std::path::Path;

use serde_json::Value;

/// What an edit or a write would change, as a unified diff, before it runs
/// (for the approval modal). With the file in the workspace at hand, the
/// diff is the real one, with the file's line numbers; otherwise (a file
/// outside the workspace, too big, or an `old_string` that only the tool's
/// fuzzy matching would find) it is built from the arguments alone.
pub fn proposed_change(name: &str, arguments: &str, workspace: &Path) -> Option<String> {
    let args: Value = serde_json::from_str(arguments).ok()?;
    let path = args.get("path")?.as_str()?;
    let current = read_in_workspace(workspace, path);
    match name {
        "edit_file" => {
            let old = args.get("old_string")?.as_str()?;
            let new = args.get("new_string")?.as_str()?;
            let all = args.get("replace_all").and_then(Value::as_bool) == Some(true);
            if let Some(text) = &current
                && !old.is_empty()
                && (all || text.matches(old).count() == 1)
            {
                let after = if all {
                    text.replace(old, new)
                } else {
                    text.replacen(old, new, 1)
                };
                return Some(unified(path, text, &after));
            }
            Some(listing(path, old, new))
        }
        "write_file" => {
            let content = args.get("content")?.as_str()?;
            match &current {
                Some(text) => Some(unified(path, text, content)),
                None => Some(listing(path, "", content)),
            }
        }
        _ => None,
    }
}

/// Largest file read for a preview.
const PREVIEW_READ_CAP: u64 = 1024 * 1024;

/// A text file's content when it lies inside the workspace (symlinks
/// resolved), is not too big and is UTF-8.
fn read_in_workspace(workspace: &Path, path: &str) -> Option<String> {
    let root = workspace.canonicalize().ok()?;
    let full = root.join(path).canonicalize().ok()?;
    if !full.starts_with(&root) || std::fs::metadata(&full).ok()?.len() > PREVIEW_READ_CAP {
        return None;
    }
    String::from_utf8(std::fs::read(&full).ok()?).ok()
}

fn unified(path: &str, before: &str, after: &str) -> String {
    similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

/// Old lines removed, new lines added, without positions.
fn listing(path: &str, old: &str, new: &str) -> String {
    let mut out = format!("--- a/{path}\n+++ b/{path}\n");
    let (o, n) = (old.lines().count(), new.lines().count());
    out.push_str(&format!("@@ -{},{o} +1,{n} @@\n", usize::from(o > 0)));
    for l in old.lines() {
        out.push_str(&format!("-{l}\n"));
    }
    for l in new.lines() {
        out.push_str(&format!("+{l}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("calc.py"),
            "import math\n\n\ndef mean(v):\n    return sum(v) / (len(v) - 1)\n",
        )
        .unwrap();
        d
    }

    #[test]
    fn an_edit_preview_is_the_real_diff_with_the_files_line_numbers() {
        let d = ws();
        let args = serde_json::json!({"path": "calc.py",
            "old_string": "    return sum(v) / (len(v) - 1)",
            "new_string": "    return sum(v) / len(v)"})
        .to_string();
        let diff = proposed_change("edit_file", &args, d.path()).unwrap();
        assert!(diff.contains("@@ -2,4 +2,4 @@"), "{diff}");
        assert!(diff.contains(" def mean(v):\n"), "context lines: {diff}");
        assert!(
            diff.contains("-    return sum(v) / (len(v) - 1)\n+    return sum(v) / len(v)\n"),
            "{diff}"
        );
    }

    #[test]
    fn overwriting_a_file_shows_what_goes_and_what_comes() {
        let d = ws();
        let args = serde_json::json!({"path": "calc.py", "content": "import math\n"}).to_string();
        let diff = proposed_change("write_file", &args, d.path()).unwrap();
        assert!(diff.contains("-def mean(v):"), "{diff}");
        let new = serde_json::json!({"path": "new.txt", "content": "a\nb\n"}).to_string();
        let diff = proposed_change("write_file", &new, d.path()).unwrap();
        assert!(diff.contains("@@ -0,0 +1,2 @@\n+a\n+b\n"), "{diff}");
    }

    #[test]
    fn files_outside_the_workspace_are_not_read_for_a_preview() {
        let d = ws();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "token=abc\n").unwrap();
        let path = outside.path().join("secret").display().to_string();
        let args = serde_json::json!({"path": path, "content": "x\n"}).to_string();
        let diff = proposed_change("write_file", &args, d.path()).unwrap();
        assert!(!diff.contains("token"), "{diff}");
        let up = serde_json::json!({"path": "../secret", "old_string": "token", "new_string": "t"})
            .to_string();
        let diff = proposed_change("edit_file", &up, d.path()).unwrap();
        assert!(!diff.contains("abc"), "{diff}");
    }

    #[test]
    fn an_old_string_the_file_does_not_hold_exactly_falls_back_to_a_listing() {
        let d = ws();
        let args = serde_json::json!({"path": "calc.py",
            "old_string": "return   sum(v)", "new_string": "return 0"})
        .to_string();
        let diff = proposed_change("edit_file", &args, d.path()).unwrap();
        assert!(diff.contains("-return   sum(v)\n+return 0\n"), "{diff}");
    }
}
