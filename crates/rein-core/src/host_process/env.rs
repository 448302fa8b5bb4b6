//! The variables of rein's environment that a process it starts may see:
//! an allowlist, not a denylist. Shared by the sandboxed shell and every
//! host process (MCP servers, hooks), so both scrub the same way.

use std::ffi::OsStr;

/// Variables passed to commands when rein has them: the session basics and
/// toolchain settings (none of which holds a secret by convention).
pub const ALLOWED: [&str; 50] = [
    // Session.
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    // Rust.
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "RUSTFLAGS",
    "RUST_BACKTRACE",
    // Go.
    "GOPATH",
    "GOROOT",
    "GOMODCACHE",
    "GOCACHE",
    "GOFLAGS",
    "GOTOOLCHAIN",
    "GO111MODULE",
    // JVM.
    "JAVA_HOME",
    "GRADLE_USER_HOME",
    "MAVEN_HOME",
    // Python.
    "PYENV_ROOT",
    "PYENV_VERSION",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "PYTHONPATH",
    "PYTHONDONTWRITEBYTECODE",
    // Node.
    "NVM_DIR",
    "NVM_BIN",
    "NODE_PATH",
    // C and C++ builds.
    "CC",
    "CXX",
    "AR",
    "CFLAGS",
    "CXXFLAGS",
    "CPPFLAGS",
    "LDFLAGS",
    "PKG_CONFIG_PATH",
    "LD_LIBRARY_PATH",
    "LIBRARY_PATH",
    "CPATH",
    // XDG folders (paths only).
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
];

/// Whether a variable of rein's environment passes to commands: named in
/// [`ALLOWED`], a locale variable (`LC_*`), or named exactly in `allow`.
pub fn passes(name: &OsStr, allow: &[String]) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    ALLOWED.contains(&name)
        || name.strip_prefix("LC_").is_some_and(|rest| {
            !rest.is_empty() && rest.chars().all(|c| c.is_ascii_uppercase() || c == '_')
        })
        || allow.iter().any(|a| a == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_listed_and_locale_variables_pass() {
        for name in ["PATH", "HOME", "LC_ALL", "LC_CTYPE", "CARGO_HOME", "TERM"] {
            assert!(passes(OsStr::new(name), &[]), "{name}");
        }
        for name in [
            "DATABASE_URL",
            "GH_PAT",
            "AWS_SECRET_ACCESS_KEY",
            "SSH_AUTH_SOCK",
            "https_proxy",
            "LC_",
            "LC_x",
            "path",
            "REIN_HOME",
        ] {
            assert!(!passes(OsStr::new(name), &[]), "{name}");
        }
        let allow = vec!["DATABASE_URL".to_string()];
        assert!(passes(OsStr::new("DATABASE_URL"), &allow));
        assert!(!passes(OsStr::new("DATABASE_URL2"), &allow));
    }
}
