//! `[sandbox]`: what shell commands may read besides the built-in scope, and
//! the resource limits of each command.
//!
//! ```toml
//! [sandbox]
//! read_paths = ["~/datasets", "/srv/shared"]   # extra folders commands may read
//! max_concurrent = 8                           # commands running at once
//! processes = 1024                             # processes + threads per command
//! address_space_mib = 8192                     # RLIMIT_AS of each process
//! memory_mib = 8192                            # the whole command (cgroup)
//! file_size_mib = 1024                         # largest file written
//! tmp_size_mib = 1024                          # private /tmp (bubblewrap)
//! ```
//!
//! A `0` for a size or for `processes` means "no limit".

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use rein_core::CommandLimits;
use serde::Deserialize;

const MIB: u64 = 1024 * 1024;

/// `[sandbox]` as written in one file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxSection {
    /// Folders commands may read although they lie in a hidden place (the
    /// home folder). Absolute, `~/`-relative, or relative to the file's
    /// folder.
    #[serde(default)]
    pub read_paths: Vec<String>,
    pub max_concurrent: Option<usize>,
    pub processes: Option<u64>,
    pub address_space_mib: Option<u64>,
    pub memory_mib: Option<u64>,
    pub file_size_mib: Option<u64>,
    pub tmp_size_mib: Option<u64>,
}

/// The `[sandbox]` settings after layering.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxSettings {
    /// Absolute paths, in the order the files gave them.
    pub read_paths: Vec<PathBuf>,
    pub limits: CommandLimits,
}

impl SandboxSettings {
    /// Layer one file's section over what came before; `base` is the
    /// file's folder, `home` the user's home (for `~/`).
    pub fn apply(&mut self, s: SandboxSection, base: &Path, home: Option<&Path>) -> Result<()> {
        for raw in s.read_paths {
            self.read_paths.push(resolve(&raw, base, home)?);
        }
        let l = &mut self.limits;
        if let Some(n) = s.max_concurrent {
            if n == 0 {
                bail!("[sandbox] max_concurrent must be at least 1");
            }
            l.max_concurrent = n;
        }
        if let Some(n) = s.processes {
            l.processes = n;
        }
        for (value, slot, key) in [
            (
                s.address_space_mib,
                &mut l.address_space,
                "address_space_mib",
            ),
            (s.memory_mib, &mut l.memory, "memory_mib"),
            (s.file_size_mib, &mut l.file_size, "file_size_mib"),
            (s.tmp_size_mib, &mut l.tmp_size, "tmp_size_mib"),
        ] {
            if let Some(mib) = value {
                *slot = mib
                    .checked_mul(MIB)
                    .ok_or_else(|| anyhow::anyhow!("[sandbox] {key} is too large: {mib}"))?;
            }
        }
        Ok(())
    }
}

fn resolve(raw: &str, base: &Path, home: Option<&Path>) -> Result<PathBuf> {
    let raw = raw.trim();
    if raw.is_empty() {
        bail!("[sandbox] read_paths holds an empty path");
    }
    if raw == "~" {
        bail!(
            "[sandbox] read_paths cannot make the whole home folder readable: name folders in it"
        );
    }
    let path = match raw.strip_prefix("~/") {
        Some(rest) => match home {
            Some(h) => h.join(rest),
            None => bail!("[sandbox] read_paths entry {raw:?} needs HOME to be set"),
        },
        None => base.join(raw),
    };
    if Some(path.as_path()) == home {
        bail!(
            "[sandbox] read_paths cannot make the whole home folder readable: name folders in it"
        );
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn sizes_are_mib_and_paths_resolve_against_home_and_the_file() {
        let section: SandboxSection = toml::from_str(
            "read_paths = [\"~/data\", \"/srv/x\", \"rel\"]\nmax_concurrent = 3\nprocesses = 64\n\
             file_size_mib = 10\ntmp_size_mib = 0\n",
        )
        .unwrap();
        let mut s = SandboxSettings::default();
        s.apply(
            section,
            Path::new("/proj/.rein"),
            Some(Path::new("/home/u")),
        )
        .unwrap();
        assert_eq!(
            s.read_paths,
            [
                PathBuf::from("/home/u/data"),
                PathBuf::from("/srv/x"),
                PathBuf::from("/proj/.rein/rel")
            ]
        );
        assert_eq!(s.limits.max_concurrent, 3);
        assert_eq!(s.limits.processes, 64);
        assert_eq!(s.limits.file_size, 10 * MIB);
        assert_eq!(s.limits.tmp_size, 0);
        assert_eq!(s.limits.memory, CommandLimits::default().memory);
    }

    #[test]
    fn the_whole_home_and_nonsense_are_refused() {
        let home = Some(Path::new("/home/u"));
        for bad in [
            "read_paths = [\"~\"]",
            "read_paths = [\"/home/u\"]",
            "read_paths = [\"\"]",
            "max_concurrent = 0",
        ] {
            let section: SandboxSection = toml::from_str(bad).unwrap();
            let e = SandboxSettings::default()
                .apply(section, Path::new("/"), home)
                .unwrap_err();
            assert!(e.to_string().contains("[sandbox]"), "{bad}: {e}");
        }
        assert!(toml::from_str::<SandboxSection>("nproc = 3").is_err());
    }
}
