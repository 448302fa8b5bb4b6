//! Images the user attaches to a prompt (`rein exec --image FILE`), read
//! and checked the same way by every front end that takes them:
//!
//! 1. the model must take images: the provider's capability
//!    ([`rein_core::Capabilities::images`]); the local model's is known
//!    before it is loaded ([`refused_before_building`]), so a prompt it
//!    would refuse never waits for it to load;
//! 2. each file is opened without blocking (a FIFO cannot hang the run)
//!    and must be a regular file once open (no FIFO, device or
//!    directory); a symbolic link the user named is followed;
//! 3. at most [`MAX_IMAGE_BYTES`] are read: a bigger file is refused;
//! 4. its type comes from its first bytes (PNG, JPEG, GIF, WebP), never
//!    from its name; anything else is refused, naming the file;
//! 5. it is carried base64-encoded as a [`rein_core::Image`], which each
//!    provider puts in its API's shape.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use rein_core::{Image, Provider};

/// Largest image file taken, in bytes (the largest image the hosted APIs
/// accept; Anthropic's own limit is lower and it says so itself).
pub const MAX_IMAGE_BYTES: u64 = 20 * 1024 * 1024;

/// Why the images of a prompt are not sent.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("cannot read the image {}: {why}", path.display())]
    Read { path: PathBuf, why: String },
    #[error("the image {} is not a regular file", path.display())]
    NotAFile { path: PathBuf },
    #[error("the image {} is larger than 20 MiB, the most rein sends", path.display())]
    TooBig { path: PathBuf },
    #[error("{} is not a PNG, JPEG, GIF or WebP image", path.display())]
    NotAnImage { path: PathBuf },
    /// `who`: "the local model", "the model NAME".
    #[error("{who} does not take images: choose a hosted model (OpenAI, Anthropic) to attach them")]
    NotTaken { who: String },
}

/// Steps 2 to 5 for every file, in order; the first refusal stops.
pub fn read_all(paths: &[PathBuf]) -> Result<Vec<Image>, ImageError> {
    paths.iter().map(|p| read_image(p)).collect()
}

/// Steps 2 to 5 for one file.
pub fn read_image(path: &Path) -> Result<Image, ImageError> {
    let failed = |e: std::io::Error| ImageError::Read {
        path: path.to_path_buf(),
        why: e.to_string(),
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(failed)?;
    if !file.metadata().map_err(failed)?.is_file() {
        return Err(ImageError::NotAFile {
            path: path.to_path_buf(),
        });
    }
    let mut bytes = Vec::new();
    file.take(MAX_IMAGE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(failed)?;
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return Err(ImageError::TooBig {
            path: path.to_path_buf(),
        });
    }
    let media_type = media_type(&bytes).ok_or_else(|| ImageError::NotAnImage {
        path: path.to_path_buf(),
    })?;
    Ok(Image {
        media_type: media_type.to_string(),
        data: base64::engine::general_purpose::STANDARD.encode(&bytes),
    })
}

/// The image type its first bytes say, among those every image-taking API
/// accepts ([`Image::MEDIA_TYPES`]).
pub fn media_type(bytes: &[u8]) -> Option<&'static str> {
    let [png, jpeg, gif, webp] = Image::MEDIA_TYPES;
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(png)
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some(jpeg)
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some(gif)
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some(webp)
    } else {
        None
    }
}

/// Step 1 before the provider is built: the local model, which reads text
/// only, refuses at once. Other providers are asked once built
/// ([`refused_by`]).
pub fn refused_before_building(cfg: &crate::config::Config) -> Result<(), ImageError> {
    use crate::providers::{BuiltinProvider, chosen_name};
    let chosen = chosen_name(cfg);
    let local = chosen.as_deref().and_then(BuiltinProvider::named) == Some(BuiltinProvider::Local);
    if local && !LOCAL_TAKES_IMAGES {
        return Err(ImageError::NotTaken {
            who: "the local model".into(),
        });
    }
    Ok(())
}

/// Step 1 with the provider built.
pub fn refused_by(provider: &dyn Provider) -> Result<(), ImageError> {
    match provider.capabilities().images {
        true => Ok(()),
        false => Err(ImageError::NotTaken {
            who: format!("the model {}", provider.model()),
        }),
    }
}

/// The image files a message typed in the app names: `@path` (from the
/// workspace) or an absolute path, as pasting or dropping a file into a
/// terminal gives it (quoted, or with `\ ` for a space), ending in an
/// image's extension and naming a file that exists. Its type is still
/// decided by its first bytes when it is read.
pub fn named_in(message: &str, workspace: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    for word in words(message) {
        let path = match word.strip_prefix('@') {
            Some(rest) if !rest.is_empty() && !rest.contains(':') => workspace.join(rest),
            Some(_) => continue,
            None if word.starts_with('/') => PathBuf::from(&word),
            None => continue,
        };
        let image_name = path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
            matches!(
                e.to_ascii_lowercase().as_str(),
                "png" | "jpg" | "jpeg" | "gif" | "webp"
            )
        });
        if image_name && path.exists() && !found.contains(&path) {
            found.push(path);
        }
    }
    found
}

/// A message's words: split at whitespace outside quotes, `\ ` kept as a
/// space, the quotes dropped.
fn words(message: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut chars = message.chars();
    while let Some(c) = chars.next() {
        match (c, quote) {
            ('\\', None) => match chars.next() {
                Some(next) => word.push(next),
                None => word.push(c),
            },
            ('"' | '\'', None) => quote = Some(c),
            (c, Some(q)) if c == q => quote = None,
            (c, None) if c.is_whitespace() => {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
            }
            (c, _) => word.push(c),
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

#[cfg(feature = "local")]
const LOCAL_TAKES_IMAGES: bool = rein_providers::local::TAKES_IMAGES;
#[cfg(not(feature = "local"))]
const LOCAL_TAKES_IMAGES: bool = false;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_type_comes_from_the_first_bytes_not_the_name() {
        assert_eq!(media_type(b"\x89PNG\r\n\x1a\n\0\0"), Some("image/png"));
        assert_eq!(media_type(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(media_type(b"GIF89a...."), Some("image/gif"));
        assert_eq!(media_type(b"RIFF\x10\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(media_type(b"RIFF\x10\0\0\0WAVEfmt "), None);
        assert_eq!(media_type(b"<svg xmlns="), None);
        assert_eq!(media_type(b""), None);
    }

    #[test]
    fn a_message_names_images_by_at_path_or_pasted_absolute_path() {
        let ws = tempfile::tempdir().unwrap();
        let png = b"\x89PNG\r\n\x1a\n\0\0";
        std::fs::write(ws.path().join("shot.png"), png).unwrap();
        std::fs::write(ws.path().join("Screen Shot.PNG"), png).unwrap();
        std::fs::write(ws.path().join("notes.txt"), "x").unwrap();
        let abs = ws.path().join("Screen Shot.PNG");
        let escaped = abs.display().to_string().replace(' ', "\\ ");
        let message = format!(
            "look at @shot.png and '{}' and {escaped} (not shot.png, not @missing.png, \
             not @notes.txt, not @server:file.png)",
            abs.display()
        );
        assert_eq!(
            named_in(&message, ws.path()),
            [ws.path().join("shot.png"), abs]
        );
        assert!(named_in("no images here", ws.path()).is_empty());
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe.png");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = read_image(&fifo).unwrap_err();
        assert!(matches!(err, ImageError::NotAFile { .. }), "{err}");
        let err = read_image(dir.path()).unwrap_err();
        assert!(matches!(err, ImageError::NotAFile { .. }), "{err}");
    }
}
