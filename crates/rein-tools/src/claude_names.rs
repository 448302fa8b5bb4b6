//! The names Claude Code gives rein's built-in tools, both ways: files in
//! its layout (custom commands' `allowed-tools`, agent definitions'
//! `tools`, hook matchers) name tools its way. Only the front end and the
//! hooks read them; core knows no tool's name.

/// rein's name for a tool named the Claude Code way (`Bash`, `Read`...;
/// a pattern like `Bash(git:*)` names the whole tool); other names as
/// they are.
pub fn rein_name(name: &str) -> String {
    let base = name.split('(').next().unwrap_or(name).trim();
    match base {
        "Bash" => "bash",
        "Read" => "read_file",
        "Edit" | "MultiEdit" => "edit_file",
        "Write" => "write_file",
        "Grep" => "grep",
        "Glob" | "LS" => "glob",
        other => other,
    }
    .to_string()
}

/// Claude Code's name for a rein tool, so its hook matchers match; other
/// names as they are.
pub fn claude_name(name: &str) -> &str {
    match name {
        "bash" => "Bash",
        "edit_file" => "Edit",
        "write_file" => "Write",
        "read_file" => "Read",
        "grep" => "Grep",
        "glob" => "Glob",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claudes_names_and_patterns_read_as_reins_tools_and_others_pass() {
        assert_eq!(rein_name("Read"), "read_file");
        assert_eq!(rein_name("Bash(git diff:*)"), "bash");
        assert_eq!(rein_name("MultiEdit"), "edit_file");
        assert_eq!(rein_name("LS"), "glob");
        assert_eq!(rein_name("mcp__fs__read"), "mcp__fs__read");
        assert_eq!(claude_name("edit_file"), "Edit");
        assert_eq!(claude_name("task"), "task");
    }
}
