//! Inside the sandbox: the bridge between the command's loopback and
//! rein's proxy ([`super::netproxy`]).
//!
//! A command whose network is a list of hosts runs in a network namespace
//! with nothing but loopback, where no host port can be reached. The
//! front end's own executable, bound read-only into the sandbox, runs there
//! first as this bridge ([`main`], when its first argument is
//! [`BRIDGE_ARG`]):
//!
//! 1. it listens on a free loopback port of the sandbox;
//! 2. it starts the command with `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`
//!    (and their lower-case and npm forms) naming that port, and
//!    `NO_PROXY` naming loopback (servers the command starts itself);
//! 3. each connection to the port is joined, byte for byte, to a new
//!    connection to the proxy's Unix socket (bound into the sandbox);
//! 4. when the command exits, the bridge exits with its code (128 + the
//!    signal when a signal ended it).
//!
//! It uses threads and blocking sockets only: it runs before, and instead
//! of, anything else of the front end.

use std::ffi::OsString;
use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The first argument that makes a front end's executable the bridge.
pub const BRIDGE_ARG: &str = "__rein-net-bridge";

/// The executable that serves as the bridge, registered once by the front
/// end ([`register`]); without one, a command whose network is a list of
/// hosts gets no network at all.
static EXECUTABLE: OnceLock<PathBuf> = OnceLock::new();

/// Make `exe` (the front end's own executable, which calls [`main`] when
/// started with [`BRIDGE_ARG`]) the bridge of this process's commands.
pub fn register(exe: PathBuf) {
    let _ = EXECUTABLE.set(exe);
}

/// The registered bridge executable, if any.
pub fn executable() -> Option<&'static PathBuf> {
    EXECUTABLE.get()
}

/// The variables a command's HTTP clients read for their proxy.
const PROXY_VARS: [&str; 8] = [
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "npm_config_proxy",
    "npm_config_https_proxy",
];

/// Run as the bridge: `args` are what follows [`BRIDGE_ARG`]: the proxy's
/// socket, `--`, then the program and its arguments. The process's exit
/// code.
pub fn main(args: &[OsString]) -> i32 {
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("[rein network bridge: {e}; the command did not run]");
            125
        }
    }
}

fn run(args: &[OsString]) -> io::Result<i32> {
    let bad = || io::Error::other("usage: SOCKET -- PROGRAM [ARGS...]");
    let (socket, rest) = args.split_first().ok_or_else(bad)?;
    let (sep, command) = rest.split_first().ok_or_else(bad)?;
    let (program, program_args) = command.split_first().ok_or_else(bad)?;
    if sep != "--" {
        return Err(bad());
    }
    let listener = TcpListener::bind(("127.0.0.1", 0))?;
    let url = format!("http://127.0.0.1:{}", listener.local_addr()?.port());
    let socket = PathBuf::from(socket);
    std::thread::spawn(move || accept(listener, socket));
    let mut cmd = Command::new(program);
    cmd.args(program_args);
    for var in PROXY_VARS {
        cmd.env(var, &url);
    }
    for var in ["NO_PROXY", "no_proxy"] {
        cmd.env(var, "localhost,127.0.0.1,::1");
    }
    let status = cmd.status()?;
    Ok(status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}

fn accept(listener: TcpListener, socket: PathBuf) {
    for conn in listener.incoming().flatten() {
        let socket = socket.clone();
        std::thread::spawn(move || {
            if let Ok(proxy) = UnixStream::connect(&socket) {
                join(conn, proxy);
            }
        });
    }
}

/// Copy both ways until each side has finished sending.
fn join(tcp: TcpStream, unix: UnixStream) {
    let (Ok(tcp2), Ok(unix2)) = (tcp.try_clone(), unix.try_clone()) else {
        return;
    };
    let up = std::thread::spawn(move || {
        let (mut from, mut to) = (tcp2, unix2);
        let _ = io::copy(&mut from, &mut to);
        let _ = to.shutdown(Shutdown::Write);
    });
    let (mut from, mut to) = (unix, tcp);
    let _ = io::copy(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
    let _ = up.join();
}
