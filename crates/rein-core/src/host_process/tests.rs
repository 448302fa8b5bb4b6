use super::*;
use std::io::Read;
use std::time::{Duration, Instant};

/// Whether process `pid` is gone (or a zombie nobody reaped yet).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
    }
}

fn wait_gone(pid: u32) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        if gone(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

fn python3() -> bool {
    Command::new("python3").arg("--version").output().is_ok()
}

#[test]
fn the_environment_is_the_allowlist_the_project_the_safe_path_and_the_entrys_own() {
    let launch = HostLaunch {
        project: Some("/p/roj".into()),
        env: vec![
            ("PYTHONSAFEPATH".into(), "".into()),
            ("X_OWN".into(), "1".into()),
        ],
        ..HostLaunch::default()
    };
    let vars = launch.vars();
    let get = |n: &str| vars.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    assert_eq!(get("REIN_PROJECT_DIR"), Some("/p/roj".into()));
    assert_eq!(get("CLAUDE_PROJECT_DIR"), Some("/p/roj".into()));
    assert_eq!(get("X_OWN"), Some("1".into()));
    // The entry's own word wins over the default.
    assert_eq!(get("PYTHONSAFEPATH"), Some("".into()));
    assert_eq!(
        HostLaunch::default()
            .vars()
            .iter()
            .filter(|(k, v)| k == "PYTHONSAFEPATH" && v == "1")
            .count(),
        1
    );
    for (name, _) in &vars {
        let own =
            name == "X_OWN" || name == "PYTHONSAFEPATH" || PROJECT_VARS.iter().any(|p| name == *p);
        assert!(own || env::passes(name, &[]), "{name:?} leaked");
    }
}

#[test]
fn a_host_process_runs_in_an_empty_folder_it_cannot_write() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("Makefile"), "all:\n\ttouch pwned\n").unwrap();
    let launch = HostLaunch::for_project(project.path());
    let out = launch
        .command("sh")
        .args(["-c", "pwd; ls -A; echo $REIN_PROJECT_DIR"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], neutral_dir().to_str().unwrap(), "{text}");
    assert_eq!(
        lines[1],
        project.path().to_str().unwrap(),
        "empty, then the project: {text}"
    );
    assert_ne!(neutral_dir(), project.path());
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(neutral_dir())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o500);
    // A relative `cwd` of the entry's is taken from the project.
    let launch = HostLaunch {
        cwd: Some("sub".into()),
        ..HostLaunch::for_project(project.path())
    };
    assert_eq!(launch.working_dir(), project.path().join("sub"));
}

#[test]
fn python_dash_m_does_not_import_a_package_of_an_explicit_working_folder() {
    if !python3() {
        return;
    }
    let project = tempfile::tempdir().unwrap();
    let marker = project.path().join("pwned");
    let pkg = project.path().join("json");
    std::fs::create_dir(&pkg).unwrap();
    std::fs::write(
        pkg.join("__init__.py"),
        format!("open({:?}, 'w').write('x')\n", marker.to_str().unwrap()),
    )
    .unwrap();
    // The user's own `cwd` is the project: the safe path still holds.
    let launch = HostLaunch {
        cwd: Some(project.path().to_path_buf()),
        ..HostLaunch::for_project(project.path())
    };
    let input = project.path().join("in.json");
    std::fs::write(&input, "{}").unwrap();
    let out = launch
        .command("python3")
        .args(["-m", "json.tool"])
        .arg(&input)
        .output()
        .unwrap();
    assert!(!marker.exists(), "the workspace's json/ ran");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Without rein's isolation it would have.
    Command::new("python3")
        .args(["-m", "json.tool"])
        .arg(&input)
        .current_dir(project.path())
        .output()
        .unwrap();
    assert!(marker.exists(), "the attack works without the isolation");
}

#[test]
fn dropping_the_group_kills_a_background_grandchild() {
    let mut child = HostLaunch::default()
        .command("sh")
        .args(["-c", "sleep 300 & echo $!; exec sleep 300"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let group = ProcessGroup::of(child.id()).unwrap();
    let mut line = [0u8; 16];
    let n = child.stdout.take().unwrap().read(&mut line).unwrap();
    let grandchild: u32 = String::from_utf8_lossy(&line[..n]).trim().parse().unwrap();
    assert!(!gone(grandchild));
    drop(group);
    let _ = child.wait();
    assert!(
        wait_gone(grandchild),
        "the grandchild {grandchild} outlived its group"
    );
}

#[test]
fn a_program_that_cannot_start_is_an_error() {
    let err = HostLaunch::default()
        .command("/nonexistent/rein-no-such-program")
        .spawn()
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
}

/// Run as a stand-in for rein by the test below: start a host process
/// with a background grandchild, print the grandchild's pid, wait.
#[test]
fn stand_in_for_rein_starting_a_grandchild() {
    if std::env::var_os("REIN_HOST_PROCESS_STAND_IN").is_none() {
        return;
    }
    let mut child = HostLaunch::default()
        .command("sh")
        .args(["-c", "sleep 300 & echo $!; exec sleep 300"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = [0u8; 16];
    let n = child.stdout.take().unwrap().read(&mut line).unwrap();
    println!("grandchild={}", String::from_utf8_lossy(&line[..n]).trim());
    std::thread::sleep(Duration::from_secs(300));
    let _ = child.wait();
}

#[test]
fn a_grandchild_dies_when_rein_is_killed() {
    let mut rein = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "host_process::tests::stand_in_for_rein_starting_a_grandchild",
            "--nocapture",
        ])
        .env("REIN_HOST_PROCESS_STAND_IN", "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = rein.stdout.take().unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 256];
    let grandchild: u32 = loop {
        let n = out.read(&mut buf).unwrap();
        assert!(n > 0, "the stand-in ended: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        if let Some(pid) = seen
            .split("grandchild=")
            .nth(1)
            .and_then(|rest| rest.split_once('\n'))
            .and_then(|(pid, _)| pid.trim().parse().ok())
        {
            break pid;
        }
    };
    assert!(!gone(grandchild));
    rein.kill().unwrap();
    rein.wait().unwrap();
    assert!(
        wait_gone(grandchild),
        "the grandchild {grandchild} outlived a SIGKILLed rein"
    );
}
