//! What rein and the sandbox's supervisor say to each other on their
//! control socket (a Unix stream socket pair): frames of a 4-byte
//! little-endian length and a JSON message, a frame's descriptors
//! (`SCM_RIGHTS`) travelling with its first byte.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

use serde::{Deserialize, Serialize};

/// Largest frame accepted (a command line is far smaller).
const MAX_FRAME: usize = 32 << 20;
/// Most descriptors one frame carries.
pub(crate) const MAX_FDS: usize = 2;

/// rein to the supervisor.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum ToServer {
    /// Start a command; the frame carries its stdout and stderr.
    Run(Job),
    /// Kill the running command and everything it started.
    Kill,
}

/// The supervisor to rein.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) enum FromServer {
    /// Set up, waiting for commands.
    Ready,
    /// The command runs.
    Started,
    /// The command is over and nothing it started runs any more (its raw
    /// wait status); `/tmp` and the IPC namespace are empty again.
    Exited(i32),
    /// As `Exited`, but something the command left could not be removed:
    /// the supervisor ends, and the next command needs a new sandbox.
    Retired(i32),
    /// The command could not be started.
    Failed(String),
}

/// One command for the supervisor: `bash -c script` in `cwd`, with exactly
/// `env`, leading its own session, under `limits`.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Job {
    pub script: String,
    pub cwd: Vec<u8>,
    pub env: Vec<(Vec<u8>, Vec<u8>)>,
    pub limits: super::super::rlimits::Plan,
}

/// Send `msg` with `fds` attached.
pub(crate) fn send<T: Serialize>(sock: &UnixStream, msg: &T, fds: &[RawFd]) -> io::Result<()> {
    let body = serde_json::to_vec(msg).map_err(io::Error::other)?;
    let len = u32::try_from(body.len()).map_err(io::Error::other)?;
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&len.to_le_bytes());
    frame.extend_from_slice(&body);
    let sent = sendmsg(sock, &frame, fds)?;
    (&*sock).write_all(&frame[sent..])
}

/// Receive one message and the descriptors sent with it; `None` at the
/// end of the stream (the other side is gone).
pub(crate) fn recv<T: for<'de> Deserialize<'de>>(
    sock: &UnixStream,
) -> io::Result<Option<(T, Vec<OwnedFd>)>> {
    let mut head = [0u8; 4];
    let (got, fds) = recvmsg(sock, &mut head)?;
    if got == 0 {
        return Ok(None);
    }
    (&*sock).read_exact(&mut head[got..])?;
    let len = u32::from_le_bytes(head) as usize;
    if len > MAX_FRAME {
        return Err(io::Error::other("frame too large"));
    }
    let mut body = vec![0u8; len];
    (&*sock).read_exact(&mut body)?;
    let msg = serde_json::from_slice(&body).map_err(io::Error::other)?;
    Ok(Some((msg, fds)))
}

fn sendmsg(sock: &UnixStream, data: &[u8], fds: &[RawFd]) -> io::Result<usize> {
    let fd_bytes = std::mem::size_of_val(fds);
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(fd_bytes as u32) } as usize;
    let mut control = vec![0u8; if fds.is_empty() { 0 } else { space }];
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    // SAFETY: msghdr is plain data; every pointer set below outlives the
    // sendmsg call, and the control buffer is CMSG_SPACE bytes long, which
    // is what CMSG_FIRSTHDR and CMSG_DATA address.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        if !fds.is_empty() {
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = space as _;
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(fd_bytes as u32) as _;
            std::ptr::copy_nonoverlapping(
                fds.as_ptr().cast::<u8>(),
                libc::CMSG_DATA(cmsg),
                fd_bytes,
            );
        }
        loop {
            let n = libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL);
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

fn recvmsg(sock: &UnixStream, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    let fd_bytes = MAX_FDS * std::mem::size_of::<RawFd>();
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(fd_bytes as u32) } as usize;
    let mut control = vec![0u8; space];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut fds = Vec::new();
    // SAFETY: the pointers in msghdr outlive the call; the kernel writes at
    // most msg_controllen bytes of control data, which CMSG_FIRSTHDR /
    // CMSG_NXTHDR walk within; each descriptor received is new and ours
    // (MSG_CMSG_CLOEXEC), so wrapping it in OwnedFd is sound.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let n = loop {
            let n = libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC);
            if n >= 0 {
                break n as usize;
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        };
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg);
                let count = ((*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize)
                    / std::mem::size_of::<RawFd>();
                for i in 0..count {
                    let fd = std::ptr::read_unaligned(data.cast::<RawFd>().add(i));
                    fds.push(OwnedFd::from_raw_fd(fd));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
        if msg.msg_flags & libc::MSG_CTRUNC != 0 {
            return Err(io::Error::other("too many descriptors in one frame"));
        }
        Ok((n, fds))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_frame_carries_its_message_and_descriptors() {
        let (a, b) = UnixStream::pair().unwrap();
        let (mut r, w) = std::io::pipe().unwrap();
        send(
            &a,
            &FromServer::Failed("x".repeat(50_000)),
            &[w.as_raw_fd()],
        )
        .unwrap();
        drop(w);
        let (msg, fds): (FromServer, _) = recv(&b).unwrap().unwrap();
        assert_eq!(msg, FromServer::Failed("x".repeat(50_000)));
        assert_eq!(fds.len(), 1);
        let mut w = std::fs::File::from(fds.into_iter().next().unwrap());
        w.write_all(b"through").unwrap();
        drop(w);
        let mut s = String::new();
        r.read_to_string(&mut s).unwrap();
        assert_eq!(s, "through");
        drop(a);
        assert!(recv::<FromServer>(&b).unwrap().is_none());
    }
}
