//! nginx (the distribution's package) as the load balancer in front of
//! several `rein serve` processes, for the tests and the benches: it runs
//! `deploy/nginx/rein.conf` itself, with its `listen` and upstream
//! `server` lines rewritten to the ports in use.
//!
//! 1. [`binary`] finds nginx (none: the caller skips).
//! 2. [`command`] writes the rewritten `rein.conf` and a main
//!    `nginx.conf` (foreground, one worker, everything under `dir`) and
//!    returns the command, with the listening port handed over to it.

#![allow(clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};

use crate::ports::Handover;

/// nginx's binary, if installed.
pub fn binary() -> Option<String> {
    ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .map(str::to_string)
}

/// `deploy/nginx/rein.conf` with its `listen` on `port` and its upstream
/// servers `servers`.
pub fn deploy_config(port: u16, servers: &[String]) -> String {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/nginx/rein.conf");
    let text = std::fs::read_to_string(file).expect("deploy/nginx/rein.conf");
    let mut out = String::new();
    let mut upstream_written = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("listen ") {
            out.push_str(&format!("    listen 127.0.0.1:{port};\n"));
        } else if t.starts_with("server 127.0.0.1:") {
            if !std::mem::replace(&mut upstream_written, true) {
                for s in servers {
                    out.push_str(&format!("    server {s};\n"));
                }
            }
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    assert!(
        upstream_written,
        "the deploy config has no upstream servers"
    );
    out
}

/// nginx in the foreground (a master process and one worker; `user root`
/// only matters, and is needed, when run as root) with its own prefix
/// `dir`, serving on `port` in front of `servers`; `connections` per
/// worker.
pub fn command(
    bin: &str,
    dir: &Path,
    port: &Handover,
    servers: &[String],
    connections: usize,
) -> Command {
    std::fs::create_dir_all(dir.join("logs")).expect("nginx's folder");
    std::fs::write(dir.join("rein.conf"), deploy_config(port.port(), servers))
        .expect("nginx's rein.conf");
    let d = dir.display();
    let main = format!(
        "daemon off;\nuser root;\nworker_processes 1;\npid {d}/nginx.pid;\n\
         error_log {d}/logs/error.log notice;\nevents {{ worker_connections {connections}; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n\
         proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n\
         uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n  include {d}/rein.conf;\n}}\n"
    );
    std::fs::write(dir.join("nginx.conf"), main).expect("nginx.conf");
    let mut cmd = Command::new(bin);
    cmd.arg("-p")
        .arg(dir)
        .arg("-c")
        .arg(dir.join("nginx.conf"))
        .arg("-e")
        .arg(dir.join("logs/error.log"))
        // nginx serves on inherited sockets named here.
        .env("NGINX", "3;")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    port.give_to(&mut cmd);
    cmd
}
