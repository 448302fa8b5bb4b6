//! Reading settings files (config, rules, trust) safely: a workspace's
//! files may be written by anyone, so only a regular file of bounded size
//! is read.

use std::path::Path;

use anyhow::{Result, anyhow, bail};

/// The largest settings file rein reads (a workspace's files may be
/// written by anyone).
pub const MAX_BYTES: u64 = 1 << 20;

/// The text of a settings file, `None` when it does not exist. Only a
/// regular file of at most [`MAX_BYTES`] is read: a FIFO would
/// block and `/dev/zero` would never end. `what` names it in errors.
pub fn read_text(path: &Path, what: &str) -> Result<Option<String>> {
    use std::io::Read;
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => bail!("cannot read {what} {}: {e}", path.display()),
    };
    if !meta.is_file() {
        bail!("{what} {} is not a regular file", path.display());
    }
    let file = std::fs::File::open(path)
        .map_err(|e| anyhow!("cannot read {what} {}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| anyhow!("cannot read {what} {}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_BYTES {
        bail!(
            "{what} {} is larger than {} KiB",
            path.display(),
            MAX_BYTES / 1024
        );
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| anyhow!("{what} {} is not UTF-8 text", path.display()))
}

/// Write `text` to `path` whole: a 0600 temporary file beside it, synced
/// and renamed over the old one, in a folder created 0700 when missing.
/// `what` names the file in errors.
pub fn write_private(path: &Path, text: &str, what: &str) -> Result<()> {
    rein_core::private_fs::write_private(path, text.as_bytes())
        .map_err(|e| anyhow!("cannot write the {what} {}: {e}", path.display()))
}
