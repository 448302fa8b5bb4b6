//! The running sandbox (one bubblewrap per session whose process 1 is
//! rein's supervisor): each command starts fresh in it, nothing of one
//! command reaches the next (processes, `/tmp`, `/dev/shm`, System V
//! IPC), nothing survives the session, commands cannot take the
//! supervisor over, a supervisor killed from outside is replaced, and
//! `REIN_SANDBOX_SERVER=off` gives every command a bubblewrap of its own.
//! The workspace lies under `/tmp` here on purpose: the supervisor empties
//! the sandbox's `/tmp` after each command and must never enter the
//! workspace bound inside it.

use serde_json::{Value, json};

use super::support::{json_lines, stderr};

fn bubblewrap() -> bool {
    let ok = rein_tools::sandbox::available() == rein_tools::sandbox::SandboxKind::Bubblewrap;
    if !ok {
        rein_test_support::skip(
            rein_test_support::Component::Bubblewrap,
            "the running sandbox is a bubblewrap one",
        );
    }
    ok
}

struct Run {
    _dir: tempfile::TempDir,
    ws: std::path::PathBuf,
    home: std::path::PathBuf,
    marker: String,
}

/// A workspace under `/tmp` and a marker of the test's own (`name`) for
/// the processes it starts.
fn setup(name: &str) -> Run {
    let dir = tempfile::Builder::new()
        .prefix("rein-srv-")
        .tempdir_in("/tmp")
        .unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let (ws, home) = (root.join("ws"), root.join("home"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(ws.join("keep.txt"), "kept\n").unwrap();
    let marker = format!("srv{name}{}", std::process::id());
    Run {
        _dir: dir,
        ws,
        home,
        marker,
    }
}

/// Run `commands` one per turn; the bash outputs in order.
fn run(r: &Run, envs: &[(&str, &str)], commands: &[&str]) -> Vec<String> {
    let mut turns: Vec<Value> = commands
        .iter()
        .map(|c| json!({"tool_calls": [{"name": "bash", "arguments": {"command": c}}]}))
        .collect();
    turns.push(json!({"text": "done"}));
    let script = r.home.join("script.json");
    std::fs::write(&script, json!({ "turns": turns }).to_string()).unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_rein"));
    cmd.env("REIN_HOME", &r.home)
        .env_remove("REIN_PROVIDER")
        .env_remove("REIN_SANDBOX_SERVER")
        .current_dir(&r.ws)
        .stdin(std::process::Stdio::null())
        .args(["exec", "--json", "--provider", "replay", "--script"])
        .arg(&script)
        .args(["--mode", "auto", "go"]);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let o = cmd.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    outputs(&json_lines(&o))
}

fn outputs(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "message_committed" && e["message"]["role"] == "tool")
        .map(|e| e["message"]["output"].as_str().unwrap_or("").to_string())
        .collect()
}

/// Host processes whose command line holds `needle`.
fn host_processes_with(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) {
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            let ours = e.file_name().to_str() == Some(&std::process::id().to_string());
            if text.contains(needle) && !ours {
                found.push(format!("{}: {text}", e.file_name().to_string_lossy()));
            }
        }
    }
    found
}

/// A grep pattern for `marker` that does not match itself.
fn pat(marker: &str) -> String {
    format!("[{}]{}", &marker[..1], &marker[1..])
}

/// The host pid of the supervisor serving the workspace `ws`: the child
/// of the bubblewrap whose command line names it.
fn supervisor_of(ws: &std::path::Path) -> Option<i32> {
    let bwrap: Vec<String> = host_processes_with(&ws.to_string_lossy())
        .iter()
        .filter(|p| p.contains("bwrap"))
        .map(|p| p.split(':').next().unwrap().to_string())
        .collect();
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let ppid = stat
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().nth(1));
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if ppid.is_some_and(|p| bwrap.iter().any(|b| b == p))
            && String::from_utf8_lossy(&cmdline).contains("__rein-sandbox-server")
        {
            return e.file_name().to_str()?.parse().ok();
        }
    }
    None
}

const WHO_IS_PID_1: &str = "tr '\\0' ' ' < /proc/1/cmdline; echo";

#[test]
fn no_command_leaves_anything_for_the_next_and_nothing_survives_the_session() {
    if !bubblewrap() {
        return;
    }
    let r = setup("left");
    let m = &r.marker;
    let p = pat(m);
    let first = format!(
        "{WHO_IS_PID_1}; (exec -a {m}-bg sleep 1000) & setsid sh -c '(exec -a {m}-setsid sleep 1000) &' ; \
         nohup sh -c 'exec -a {m}-nohup sleep 1000' >/dev/null 2>&1 & \
         touch /tmp/{m}-tmp /var/tmp/{m}-vartmp /dev/shm/{m}-shm; mkdir -p /tmp/{m}-dir/a; \
         ipcmk -M 4096 >/dev/null; echo planted"
    );
    let second = format!(
        "{WHO_IS_PID_1}; ps -eo args | grep -c {p}-; ls -a /tmp /var/tmp /dev/shm | grep -c {m}; \
         ipcs -m | grep -c 0x; cat keep.txt"
    );
    let out = run(&r, &[], &[&first, &second]);
    assert!(out[0].contains("__rein-sandbox-server"), "{}", out[0]);
    assert!(out[0].contains("planted"), "{}", out[0]);
    let lines: Vec<&str> = out[1].lines().collect();
    assert!(lines[0].contains("__rein-sandbox-server"), "{}", out[1]);
    // No process, no file, no shared memory segment.
    assert_eq!(&lines[1..5], &["0", "0", "0", "kept"], "{}", out[1]);
    assert!(r.ws.join("keep.txt").is_file());
    assert_eq!(host_processes_with(m), Vec::<String>::new());
    // The session's sandbox itself is gone.
    assert_eq!(
        host_processes_with(&r.ws.to_string_lossy()),
        Vec::<String>::new()
    );
}

#[test]
fn commands_cannot_kill_stop_trace_or_reach_the_supervisor() {
    if !bubblewrap() {
        return;
    }
    let r = setup("hostile");
    let hostile = "kill -KILL 1; kill -STOP 1; kill -TERM 1; kill -SEGV 1; \
         for f in /proc/1/fd/*; do readlink $f >/dev/null 2>&1 && echo FD-READ; done; \
         for fd in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24; do \
           echo '{\"Run\":0}' 2>/dev/null > /proc/1/fd/$fd && echo WROTE-$fd; done; \
         cat /proc/1/environ >/dev/null 2>&1 && echo ENVIRON-READ; \
         cat /proc/1/mem >/dev/null 2>&1 && echo MEM-READ; \
         (command -v gdb >/dev/null && gdb -p 1 -batch -ex 'call (int)kill(0,9)' >/dev/null 2>&1); \
         ls -l /proc/self/fd | grep -c socket; echo survived";
    let out = run(&r, &[], &[hostile, WHO_IS_PID_1, "echo after"]);
    for bad in ["FD-READ", "WROTE-", "ENVIRON-READ", "MEM-READ"] {
        assert!(!out[0].contains(bad), "{}", out[0]);
    }
    assert!(out[0].contains("0\nsurvived"), "{}", out[0]);
    assert!(out[1].contains("__rein-sandbox-server"), "{}", out[1]);
    assert!(out[2].contains("after"), "{}", out[2]);
}

#[test]
fn a_fork_bomb_is_capped_and_gone_before_the_next_command() {
    if !bubblewrap() {
        return;
    }
    if !rein_tools::sandbox::cgroup_available() {
        rein_test_support::skip(
            rein_test_support::Component::Bubblewrap,
            "no cgroup caps processes here: a fork bomb would reach the host's limit",
        );
        return;
    }
    let r = setup("bomb");
    std::fs::write(r.home.join("config.toml"), "[sandbox]\nprocesses = 64\n").unwrap();
    // Many processes at once, each meant to outlive the command (a shell
    // fork bomb is refused before it runs; this one is not recognised).
    let bomb_py = format!(
        "import os\nn = 0\nfor i in range(300):\n    try:\n        if os.fork() == 0:\n            \
         os.execvp('sleep', ['{m}-bomb', '1000'])\n        n += 1\n    except OSError:\n        \
         pass\nprint('forked', n)\n",
        m = r.marker
    );
    std::fs::write(r.ws.join("bomb.py"), bomb_py).unwrap();
    let bomb = "python3 bomb.py";
    let next = format!("ps -eo args | grep -c {}-bomb; echo clean", pat(&r.marker));
    let out = run(&r, &[], &[bomb, &next]);
    assert!(out[0].contains("process limit (64) reached"), "{}", out[0]);
    assert!(!out[0].contains("forked 300"), "{}", out[0]);
    assert!(out[1].starts_with("0\nclean"), "{}", out[1]);
    assert_eq!(host_processes_with(&r.marker), Vec::<String>::new());
}

#[test]
fn a_supervisor_killed_from_outside_is_replaced_and_the_next_command_runs() {
    if !bubblewrap() {
        return;
    }
    let r = setup("killed");
    let wait = format!("(exec -a {}-wait sleep 60); echo never", r.marker);
    let script = r.home.join("script.json");
    let turns = json!({"turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": wait}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": WHO_IS_PID_1}}]},
        {"text": "done"}
    ]});
    std::fs::write(&script, turns.to_string()).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_rein"))
        .env("REIN_HOME", &r.home)
        .env_remove("REIN_PROVIDER")
        .env_remove("REIN_SANDBOX_SERVER")
        .current_dir(&r.ws)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .args(["exec", "--json", "--provider", "replay", "--script"])
        .arg(&script)
        .args(["--mode", "auto", "go"])
        .spawn()
        .unwrap();
    // Once the first command runs, kill its supervisor from the host.
    let supervisor = loop {
        let waiting = !host_processes_with(&format!("{}-wait", r.marker)).is_empty();
        if waiting && let Some(pid) = supervisor_of(&r.ws) {
            break pid;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before its supervisor was found"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    // SAFETY: a plain kill of the process found above.
    unsafe { libc::kill(supervisor, libc::SIGKILL) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let events = json_lines(&o);
    let out = outputs(&events);
    assert!(
        out[0].contains("sandbox stopped while the command ran"),
        "{}",
        out[0]
    );
    assert!(!out[0].contains("never"), "{}", out[0]);
    assert!(out[1].contains("__rein-sandbox-server"), "{}", out[1]);
    assert_eq!(host_processes_with(&r.marker), Vec::<String>::new());
}

#[test]
fn turned_off_every_command_gets_a_bubblewrap_of_its_own() {
    if !bubblewrap() {
        return;
    }
    let r = setup("off");
    let out = run(
        &r,
        &[("REIN_SANDBOX_SERVER", "off")],
        &[WHO_IS_PID_1, "touch /tmp/x; ls /tmp | grep -c '^x$'"],
    );
    assert!(!out[0].contains("__rein-sandbox-server"), "{}", out[0]);
    assert!(out[0].contains("bwrap"), "{}", out[0]);
    assert!(out[1].starts_with('1'), "{}", out[1]);
}

/// A path deeper than a name may be cannot be removed by name: the
/// sandbox that holds it retires, and the next command still finds `/tmp`
/// empty (in a new sandbox).
#[test]
fn a_leftover_too_deep_to_remove_retires_the_sandbox() {
    if !bubblewrap() {
        return;
    }
    let r = setup("deep");
    let deep = "cd /tmp && for i in $(seq 1 40); do \
         d=$(printf 'd%.0s' $(seq 1 200)); mkdir $d && cd $d || break; done; \
         touch leftover; pwd | wc -c";
    let out = run(
        &r,
        &[],
        // The workspace's own folder under /tmp is bound there: not counted.
        &[
            deep,
            "find /tmp -name leftover | wc -l; ls /tmp | grep -c '^dd'",
        ],
    );
    let depth: usize = out[0].lines().next().unwrap().trim().parse().unwrap();
    assert!(depth > 4096, "{}", out[0]);
    assert!(out[1].starts_with("0\n0"), "{}", out[1]);
}
