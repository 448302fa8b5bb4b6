//! Loopback ports for tests, never picked and then released: a port let go
//! before a child binds it may be taken by another process in between.
//!
//! - [`Handover`]: a listening socket the test opens and a child serves on,
//!   passed as the child's file descriptor 3.
//! - [`ClosedPort`]: a port bound but not listening, held by the test, so
//!   connecting to it is refused for as long as the test runs.

// Test support: a socket that cannot be made is the test's failure.
#![allow(clippy::expect_used)]

use std::net::TcpListener;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

/// The descriptor a child finds its listening socket on.
pub const HANDED_FD: i32 = 3;

/// A listening socket on 127.0.0.1 for a child process to serve on.
#[derive(Debug)]
pub struct Handover {
    listener: TcpListener,
}

impl Handover {
    /// A listening socket on a free loopback port.
    pub fn new() -> Handover {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding a loopback port");
        Handover { listener }
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.listener
            .local_addr()
            .expect("a bound socket's address")
            .port()
    }

    /// Make `cmd`'s child find the socket as its descriptor 3 (left open
    /// across exec); connections made before the child accepts wait in the
    /// socket's backlog.
    pub fn give_to(&self, cmd: &mut Command) {
        let fd = self.listener.as_raw_fd();
        // SAFETY: between fork and exec only async-signal-safe calls
        // (dup2, fcntl) on descriptors this process owns.
        unsafe {
            cmd.pre_exec(move || {
                if fd == HANDED_FD {
                    let flags = libc::fcntl(fd, libc::F_GETFD);
                    if flags < 0 || libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                } else if libc::dup2(fd, HANDED_FD) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
}

impl Default for Handover {
    fn default() -> Self {
        Handover::new()
    }
}

/// A loopback port bound by this process and not listening: connections
/// to it are refused, and no other process can bind it while this lives.
#[derive(Debug)]
pub struct ClosedPort {
    _socket: OwnedFd,
    port: u16,
}

impl ClosedPort {
    /// A port nothing listens on.
    pub fn new() -> ClosedPort {
        // SAFETY: plain socket calls on a descriptor owned from here on;
        // the address structs are zeroed then filled as the calls expect.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
            let socket = OwnedFd::from_raw_fd(fd);
            let mut addr: libc::sockaddr_in = std::mem::zeroed();
            addr.sin_family = libc::AF_INET as libc::sa_family_t;
            addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
            let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            let bound = libc::bind(fd, (&raw const addr).cast(), len);
            assert!(bound == 0, "bind: {}", std::io::Error::last_os_error());
            let mut got_len = len;
            let named = libc::getsockname(fd, (&raw mut addr).cast(), &mut got_len);
            assert!(
                named == 0,
                "getsockname: {}",
                std::io::Error::last_os_error()
            );
            ClosedPort {
                _socket: socket,
                port: u16::from_be(addr.sin_port),
            }
        }
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Default for ClosedPort {
    fn default() -> Self {
        ClosedPort::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_port_refuses_connections_and_cannot_be_bound_by_others() {
        let closed = ClosedPort::new();
        let refused = std::net::TcpStream::connect(("127.0.0.1", closed.port()));
        assert_eq!(
            refused.map_err(|e| e.kind()).err(),
            Some(std::io::ErrorKind::ConnectionRefused)
        );
        assert!(TcpListener::bind(("127.0.0.1", closed.port())).is_err());
    }

    #[test]
    fn a_handed_over_socket_is_served_by_the_child_on_fd_3() {
        let handover = Handover::new();
        let mut cmd = Command::new("python3");
        cmd.args([
            "-c",
            "import socket; s = socket.socket(fileno=3); c, _ = s.accept(); c.sendall(b'hi')",
        ]);
        handover.give_to(&mut cmd);
        let mut child = cmd.spawn().expect("python3 runs");
        let mut got = String::new();
        use std::io::Read;
        std::net::TcpStream::connect(("127.0.0.1", handover.port()))
            .unwrap()
            .read_to_string(&mut got)
            .unwrap();
        assert_eq!(got, "hi");
        assert!(child.wait().unwrap().success());
    }
}
