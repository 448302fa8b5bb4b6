//! Checks on a model file before llama.cpp sees it, so that the common
//! mistakes get a clear message instead of a crash or a vague failure.

use std::io::Read;
use std::path::Path;

use rein_core::{ProviderError, ProviderErrorKind};

/// Memory the process needs beyond the weights (context, compute buffers),
/// in bytes; a rough allowance.
const OVERHEAD_BYTES: u64 = 256 * 1024 * 1024;

fn config_error(message: String) -> ProviderError {
    ProviderError::new(ProviderErrorKind::Config, message)
}

/// The file exists, is a GGUF file, and fits in the memory available.
/// Returns its size.
pub(crate) fn check_model_file(path: &Path) -> Result<u64, ProviderError> {
    let shown = path.display();
    if path.as_os_str().is_empty() {
        return Err(config_error(
            "no local model file given (set a model path)".to_string(),
        ));
    }
    let meta = std::fs::metadata(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            config_error(format!("model file {shown} does not exist"))
        } else {
            config_error(format!("cannot read model file {shown}: {e}"))
        }
    })?;
    if !meta.is_file() {
        return Err(config_error(format!("model path {shown} is not a file")));
    }
    let mut magic = [0u8; 4];
    let read = std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                config_error(format!("model file {shown} is not a GGUF file (too short)"))
            } else {
                config_error(format!("cannot read model file {shown}: {e}"))
            }
        });
    read?;
    if &magic != b"GGUF" {
        return Err(config_error(format!(
            "model file {shown} is not a GGUF file (it does not start with the GGUF magic bytes)"
        )));
    }
    let size = meta.len();
    if let Some(available) = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| mem_available(&t))
    {
        check_fits(size, available)
            .map_err(|m| config_error(format!("model file {shown}: {m}")))?;
    }
    Ok(size)
}

/// MemAvailable from /proc/meminfo, in bytes.
pub(crate) fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let mut words = line.split_whitespace().skip(1);
    let n: u64 = words.next()?.parse().ok()?;
    let unit = words.next().unwrap_or("kB");
    Some(match unit {
        "kB" => n * 1024,
        _ => n,
    })
}

/// Whether a model of `size` bytes fits in `available` bytes of memory.
pub(crate) fn check_fits(size: u64, available: u64) -> Result<(), String> {
    if size.saturating_add(OVERHEAD_BYTES) > available {
        return Err(format!(
            "too large for the memory available ({} MiB needed, {} MiB available)",
            (size + OVERHEAD_BYTES) / (1024 * 1024),
            available / (1024 * 1024)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_is_read_in_bytes() {
        let info = "MemTotal:       24684000 kB\nMemFree:  1 kB\nMemAvailable:   2048 kB\n";
        assert_eq!(mem_available(info), Some(2048 * 1024));
        assert_eq!(mem_available("MemTotal: 1 kB\n"), None);
    }

    #[test]
    fn models_larger_than_memory_are_refused() {
        let gib = 1024 * 1024 * 1024;
        assert!(check_fits(gib / 2, 4 * gib).is_ok());
        let err = check_fits(8 * gib, 4 * gib).unwrap_err();
        assert!(err.contains("too large"), "{err}");
    }

    #[test]
    fn missing_short_and_foreign_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let missing = check_model_file(&dir.path().join("nope.gguf")).unwrap_err();
        assert_eq!(missing.kind, ProviderErrorKind::Config);
        assert!(
            missing.message.contains("does not exist"),
            "{}",
            missing.message
        );
        let short = dir.path().join("short.gguf");
        std::fs::write(&short, b"GG").unwrap();
        assert!(
            check_model_file(&short)
                .unwrap_err()
                .message
                .contains("not a GGUF")
        );
        let text = dir.path().join("text.gguf");
        std::fs::write(&text, b"hello world").unwrap();
        assert!(
            check_model_file(&text)
                .unwrap_err()
                .message
                .contains("not a GGUF")
        );
        let gguf = dir.path().join("ok.gguf");
        std::fs::write(&gguf, b"GGUF\x03\0\0\0").unwrap();
        assert_eq!(check_model_file(&gguf).unwrap(), 8);
        assert!(
            check_model_file(dir.path())
                .unwrap_err()
                .message
                .contains("not a file")
        );
    }
}
