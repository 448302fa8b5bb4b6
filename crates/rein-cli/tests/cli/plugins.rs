//! Plugins through the binary: a Claude Code plugin folder installed with
//! `rein plugin install PATH` contributes its commands, agents and skills
//! (a command whose name the user already has is `/PLUGIN:NAME`), `list`
//! shows it with its parts, `disable` and `remove` take them all away; a
//! folder that is not a plugin, a bad manifest, a name that would leave
//! the plugins folder and a link out of the plugin are one line each, and
//! nothing is installed. Plugins also come from a local git repository
//! (pinned to a commit) and from a marketplace (`PLUGIN@MARKETPLACE`), and
//! `update` shows what changes before it changes anything.

use std::path::Path;

use serde_json::json;

use super::support::*;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A plugin `tidy` with a command `review`, an agent `checker` and a
/// skill `polish`.
fn tidy_plugin() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        &root.join(".claude-plugin/plugin.json"),
        r#"{"name": "tidy", "version": "0.3.1", "description": "Keeps code tidy"}"#,
    );
    write(
        &root.join("commands/review.md"),
        "---\ndescription: Review a file\nargument-hint: FILE\n---\nReview $1 for tidiness.\n",
    );
    write(
        &root.join("agents/checker.md"),
        "---\nname: checker\ndescription: Checks tidiness of one file\ntools: Read, Grep\n---\nCheck the file you are given.\n",
    );
    write(
        &root.join("skills/polish/SKILL.md"),
        "---\nname: polish\ndescription: Polish prose in comments.\n---\nRewrite each comment in plain words.\n",
    );
    dir
}

fn user_message(o: &std::process::Output) -> String {
    let events = json_lines(o);
    let user = events
        .iter()
        .find(|e| e["message"]["role"] == "user")
        .unwrap_or_else(|| panic!("{}", stderr(o)));
    user["message"]["content"].as_str().unwrap().to_string()
}

#[test]
fn a_folder_plugin_contributes_its_command_agent_and_skill_until_removed() {
    let env = Env::new();
    // The user has a `review` of their own: the plugin's is `tidy:review`.
    write(
        &env.home.path().join("commands/review.md"),
        "My own review of $1.\n",
    );
    let plugin = tidy_plugin();
    let o = env.rein(&["plugin", "install", plugin.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("installed tidy 0.3.1 (commands, agents, skills)"),
        "{}",
        stdout(&o)
    );
    // Installed as a copy: the source can go.
    let source = plugin.path().display().to_string();
    drop(plugin);

    let listed = stdout(&env.rein(&["plugin", "list"]));
    assert!(
        listed.contains("tidy 0.3.1  enabled  from ")
            && listed.contains(&source)
            && listed.contains("commands, agents, skills")
            && !listed.contains("changed since install"),
        "{listed}"
    );

    let script = env.script("s.json", &json!({"turns": [{"text": "ok"}]}));
    let command =
        |env: &Env, name: &str| env.replay_json(&script, &["--command", name, "src/main.rs"]);
    assert_eq!(
        user_message(&command(&env, "tidy:review")),
        "Review src/main.rs for tidiness."
    );
    assert_eq!(
        user_message(&command(&env, "review")),
        "My own review of src/main.rs."
    );

    let agents = stdout(&env.rein(&["agents"]));
    let checker = agents.lines().find(|l| l.starts_with("checker ")).unwrap();
    assert!(checker.contains("Checks tidiness of one file"), "{agents}");
    // Columns line up: every description and every source starts where
    // the checker's does.
    let starts = |l: &str, i: usize| {
        let cell = l
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .nth(i);
        l.find(cell.unwrap()).unwrap()
    };
    for line in agents.lines().filter(|l| !l.starts_with("note:")) {
        assert_eq!(starts(line, 1), starts(checker, 1), "{agents}");
        assert_eq!(starts(line, 2), starts(checker, 2), "{agents}");
    }

    let skill = env.script(
        "skill.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "skill", "arguments": {"name": "polish"}}]},
            {"text": "done"}
        ]}),
    );
    let o = env.replay_json(&skill, &["polish the comments"]);
    assert!(
        tool_outputs(&o)[0].contains("Rewrite each comment in plain words."),
        "{:?}",
        tool_outputs(&o)
    );

    // Disabled, it stays installed and contributes nothing.
    assert!(env.rein(&["plugin", "disable", "tidy"]).status.success());
    assert!(stdout(&env.rein(&["plugin", "list"])).contains("tidy 0.3.1  disabled"));
    assert!(!command(&env, "tidy:review").status.success());
    assert!(env.rein(&["plugin", "enable", "tidy"]).status.success());
    assert!(command(&env, "tidy:review").status.success());

    let o = env.rein(&["plugin", "remove", "tidy"]);
    assert_eq!(stdout(&o).trim(), "removed tidy", "{}", stderr(&o));
    assert!(!env.home.path().join("plugins/tidy").exists());
    assert!(stdout(&env.rein(&["plugin", "list"])).contains("no plugins installed"));
    let o = command(&env, "tidy:review");
    assert!(!o.status.success());
    assert!(!stdout(&env.rein(&["agents"])).contains("checker"));
    let o = env.replay_json(&skill, &["polish the comments"]);
    assert!(
        !tool_outputs(&o)[0].contains("Rewrite each comment"),
        "{:?}",
        tool_outputs(&o)
    );
}

#[test]
fn a_plugin_whose_files_change_after_install_is_listed_as_changed() {
    let env = Env::new();
    let plugin = tidy_plugin();
    assert!(
        env.rein(&["plugin", "install", plugin.path().to_str().unwrap()])
            .status
            .success()
    );
    write(
        &env.home.path().join("plugins/tidy/commands/review.md"),
        "Something else.\n",
    );
    let listed = stdout(&env.rein(&["plugin", "list"]));
    assert!(
        listed.contains("(its files changed since install)"),
        "{listed}"
    );
}

#[test]
fn bad_plugins_are_one_line_each_and_nothing_is_installed() {
    let env = Env::new();
    let install = |dir: &Path| env.rein(&["plugin", "install", dir.to_str().unwrap()]);

    let empty = tempfile::tempdir().unwrap();
    assert_clean_failure(
        &install(empty.path()),
        2,
        "is not a plugin: it has no .claude-plugin/plugin.json",
    );

    let broken = tempfile::tempdir().unwrap();
    write(
        &broken.path().join(".claude-plugin/plugin.json"),
        "{\"name\": ",
    );
    assert_clean_failure(&install(broken.path()), 2, "plugin.json: not valid JSON");

    for name in ["../escape", "a/b", ".."] {
        let bad = tempfile::tempdir().unwrap();
        write(
            &bad.path().join(".claude-plugin/plugin.json"),
            &json!({"name": name}).to_string(),
        );
        assert_clean_failure(&install(bad.path()), 2, "is not a plugin name");
    }

    let outside = tempfile::tempdir().unwrap();
    write(&outside.path().join("secret.txt"), "not for the plugin");
    let linked = tidy_plugin();
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        linked.path().join("commands/leak.md"),
    )
    .unwrap();
    assert_clean_failure(&install(linked.path()), 2, "outside the plugin");

    assert_clean_failure(
        &env.rein(&["plugin", "remove", "tidy"]),
        2,
        "no plugin named `tidy` is installed",
    );
    assert!(stdout(&env.rein(&["plugin", "list"])).contains("no plugins installed"));
    let left: Vec<_> = std::fs::read_dir(env.home.path().join("plugins"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_plugins_hook_runs_from_its_folder_and_stops_when_the_plugin_is_removed() {
    let env = Env::new();
    let plugin = tidy_plugin();
    // Claude's example shape: the hook's script named through
    // ${CLAUDE_PLUGIN_ROOT}, blocking `grep` with exit 2.
    write(
        &plugin.path().join("hooks/hooks.json"),
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "python3 \"${CLAUDE_PLUGIN_ROOT}/scripts/no_grep.py\""}
        ]}]}})
        .to_string(),
    );
    // As Claude's own plugins do (hookify), the script finds its
    // plugin's modules through the CLAUDE_PLUGIN_ROOT variable.
    write(
        &plugin.path().join("scripts/no_grep.py"),
        "import json, os, sys\nsys.path.insert(0, os.environ[\"CLAUDE_PLUGIN_ROOT\"])\nfrom rules import BANNED\nevent = json.load(sys.stdin)\nif BANNED in event[\"tool_input\"][\"command\"]:\n    print(\"use rg instead of grep\", file=sys.stderr)\n    sys.exit(2)\n",
    );
    write(&plugin.path().join("rules.py"), "BANNED = \"grep\"\n");
    let o = env.rein(&["plugin", "install", plugin.path().to_str().unwrap()]);
    assert!(
        stdout(&o).contains("(commands, agents, skills, hooks)"),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
    let script = env.script(
        "s.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "grep -r needle . > found.txt"}}]},
            {"text": "done"}
        ]}),
    );
    let o = env.replay_json(&script, &["--mode", "auto", "go"]);
    assert!(
        tool_outputs(&o)[0].contains("use rg instead of grep"),
        "{:?} {}",
        tool_outputs(&o),
        stderr(&o)
    );
    assert!(!env.path("found.txt").exists());

    assert!(env.rein(&["plugin", "remove", "tidy"]).status.success());
    let o = env.replay_json(&script, &["--mode", "auto", "go"]);
    assert!(env.path("found.txt").exists(), "{}", stderr(&o));
}

/// A plugin whose manifest puts its parts elsewhere (Claude Code's
/// `commands`, `agents`, `skills`, `hooks` and `mcpServers` keys: a file,
/// a folder, a list, or hooks and servers written inline) brings them all;
/// a path leading out of the plugin is named at install and never read.
#[test]
fn a_plugins_manifest_paths_and_inline_parts_are_loaded_and_an_escaping_path_is_not() {
    let env = Env::new();
    let outside = tempfile::tempdir().unwrap();
    write(
        &outside.path().join("stolen.md"),
        "Read from outside the plugin.\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let escape = format!(
        "../{}/stolen.md",
        outside.path().file_name().unwrap().to_str().unwrap()
    );
    write(
        &root.join(".claude-plugin/plugin.json"),
        &json!({"name": "moved",
            "commands": ["./extra/tidy-up.md", escape],
            "agents": "./team",
            "skills": ["./more-skills"],
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "python3 \"${CLAUDE_PLUGIN_ROOT}/scripts/no_grep.py\""}
            ]}]},
            "mcpServers": "./config/servers.json"})
        .to_string(),
    );
    write(&root.join("extra/tidy-up.md"), "Tidy up $1.\n");
    write(
        &root.join("team/linter.md"),
        "---\nname: linter\ndescription: Lints one file\n---\nLint it.\n",
    );
    write(
        &root.join("more-skills/shine/SKILL.md"),
        "---\nname: shine\ndescription: Shine the docs.\n---\nMake the docs shine.\n",
    );
    write(
        &root.join("scripts/no_grep.py"),
        "import json, sys\nevent = json.load(sys.stdin)\nif \"grep\" in event[\"tool_input\"][\"command\"]:\n    print(\"use rg instead of grep\", file=sys.stderr)\n    sys.exit(2)\n",
    );
    write(
        &root.join("config/servers.json"),
        &json!({"mcpServers": {"moved-srv": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/absent"}}})
            .to_string(),
    );
    let o = env.rein(&["plugin", "install", root.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("(commands, agents, skills, hooks, mcp-servers)"),
        "{}",
        stdout(&o)
    );
    assert!(
        stderr(&o).contains("is not a path inside the plugin"),
        "{}",
        stderr(&o)
    );

    let script = env.script("s.json", &json!({"turns": [{"text": "ok"}]}));
    let o = env.replay_json(&script, &["--command", "tidy-up", "src"]);
    assert_eq!(user_message(&o), "Tidy up src.");
    assert!(
        !env.replay_json(&script, &["--command", "stolen"])
            .status
            .success()
    );
    let agents = stdout(&env.rein(&["agents"]));
    let line = agents.lines().find(|l| l.starts_with("linter "));
    assert!(line.is_some_and(|l| l.contains("Lints one file")));
    let skill = env.script(
        "skill.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "skill", "arguments": {"name": "shine"}}]},
            {"text": "done"}
        ]}),
    );
    let o = env.replay_json(&skill, &["shine"]);
    assert!(
        tool_outputs(&o)[0].contains("Make the docs shine."),
        "{:?}",
        tool_outputs(&o)
    );
    let grep = env.script(
        "grep.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "grep -r needle . > found.txt"}}]},
            {"text": "done"}
        ]}),
    );
    let o = env.replay_json(&grep, &["--mode", "auto", "go"]);
    assert!(
        tool_outputs(&o)[0].contains("use rg instead of grep"),
        "{:?}",
        tool_outputs(&o)
    );
    assert!(!env.path("found.txt").exists());
    let listed = env.rein(&["mcp", "list"]);
    assert!(stdout(&listed).contains("moved-srv"), "{}", stdout(&listed));
}

#[test]
fn a_plugins_mcp_server_starts_from_its_folder_and_goes_with_the_plugin() {
    let Some(server) = super::mcp::everything() else {
        return;
    };
    let env = Env::new();
    let plugin = tidy_plugin();
    // The server is a script inside the plugin, named through the root
    // variable, which learns the folder from its environment too.
    write(
        &plugin.path().join("bin/serve.sh"),
        &format!(
            "#!/bin/sh\n[ -d \"$CLAUDE_PLUGIN_ROOT/bin\" ] || exit 3\nexec {:?} \"$@\"\n",
            server.display().to_string()
        ),
    );
    {
        use std::os::unix::fs::PermissionsExt;
        let path = plugin.path().join("bin/serve.sh");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    write(
        &plugin.path().join(".mcp.json"),
        &json!({"mcpServers": {"everything": {
            "command": "${CLAUDE_PLUGIN_ROOT}/bin/serve.sh", "args": ["stdio"]
        }}})
        .to_string(),
    );
    assert!(
        env.rein(&["plugin", "install", plugin.path().to_str().unwrap()])
            .status
            .success()
    );
    let script = env.script(
        "s.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "mcp__everything__echo", "arguments": {"message": "from a plugin"}}]},
            {"text": "done"}
        ]}),
    );
    let o = env.replay_json(&script, &["go"]);
    assert!(
        tool_outputs(&o)[0].contains("Echo: from a plugin"),
        "{:?} {}",
        tool_outputs(&o),
        stderr(&o)
    );
    assert!(env.rein(&["plugin", "remove", "tidy"]).status.success());
    let o = env.replay_json(&script, &["go"]);
    assert!(
        !tool_outputs(&o)[0].contains("Echo: from a plugin"),
        "{:?}",
        tool_outputs(&o)
    );
}

/// Run git in `dir` with a throwaway identity.
fn git(dir: &Path, args: &[&str]) {
    let o = std::process::Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
}

#[test]
fn a_plugin_from_a_local_git_repository_is_pinned_to_the_commit_of_its_ref() {
    let env = Env::new();
    let plugin = tidy_plugin();
    git(plugin.path(), &["init", "-q"]);
    git(plugin.path(), &["add", "-A"]);
    git(plugin.path(), &["commit", "-qm", "first"]);
    git(plugin.path(), &["tag", "v1"]);
    write(
        &plugin.path().join("commands/review.md"),
        "Second version: $1.\n",
    );
    git(plugin.path(), &["commit", "-qam", "second"]);
    let repos = tempfile::tempdir().unwrap();
    git(
        repos.path(),
        &[
            "clone",
            "-q",
            "--bare",
            plugin.path().to_str().unwrap(),
            "tidy.git",
        ],
    );
    let url = format!("{}@v1", repos.path().join("tidy.git").display());
    let o = env.rein(&["plugin", "install", &url]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("installed tidy 0.3.1 at "),
        "{}",
        stdout(&o)
    );
    assert!(!env.home.path().join("plugins/tidy/.git").exists());

    let listed = stdout(&env.rein(&["plugin", "list", "--json"]));
    let record: serde_json::Value = serde_json::from_str(listed.trim()).unwrap();
    assert_eq!(record["source"], url.as_str());
    assert_eq!(record["commit"].as_str().unwrap().len(), 40, "{record}");

    let script = env.script("s.json", &json!({"turns": [{"text": "ok"}]}));
    let o = env.replay_json(&script, &["--command", "review", "a.rs"]);
    assert_eq!(user_message(&o), "Review a.rs for tidiness.");

    // A ref the repository does not have is one line; nothing installed.
    assert!(env.rein(&["plugin", "remove", "tidy"]).status.success());
    let missing = format!("{}@v9", repos.path().join("tidy.git").display());
    assert_clean_failure(
        &env.rein(&["plugin", "install", &missing]),
        2,
        "no branch, tag or commit `v9`",
    );
    assert!(stdout(&env.rein(&["plugin", "list"])).contains("no plugins installed"));
}

#[test]
fn update_shows_what_changes_and_replaces_the_copy_only_once_accepted() {
    let env = Env::new();
    let plugin = tidy_plugin();
    let install = env.rein(&["plugin", "install", plugin.path().to_str().unwrap()]);
    assert!(install.status.success(), "{}", stderr(&install));
    write(
        &plugin.path().join("commands/review.md"),
        "Review $1 twice.\n",
    );
    write(&plugin.path().join("commands/lint.md"), "Lint $1.\n");
    std::fs::remove_file(plugin.path().join("agents/checker.md")).unwrap();

    let script = env.script("s.json", &json!({"turns": [{"text": "ok"}]}));
    let review =
        |env: &Env| user_message(&env.replay_json(&script, &["--command", "review", "a.rs"]));

    // Headless, nobody can say yes: the changes are shown, nothing moves.
    let o = env.rein(&["plugin", "update", "tidy"]);
    assert_clean_failure(&o, 2, "`rein plugin update tidy --yes`");
    let shown = stdout(&o);
    assert!(
        shown.contains("tidy: 0.3.1 -> 0.3.1")
            && shown.contains("  added commands/lint.md")
            && shown.contains("  changed commands/review.md")
            && shown.contains("  removed agents/checker.md"),
        "{shown}"
    );
    assert_eq!(review(&env), "Review a.rs for tidiness.");

    let o = env.rein(&["plugin", "update", "tidy", "--yes"]);
    assert!(stdout(&o).contains("updated tidy"), "{}", stderr(&o));
    assert_eq!(review(&env), "Review a.rs twice.");
    let listed = stdout(&env.rein(&["plugin", "list"]));
    assert!(!listed.contains("changed since install"), "{listed}");
    assert_eq!(
        stdout(&env.rein(&["plugin", "update", "tidy"])).trim(),
        "tidy is up to date"
    );
}

#[test]
fn a_marketplaces_plugin_installs_by_name_and_an_entry_leading_out_of_it_is_not_offered() {
    let env = Env::new();
    let shop = tempfile::tempdir().unwrap();
    let plugin = tidy_plugin();
    std::fs::create_dir_all(shop.path().join("plugins")).unwrap();
    let copied = std::process::Command::new("cp")
        .args(["-r"])
        .arg(plugin.path())
        .arg(shop.path().join("plugins/tidy"))
        .status()
        .unwrap();
    assert!(copied.success());
    write(
        &shop.path().join(".claude-plugin/marketplace.json"),
        &json!({"name": "shop", "owner": {"name": "t"}, "plugins": [
            {"name": "tidy", "source": "./plugins/tidy"},
            {"name": "escape", "source": "../../"}
        ]})
        .to_string(),
    );
    let o = env.rein(&[
        "plugin",
        "marketplace",
        "add",
        shop.path().to_str().unwrap(),
    ]);
    assert_eq!(
        stdout(&o).trim(),
        "added marketplace shop: tidy",
        "{}",
        stderr(&o)
    );
    assert!(stdout(&env.rein(&["plugin", "marketplace", "list"])).contains("shop  from "));

    let o = env.rein(&["plugin", "install", "tidy@shop"]);
    assert!(
        stdout(&o).contains("installed tidy 0.3.1"),
        "{}",
        stderr(&o)
    );
    let script = env.script("s.json", &json!({"turns": [{"text": "ok"}]}));
    let o = env.replay_json(&script, &["--command", "review", "a.rs"]);
    assert_eq!(user_message(&o), "Review a.rs for tidiness.");

    assert_clean_failure(
        &env.rein(&["plugin", "install", "escape@shop"]),
        2,
        "offers no plugin `escape`",
    );
    assert_clean_failure(
        &env.rein(&["plugin", "install", "tidy@elsewhere"]),
        2,
        "no marketplace named `elsewhere`",
    );
    let o = env.rein(&["plugin", "marketplace", "remove", "shop"]);
    assert_eq!(stdout(&o).trim(), "removed marketplace shop");
    assert!(stdout(&env.rein(&["plugin", "list"])).contains("tidy 0.3.1  enabled"));
}
