//! Link-time layout of the release `rein` binary (issue 37: peak memory).
//!
//! A headless run executes about 3.5 MB of the binary's 39 MB of code, but
//! spread over the whole text: the kernel maps file pages 64 KiB around
//! each fault, so before this about 18 MiB of text was resident. Two linker
//! options bring it down, in release builds only:
//!
//! 1. `--symbol-ordering-file=text-order.txt`: the functions a headless run
//!    executes are laid out together at the start of the text. The list is
//!    made by `scripts/text-order.sh` (valgrind on the scripted bench task);
//!    a name the build no longer has is skipped without a warning, so a
//!    stale list costs memory, never a build.
//! 2. `-z pack-relative-relocs`: relative relocations packed as DT_RELR
//!    (glibc 2.36 and later), so start-up no longer reads 1.8 MB of
//!    `.rela.dyn`. The binary stays position-independent.
//!
//! Both need the linker rustc uses by default for x86_64 Linux since 1.90
//! (its own lld). When the build picks another linker, or another target,
//! nothing is added and the binary is laid out as the linker likes.

use std::env;
use std::path::Path;
use std::process::Command;

const ORDER_FILE: &str = "text-order.txt";

fn main() {
    println!("cargo:rerun-if-changed={ORDER_FILE}");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    if !layout_applies() {
        return;
    }
    let order = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap_or_default()).join(ORDER_FILE);
    if order.is_file() {
        println!(
            "cargo:rustc-link-arg-bin=rein=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bin=rein=-Wl,--no-warn-symbol-ordering");
    }
    if host_glibc_packs_relocations() {
        println!("cargo:rustc-link-arg-bin=rein=-Wl,-z,pack-relative-relocs");
    }
}

/// A release build for x86_64 Linux with glibc, native, on rustc's own lld:
/// no linker named in the environment or the flags.
fn layout_applies() -> bool {
    let var = |k: &str| env::var(k).unwrap_or_default();
    if var("PROFILE") != "release"
        || var("TARGET") != "x86_64-unknown-linux-gnu"
        || var("HOST") != var("TARGET")
        || env::var_os("RUSTC_LINKER").is_some()
        || env::var_os("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_some()
    {
        return false;
    }
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    if flags.contains("link") {
        return false;
    }
    rustc_minor().is_some_and(|minor| minor >= 90)
}

/// The minor version of the rustc building this crate (`1.95.0` gives 95).
fn rustc_minor() -> Option<u32> {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc).arg("-vV").output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let release = text.lines().find_map(|l| l.strip_prefix("release: "))?;
    release.split('.').nth(1)?.parse().ok()
}

/// glibc 2.36 or later on the build machine, which is the target here.
fn host_glibc_packs_relocations() -> bool {
    let Ok(out) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(version) = text.trim().strip_prefix("glibc ") else {
        return false;
    };
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (2, 36)
}
