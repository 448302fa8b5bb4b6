//! Keeping a store password out of the process list.
//!
//! Any user of the machine can read `/proc/PID/cmdline`, so `rein serve
//! --store postgres://user:secret@host/db` would publish the password for
//! as long as the server runs. The safe ways are `REIN_STORE`, `store` in
//! the user's config.toml and `PGPASSWORD` (the environment is readable by
//! the same user only). When a password does come on the command line, it
//! is overwritten with `*` in the process's own argument memory (what the
//! kernel shows as the command line) as the first thing `main` does, and
//! one line says which ways to use instead. The window before that is a
//! few milliseconds of start-up: a known, documented limit.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;

/// The warning printed when a password was given on the command line.
pub const PASSWORD_WARNING: &str = "rein: warning: --store holds a password, which other users of \
     this machine can read in the process list; it is now blanked there, but give it in \
     REIN_STORE, `store` in ~/.rein/config.toml or PGPASSWORD instead";

/// Blank the password(s) of `store` (a `--store` value) in this process's
/// command line and warn once. Nothing happens for a value without one.
pub fn hide_store_password(store: Option<&str>) {
    let Some(store) = store else { return };
    let spans = rein_store::password_spans(store);
    if spans.iter().all(|r| r.is_empty()) {
        return;
    }
    if let Err(e) = blank_in_cmdline(store, &spans) {
        crate::output::err(&format!(
            "rein: warning: could not blank the --store password in the process list: {e}"
        ));
    }
    crate::output::err(PASSWORD_WARNING);
}

/// Overwrite `spans` of every argument that is `value` (or `--store=value`)
/// in the memory the kernel shows as this process's command line.
fn blank_in_cmdline(value: &str, spans: &[std::ops::Range<usize>]) -> std::io::Result<()> {
    let (start, end) = argument_memory()?;
    let mem = OpenOptions::new()
        .read(true)
        .write(true)
        .open("/proc/self/mem")?;
    let mut args = vec![0u8; end.saturating_sub(start) as usize];
    mem.read_exact_at(&mut args, start)?;
    let blanked = blank(&args, value.as_bytes(), spans);
    if blanked != args {
        mem.write_all_at(&blanked, start)?;
    }
    Ok(())
}

/// `args` (NUL-separated arguments) with `spans` of `value` overwritten
/// by `*` wherever an argument ends with `value`.
fn blank(args: &[u8], value: &[u8], spans: &[std::ops::Range<usize>]) -> Vec<u8> {
    let mut out = args.to_vec();
    let mut offset = 0;
    for arg in args.split(|b| *b == 0) {
        if !value.is_empty() && arg.ends_with(value) {
            let at = offset + arg.len() - value.len();
            for span in spans {
                out[at + span.start..at + span.end].fill(b'*');
            }
        }
        offset += arg.len() + 1;
    }
    out
}

/// Where this process's arguments sit in its memory: fields 48 and 49 of
/// `/proc/self/stat` (`arg_start`, `arg_end`), counted after the command
/// name, which is in parentheses and may hold spaces.
fn argument_memory() -> std::io::Result<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    let bad = || std::io::Error::other("/proc/self/stat has no argument addresses");
    let after_name = stat.rfind(')').map(|i| &stat[i + 1..]).ok_or_else(bad)?;
    // The fields after the name start at field 3.
    let mut fields = after_name.split_whitespace().skip(48 - 3);
    let mut next = || {
        fields
            .next()
            .and_then(|f| f.parse::<u64>().ok())
            .ok_or_else(bad)
    };
    let (start, end) = (next()?, next()?);
    if start == 0 || end < start {
        return Err(bad());
    }
    Ok((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_password_of_the_store_argument_is_blanked() {
        let url = "postgres://u:p@ss@h/db";
        let spans = rein_store::password_spans(url);
        let args = b"rein\0serve\0--store\0postgres://u:p@ss@h/db\0--root\0p@ss\0";
        let out = blank(args, url.as_bytes(), &spans);
        assert_eq!(
            out,
            b"rein\0serve\0--store\0postgres://u:****@h/db\0--root\0p@ss\0".to_vec()
        );
        let args = b"rein\0serve\0--store=postgres://u:p@ss@h/db\0";
        let out = blank(args, url.as_bytes(), &spans);
        assert_eq!(
            out,
            b"rein\0serve\0--store=postgres://u:****@h/db\0".to_vec()
        );
    }

    #[test]
    fn this_process_s_argument_memory_is_found() {
        let (start, end) = argument_memory().unwrap_or((0, 0));
        assert!(start > 0 && end > start, "{start}..{end}");
    }
}
