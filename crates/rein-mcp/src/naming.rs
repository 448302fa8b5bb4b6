//! The names MCP tools are offered under: `mcp__SERVER__TOOL`, made of
//! what every wire API accepts (`[A-Za-z0-9_-]`, at most 64 characters),
//! whatever the server calls them.

/// Most characters of a tool name every wire API accepts.
const MAX: usize = 64;

pub(crate) fn clean(part: &str) -> String {
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

/// Most characters of the `SERVER` part, so every tool keeps a name of its
/// own within the 64.
const SERVER_MAX: usize = 24;

/// The `SERVER` part of each server's tool names, in order: cleaned, with
/// no `__` inside (so `mcp__a__b__c` can only be server `a`'s tool `b__c`),
/// cut, and numbered where two would be the same.
pub fn server_prefixes(names: &[&str]) -> Vec<String> {
    let mut given: Vec<String> = Vec::new();
    for name in names {
        let mut base = clean(name);
        while base.contains("__") {
            base = base.replace("__", "_");
        }
        let base: String = base.chars().take(SERVER_MAX).collect();
        let base = if base.is_empty() {
            "server".to_string()
        } else {
            base
        };
        let mut prefix = base.clone();
        let mut n = 2;
        while given.contains(&prefix) {
            let suffix = format!("-{n}");
            let keep = SERVER_MAX - suffix.len();
            prefix = format!("{}{suffix}", base.chars().take(keep).collect::<String>());
            n += 1;
        }
        given.push(prefix);
    }
    given
}

/// `mcp__PREFIX__TOOL` (the prefix from [`server_prefixes`]), cleaned and
/// cut to 64 characters; `taken` holds the names the same server's tools
/// got already, and a name that would repeat one gets a numbered suffix.
pub fn exposed_name(prefix: &str, tool: &str, taken: &[String]) -> String {
    let base: String = format!("mcp__{prefix}__{}", clean(tool))
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
            exposed_name("my_srv", "get.thing/x", &[]),
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

    /// Two servers never share a prefix, and no prefix holds `__`: one
    /// server's tool names cannot be another's.
    #[test]
    fn server_prefixes_are_unique_and_cannot_be_confused() {
        let long = "x".repeat(40);
        let names = ["my srv", "my_srv", "a__b", "", &long, &long];
        let prefixes = server_prefixes(&names);
        assert_eq!(prefixes[0], "my_srv");
        assert_eq!(prefixes[1], "my_srv-2");
        assert_eq!(prefixes[2], "a_b");
        assert_eq!(prefixes[3], "server");
        assert_eq!(prefixes[4].len(), 24);
        assert_ne!(prefixes[4], prefixes[5]);
        assert!(prefixes.iter().all(|p| !p.contains("__")));
    }
}
