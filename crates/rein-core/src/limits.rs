//! Resource limits for each shell command: what one command may use before
//! the kernel stops it, and how many commands run at once.
//!
//! The sandbox applies them (rlimits in the child before `exec`, a cgroup
//! where one can be made, a size-capped private `/tmp` under bubblewrap);
//! this type only carries the numbers from the configuration to it.

/// One GiB, in bytes.
pub const GIB: u64 = 1024 * 1024 * 1024;

/// Limits for every shell command. A zero means "no limit" for that item
/// (except `max_concurrent`, where zero is read as one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CommandLimits {
    /// Virtual address space of each process, in bytes (`RLIMIT_AS`).
    /// Generous by default: node and the JVM reserve far more than they use.
    pub address_space: u64,
    /// Largest file a command may write, in bytes (`RLIMIT_FSIZE`).
    pub file_size: u64,
    /// Processes and threads alive at once in one command (a `pids`
    /// cgroup where rein can make one).
    pub processes: u64,
    /// Memory of the whole command, in bytes (a `memory` cgroup where rein
    /// can make one; tmpfs pages count).
    pub memory: u64,
    /// Size of the private `/tmp` and `/var/tmp` under bubblewrap, in bytes
    /// each.
    pub tmp_size: u64,
    /// Commands running at the same time in one rein process; further calls
    /// wait for a slot.
    pub max_concurrent: usize,
}

impl Default for CommandLimits {
    fn default() -> Self {
        CommandLimits {
            address_space: 8 * GIB,
            file_size: GIB,
            processes: 1024,
            memory: 8 * GIB,
            tmp_size: GIB,
            max_concurrent: 8,
        }
    }
}

/// A byte count for messages: whole GiB or MiB when exact, else bytes.
pub fn human_bytes(n: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if n >= GIB && n.is_multiple_of(GIB) {
        format!("{} GiB", n / GIB)
    } else if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_read_naturally() {
        assert_eq!(human_bytes(GIB), "1 GiB");
        assert_eq!(human_bytes(8 * GIB), "8 GiB");
        assert_eq!(human_bytes(512 * 1024 * 1024), "512 MiB");
        assert_eq!(human_bytes(1000), "1000 bytes");
    }
}
