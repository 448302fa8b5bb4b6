//! Skills through the binary: a project's `.agents/skills/NAME/SKILL.md`
//! is listed in the prompt and loaded with the `skill` tool; `$name` in the
//! prompt attaches it; a script of a skill from a folder that is not
//! trusted is asked about even in `auto` mode, and runs once the folder is
//! trusted; a broken SKILL.md is one note naming file and line.

use serde_json::json;

use super::support::*;

fn skill(env: &Env, name: &str, text: &str) {
    let dir = env.ws.path().join(".agents/skills").join(name);
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(dir.join("SKILL.md"), text).unwrap();
    std::fs::write(dir.join("scripts/count.sh"), "echo counted\n").unwrap();
}

#[test]
fn a_projects_skill_is_loaded_and_its_script_asks_until_the_folder_is_trusted() {
    let env = Env::new();
    skill(
        &env,
        "counter",
        "---\nname: counter\ndescription: Count things with the bundled script.\n---\nRun scripts/count.sh from the skill's folder.\n",
    );
    skill(&env, "broken", "---\nname: other\ndescription: x\n---\n");
    let script = env.script(
        "s.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "skill", "arguments": {"name": "counter"}}]},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "sh .agents/skills/counter/scripts/count.sh"}}]},
            {"text": "done"}
        ]}),
    );
    let run = |env: &Env| env.replay_json(&script, &["--mode", "auto", "count with $counter"]);
    let o = run(&env);
    let err = stderr(&o);
    assert!(
        err.contains(
            "broken/SKILL.md: line 2: the name `other` is not the folder's (`broken`); skipped"
        ),
        "{err}"
    );
    let events = json_lines(&o);
    let user = events
        .iter()
        .find(|e| e["message"]["role"] == "user")
        .unwrap();
    assert!(
        user["message"]["content"]
            .as_str()
            .unwrap()
            .contains("[skill `counter`, attached by the user]"),
        "{user}"
    );
    let out = tool_outputs(&o);
    assert!(
        out[0].contains("Run scripts/count.sh") && out[0].contains("scripts/count.sh"),
        "{out:?}"
    );
    assert!(
        !out[1].contains("counted"),
        "an untrusted skill's script ran: {out:?}"
    );
    assert!(
        out[1].contains("from a folder you have not trusted"),
        "{out:?}"
    );

    let ws = std::fs::canonicalize(env.ws.path()).unwrap();
    assert_eq!(
        env.rein(&["trust", ws.to_str().unwrap()]).status.code(),
        Some(0)
    );
    let o = run(&env);
    let out = tool_outputs(&o);
    assert!(out[1].contains("counted"), "{out:?}");
}

/// The escalation must not hang on how the path is written: each
/// respelling of the untrusted skill's script is asked about (refused
/// headless) in `auto` mode, and the script never runs.
#[test]
fn respelling_an_untrusted_skills_script_path_does_not_get_around_the_question() {
    let env = Env::new();
    skill(
        &env,
        "counter",
        "---\nname: counter\ndescription: Count things.\n---\nRun scripts/count.sh.\n",
    );
    std::os::unix::fs::symlink(
        env.ws.path().join(".agents/skills/counter/scripts"),
        env.ws.path().join("tools"),
    )
    .unwrap();
    let spellings = [
        "sh ./.agents//skills/counter/../counter/scripts/count.sh",
        "sh \"$PWD\"/.agents/skills/counter/scripts/count.sh",
        "sh '.agents'/skills/counter/scripts/count.sh",
        "sh tools/count.sh",
        "sh -c 'cd .agents && sh skills/counter/scripts/count.sh'",
        "cd .agents/skills && sh */scripts/count.sh",
        "cp .agents/skills/counter/scripts/count.sh c.sh && sh c.sh",
    ];
    let calls: Vec<serde_json::Value> = spellings
        .iter()
        .map(|c| json!({"tool_calls": [{"name": "bash", "arguments": {"command": c}}]}))
        .chain([json!({"text": "done"})])
        .collect();
    let script = env.script("s.json", &json!({ "turns": calls }));
    let o = env.replay_json(&script, &["--mode", "auto", "count"]);
    let out = tool_outputs(&o);
    assert_eq!(out.len(), spellings.len(), "{}", stderr(&o));
    for (command, output) in spellings.iter().zip(&out) {
        assert!(!output.contains("counted"), "ran: {command}: {output}");
        assert!(
            output.contains("from a folder you have not trusted"),
            "{command}: {output}"
        );
    }
    // Other commands still run without asking in auto mode.
    let script = env.script(
        "t.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo plain && ls"}}]},
            {"text": "done"}
        ]}),
    );
    let o = env.replay_json(&script, &["--mode", "auto", "go"]);
    assert!(tool_outputs(&o)[0].contains("plain"), "{}", stderr(&o));
}

#[test]
fn exec_names_an_unknown_skill_mention_in_a_note_but_not_shell_variables_or_prices() {
    let env = Env::new();
    skill(
        &env,
        "counter",
        "---\nname: counter\ndescription: Count things.\n---\nCount.\n",
    );
    let script = env.script("s.json", &json!({"turns": [{"text": "done"}]}));
    let o = env.replay_json(&script, &["use $countr on $HOME for $5, then `echo $user`"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(
            "note: no skill named `countr`, so `$countr` attached nothing; the skills are: counter"
        ),
        "{err}"
    );
    assert_eq!(err.matches("no skill named").count(), 1, "{err}");
}
