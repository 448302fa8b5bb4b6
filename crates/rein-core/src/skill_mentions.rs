//! How a message names skills (`$name`) and how an attached skill is
//! marked in the message the model gets, in one place for the skills that
//! attach them and the app that shows them.
//!
//! A mention is a whitespace-separated word starting with `$` whose rest
//! (without trailing punctuation) is a skill name: lowercase ASCII letters,
//! digits and single inner hyphens, starting with a letter, or a plugin's
//! skill whose name was taken, `PLUGIN:NAME` (a plugin name is letters,
//! digits, `-` and `_`, starting with a letter). So shell
//! variables (`$HOME`, `$PATH`), prices and positions (`$5`, `$1`) and
//! paths (`$dir/x`) are not mentions, and nothing between backticks is
//! (inline code or a fenced block).

/// The names `message` mentions as `$name`, in order, each once.
pub fn mentions(message: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    let mut in_code = false;
    for word in message.split_whitespace() {
        let starts_in_code = in_code;
        if word.matches('`').count() % 2 == 1 {
            in_code = !in_code;
        }
        if starts_in_code || word.contains('`') {
            continue;
        }
        let Some(rest) = word.strip_prefix('$') else {
            continue;
        };
        let name = rest.trim_end_matches(|c: char| {
            matches!(
                c,
                '.' | ',' | ';' | ':' | '!' | '?' | ')' | ']' | '}' | '"' | '\''
            )
        });
        if is_mention_name(name) && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// Whether `name` can be mentioned: a skill name that starts with a
/// letter, alone or after its plugin's name and `:`.
fn is_mention_name(name: &str) -> bool {
    match name.split_once(':') {
        Some((plugin, skill)) => is_plugin_name(plugin) && is_skill_name(skill),
        None => is_skill_name(name),
    }
}

/// A plugin's name as it prefixes its skills.
fn is_plugin_name(name: &str) -> bool {
    name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn is_skill_name(name: &str) -> bool {
    name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// What comes before and after a skill's name in the line that starts an
/// attached skill.
const OPEN: &str = "\n\n[skill `";
const CLOSE: &str = "`, attached by the user]\n";

/// The line that starts a skill attached after the user's message.
pub fn attached_header(name: &str) -> String {
    format!("{OPEN}{name}{CLOSE}")
}

/// What the user sees of a message they sent: each attached skill as one
/// line (`⚙ skill NAME attached`) instead of its instructions; anything
/// attached after the skills (MCP resources, `[resource …`) stays.
pub fn shown(message: &str) -> String {
    let Some(first) = message.find(OPEN) else {
        return message.to_string();
    };
    let mut out = message[..first].to_string();
    let mut rest = &message[first..];
    while let Some(after) = rest.strip_prefix(OPEN) {
        let Some(end) = after.find(CLOSE) else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&format!("\n⚙ skill {} attached", &after[..end]));
        let body = &after[end + CLOSE.len()..];
        let next_skill = body.find(OPEN);
        let next_resource = body.find("\n\n[resource ");
        match (next_skill, next_resource) {
            (_, Some(r)) if next_skill.is_none_or(|s| r < s) => {
                out.push_str(&body[r..]);
                return out;
            }
            (Some(s), _) => rest = &body[s..],
            _ => return out,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_are_skill_names_after_a_dollar_outside_code() {
        assert_eq!(
            mentions("use $pdf, then $review. And $pdf again ($x-ray)"),
            ["pdf", "review"]
        );
        assert_eq!(mentions("$greeter-v2! $a1"), ["greeter-v2", "a1"]);
        // Shell variables, prices, positions and paths are not mentions.
        assert!(mentions("echo $HOME $PATH $Home costs $5 or $1.50, $1 and $2").is_empty());
        assert!(mentions("see $dir/file and $a_b and $-x and $x- and $").is_empty());
        // Nothing inside backticks: inline code or a fenced block.
        assert!(mentions("run `echo $user` now").is_empty());
        assert!(mentions("run ` $user ` now").is_empty());
        assert!(mentions("```sh\nls $dir\necho $name\n```").is_empty());
        assert_eq!(mentions("`code` then $pdf"), ["pdf"]);
        // A plugin's skill whose name was taken: `$plugin:name`.
        assert_eq!(
            mentions("use $tidy:polish and $My_Plugin:x-ray: now"),
            ["tidy:polish", "My_Plugin:x-ray"]
        );
        assert!(mentions("$a:B $:x $a::b $1:x ${HOME}:x").is_empty());
    }

    #[test]
    fn an_attached_skill_is_shown_as_one_line_and_resources_stay() {
        let sent = format!(
            "use $a and $b{}Skill `a`\n\nLong body\nof a.{}Skill `b`\n\nBody b.",
            attached_header("a"),
            attached_header("b")
        );
        assert_eq!(
            shown(&sent),
            "use $a and $b\n⚙ skill a attached\n⚙ skill b attached"
        );
        let with_resource = format!(
            "use $a @s:u{}Body.\n\n[resource s:u, from MCP server `s`]\nR\n[end of resource]",
            attached_header("a")
        );
        assert_eq!(
            shown(&with_resource),
            "use $a @s:u\n⚙ skill a attached\n\n[resource s:u, from MCP server `s`]\nR\n[end of resource]"
        );
        assert_eq!(shown("plain\n\ntext"), "plain\n\ntext");
    }
}
