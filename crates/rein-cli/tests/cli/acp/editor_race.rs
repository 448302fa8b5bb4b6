//! The editor bridge under attack: while the model's reads and writes go
//! through an editor that opens paths by name, a folder of the workspace
//! is swapped for a symlink to a fake `~/.ssh` outside it and back, in a
//! tight loop (as a sandboxed command can do with `renameat2`). No secret
//! may reach the model and nothing may be written outside, however the
//! swap falls.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use serde_json::{Value, json};

use super::*;

const SECRET: &str = "-----BEGIN OPENSSH PRIVATE KEY----- fake secret key";

/// Exchange `a` and `b` atomically until `stop`, in bursts of tight
/// swapping with short pauses in the real state between them (so that some
/// reads do reach the editor however loaded the machine is); counts the
/// swaps.
fn swap_loop(a: std::path::PathBuf, b: std::path::PathBuf, stop: Arc<AtomicBool>) -> u64 {
    let a = CString::new(a.as_os_str().as_bytes()).unwrap();
    let b = CString::new(b.as_os_str().as_bytes()).unwrap();
    let swaps = AtomicU64::new(0);
    while !stop.load(Ordering::Relaxed) {
        // SAFETY: NUL-terminated paths; the result is only counted.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_renameat2,
                libc::AT_FDCWD,
                a.as_ptr(),
                libc::AT_FDCWD,
                b.as_ptr(),
                libc::RENAME_EXCHANGE,
            )
        };
        if rc == 0 {
            let n = swaps.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_multiple_of(64) {
                std::thread::sleep(std::time::Duration::from_micros(700));
            }
        }
    }
    swaps.into_inner()
}

#[test]
fn acp_a_folder_swapped_for_a_symlink_during_editor_reads_and_writes_leaks_nothing() {
    let env = Env::new();
    let ws = std::fs::canonicalize(env.ws.path()).unwrap();
    let home = tempfile::tempdir().unwrap();
    let ssh = std::fs::canonicalize(home.path()).unwrap().join(".ssh");
    std::fs::create_dir(&ssh).unwrap();
    std::fs::write(ssh.join("id_rsa"), SECRET).unwrap();
    // `keys` is a real folder with a decoy of the same name; `alt` the
    // symlink that takes its place half of the time.
    std::fs::create_dir(ws.join("keys")).unwrap();
    std::fs::write(ws.join("keys/id_rsa"), "decoy\n").unwrap();
    std::os::unix::fs::symlink(&ssh, ws.join("alt")).unwrap();
    // Each turn reads the key four ways and writes two files into the
    // folder (arguments differ turn to turn: the loop guard stays quiet).
    let turns: Vec<Value> = (1..=10)
        .map(|t| {
            let mut calls = Vec::new();
            for r in 1..=4 {
                calls.push(json!({"id": format!("r{t}-{r}"), "name": "read_file",
                    "arguments": {"path": "keys/id_rsa", "offset": 1, "limit": t * 10 + r}}));
            }
            for w in 1..=2 {
                calls.push(json!({"id": format!("w{t}-{w}"), "name": "write_file",
                    "arguments": {"path": format!("keys/planted{w}.txt"),
                                  "content": format!("planted {t}\n")}}));
            }
            json!({"tool_calls": calls})
        })
        .chain([json!({"text": "Done."})])
        .collect();
    let script = env.script("race.json", &json!({ "turns": turns }));
    let mut c = Client::start_offering(
        &env,
        &script,
        &["--mode", "auto"],
        json!({"fs": {"readTextFile": true, "writeTextFile": true}}),
    );
    c.fs_disk = true;
    let session = c.new_session(&ws);
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (a, b, stop) = (ws.join("keys"), ws.join("alt"), stop.clone());
        std::thread::spawn(move || swap_loop(a, b, stop))
    };
    let done = c.prompt(&session, "read the key and plant files");
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert_eq!(done["result"]["stopReason"], "end_turn", "{:#?}", c.seen);
    assert!(swaps > 100, "the swap loop hardly ran: {swaps}");
    // The reads did go through the editor (which followed the swap when
    // it fell that way).
    let reads = c
        .fs_asked
        .iter()
        .filter(|m| m["method"] == "fs/read_text_file")
        .count();
    assert!(reads > 0, "no read reached the editor: {:#?}", c.fs_asked);
    assert!(
        !c.fs_asked
            .iter()
            .any(|m| m["method"] == "fs/write_text_file"),
        "a write went to the editor by name: {:#?}",
        c.fs_asked
    );
    drop(c);
    // Nothing of the secret reached the model, in any result or message.
    for m in stored(&env, &session) {
        let text = m.to_string();
        assert!(!text.contains("fake secret key"), "leaked: {text}");
    }
    // Nothing was written outside.
    let outside: Vec<String> = std::fs::read_dir(&ssh)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(outside, vec!["id_rsa".to_string()], "written outside");
    assert_eq!(std::fs::read_to_string(ssh.join("id_rsa")).unwrap(), SECRET);
}
