//! The names MCP tools are offered under: `mcp__SERVER__TOOL`, made of
//! what every wire API accepts (`[A-Za-z0-9_-]`, at most 64 characters),
//! whatever the server calls them.

/// Most characters of a tool name every wire API accepts.
const MAX: usize = 64;

fn clean(part: &str) -> String {
    part.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `mcp__SERVER__TOOL`, cleaned and cut to 64 characters; `taken` holds the
/// names already given, and a name that would repeat one gets a numbered
/// suffix.
pub fn exposed_name(server: &str, tool: &str, taken: &[String]) -> String {
    let base: String = format!("mcp__{}__{}", clean(server), clean(tool))
        .chars()
        .take(MAX)
        .collect();
    if !taken.contains(&base) {
        return base;
    }
    (2..)
        .map(|n| {
            let suffix = format!("_{n}");
            let keep = MAX - suffix.len();
            format!("{}{suffix}", base.chars().take(keep).collect::<String>())
        })
        .find(|name| !taken.contains(name))
        .unwrap_or(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cleaned_cut_and_never_repeated() {
        assert_eq!(
            exposed_name("github", "create_issue", &[]),
            "mcp__github__create_issue"
        );
        assert_eq!(
            exposed_name("my srv", "get.thing/x", &[]),
            "mcp__my_srv__get_thing_x"
        );
        let long = "t".repeat(100);
        let name = exposed_name("s", &long, &[]);
        assert_eq!(name.len(), 64);
        let taken = vec!["mcp__s__a_b".to_string()];
        assert_eq!(exposed_name("s", "a.b", &taken), "mcp__s__a_b_2");
        let taken = vec![name.clone()];
        let second = exposed_name("s", &long, &taken);
        assert!(second.len() <= 64 && second.ends_with("_2") && second != name);
    }
}
