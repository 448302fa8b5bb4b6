//! The trust store: `$REIN_HOME/trusted.json`, the user's answers about
//! folders, keyed by canonical path.
//!
//! A folder's answer covers its subfolders; the nearest recorded answer
//! (the folder itself, else its closest recorded parent) decides. So
//! trusting `~/src/app` trusts `~/src/app/web`, and recording `~/src/app/vendor`
//! as not trusted takes that one subtree back out. The file is written
//! whole to a temporary file (0600) and renamed over the old one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow, bail};
use serde::{Deserialize, Serialize};

/// The file's name under `$REIN_HOME`.
pub const FILE_NAME: &str = "trusted.json";

/// The user's answer about one folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Answer {
    /// Its project settings count like the user's own.
    Trusted,
    /// Asked and declined (or revoked): they may only tighten, and the app
    /// does not ask again.
    NotTrusted,
}

/// What the store says about a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// Trusted, by this recorded folder (the folder itself or a parent).
    Trusted(PathBuf),
    /// Recorded as not trusted, by this folder (itself or a parent).
    NotTrusted(PathBuf),
    /// Nothing recorded.
    Unknown,
}

/// The file as written.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TrustFile {
    version: u32,
    #[serde(default)]
    folders: BTreeMap<String, Answer>,
}

/// The trust store of one `$REIN_HOME`.
#[derive(Debug)]
pub struct TrustStore {
    path: PathBuf,
    folders: BTreeMap<String, Answer>,
}

impl TrustStore {
    /// Read `home/trusted.json`; a missing file is an empty store, a
    /// malformed one an error naming the file and line.
    pub fn load(home: &Path) -> Result<TrustStore> {
        let path = home.join(FILE_NAME);
        let text = crate::settings_file::read_text(&path, "trust file")?.unwrap_or_default();
        let file: TrustFile = if text.trim().is_empty() {
            TrustFile::default()
        } else {
            serde_json::from_str(&text).map_err(|e| {
                let msg = e.to_string();
                let msg = msg.rsplit_once(" at line ").map_or(msg.as_str(), |m| m.0);
                anyhow!(
                    "invalid trust file {} (line {}): {msg}; fix or delete it",
                    path.display(),
                    e.line()
                )
            })?
        };
        if file.version > 1 {
            bail!(
                "the trust file {} has version {}, newer than this rein understands",
                path.display(),
                file.version
            );
        }
        Ok(TrustStore {
            path,
            folders: file.folders,
        })
    }

    /// The file this store reads and writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The nearest recorded answer for a canonical folder.
    pub fn lookup(&self, folder: &Path) -> Lookup {
        for dir in folder.ancestors() {
            let Some(key) = dir.to_str() else { continue };
            match self.folders.get(key) {
                Some(Answer::Trusted) => return Lookup::Trusted(dir.to_path_buf()),
                Some(Answer::NotTrusted) => return Lookup::NotTrusted(dir.to_path_buf()),
                None => {}
            }
        }
        Lookup::Unknown
    }

    /// Whether a canonical folder is trusted.
    pub fn is_trusted(&self, folder: &Path) -> bool {
        matches!(self.lookup(folder), Lookup::Trusted(_))
    }

    /// Every recorded folder and its answer, sorted by path.
    pub fn entries(&self) -> impl Iterator<Item = (&str, Answer)> {
        self.folders.iter().map(|(k, v)| (k.as_str(), *v))
    }

    /// Record an answer for a canonical folder and write the file.
    pub fn record(&mut self, folder: &Path, answer: Answer) -> Result<()> {
        let key = folder.to_str().ok_or_else(|| {
            anyhow!(
                "cannot record {}: its path is not valid UTF-8",
                folder.display()
            )
        })?;
        if !folder.is_absolute() {
            bail!("cannot record {}: not an absolute path", folder.display());
        }
        self.folders.insert(key.to_string(), answer);
        self.save()
    }

    /// Write the whole file (0600, replaced whole).
    fn save(&self) -> Result<()> {
        let file = TrustFile {
            version: 1,
            folders: self.folders.clone(),
        };
        let text = serde_json::to_string_pretty(&file)? + "\n";
        crate::settings_file::write_private(&self.path, &text, "trust file")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_trusted_folder_covers_its_subfolders_and_the_nearest_answer_wins() {
        let home = tempfile::tempdir().unwrap();
        let mut store = TrustStore::load(home.path()).unwrap();
        assert_eq!(store.lookup(Path::new("/src/app")), Lookup::Unknown);
        store
            .record(Path::new("/src/app"), Answer::Trusted)
            .unwrap();
        assert!(store.is_trusted(Path::new("/src/app")));
        assert_eq!(
            store.lookup(Path::new("/src/app/web/ui")),
            Lookup::Trusted(PathBuf::from("/src/app"))
        );
        // A sibling whose name only starts the same is not covered.
        assert_eq!(store.lookup(Path::new("/src/application")), Lookup::Unknown);
        assert_eq!(store.lookup(Path::new("/src")), Lookup::Unknown);
        store
            .record(Path::new("/src/app/vendor"), Answer::NotTrusted)
            .unwrap();
        assert_eq!(
            store.lookup(Path::new("/src/app/vendor/x")),
            Lookup::NotTrusted(PathBuf::from("/src/app/vendor"))
        );
        assert!(store.is_trusted(Path::new("/src/app/web")));
    }

    #[test]
    fn answers_survive_a_reload_and_the_file_is_private() {
        let base = tempfile::tempdir().unwrap();
        let home = base.path().join("new-home");
        let mut store = TrustStore::load(&home).unwrap();
        store.record(Path::new("/w/a"), Answer::Trusted).unwrap();
        store.record(Path::new("/w/b"), Answer::NotTrusted).unwrap();
        let again = TrustStore::load(&home).unwrap();
        let entries: Vec<_> = again.entries().collect();
        assert_eq!(
            entries,
            vec![("/w/a", Answer::Trusted), ("/w/b", Answer::NotTrusted)]
        );
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&home), 0o700);
        assert_eq!(mode(&home.join(FILE_NAME)), 0o600);
        let text = std::fs::read_to_string(home.join(FILE_NAME)).unwrap();
        assert!(text.contains("\"/w/b\": \"not-trusted\""), "{text}");
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(&home).unwrap().count(), 1);
    }

    #[test]
    fn a_malformed_trust_file_is_one_line_naming_the_file_and_line() {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join(FILE_NAME);
        std::fs::write(&path, "{\"version\": 1,\n \"folders\": {\"/a\": \"yes\"}}").unwrap();
        let err = TrustStore::load(home.path()).unwrap_err().to_string();
        assert!(err.starts_with("invalid trust file"), "{err}");
        assert!(err.contains("(line 2)"), "{err}");
        assert!(!err.contains('\n'), "{err}");
        std::fs::write(&path, "{\"version\": 9}").unwrap();
        let err = TrustStore::load(home.path()).unwrap_err().to_string();
        assert!(err.contains("newer than this rein"), "{err}");
    }

    #[test]
    fn relative_paths_are_not_recorded() {
        let home = tempfile::tempdir().unwrap();
        let mut store = TrustStore::load(home.path()).unwrap();
        assert!(store.record(Path::new("rel/dir"), Answer::Trusted).is_err());
        assert!(!home.path().join(FILE_NAME).exists());
    }
}
