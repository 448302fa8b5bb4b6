//! Why a replay script could not be loaded, with the path, the turn and
//! the field at fault.

use std::fmt;
use std::path::PathBuf;

use super::*;

/// Why a replay script could not be loaded.
#[derive(Debug)]
pub enum ReplayError {
    /// The file could not be read.
    Read {
        /// The script's path.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The text is not valid JSON.
    Json {
        /// The script's path, when read from a file.
        path: Option<PathBuf>,
        /// 1-based line of the problem.
        line: usize,
        /// 1-based column of the problem.
        column: usize,
        /// serde_json's description, without the position.
        message: String,
    },
    /// The JSON does not describe a valid script.
    Invalid {
        /// The script's path, when read from a file.
        path: Option<PathBuf>,
        /// 1-based number of the offending turn, when the problem is in one.
        turn: Option<usize>,
        /// Line and column of the problem, when known.
        position: Option<(usize, usize)>,
        /// What is wrong.
        message: String,
    },
}

impl ReplayError {
    /// The same error, naming the file it came from.
    pub(super) fn in_file(mut self, file: &Path) -> Self {
        match &mut self {
            ReplayError::Read { .. } => {}
            ReplayError::Json { path, .. } | ReplayError::Invalid { path, .. } => {
                *path = Some(file.to_path_buf());
            }
        }
        self
    }

    pub(super) fn invalid(turn: Option<usize>, message: impl Into<String>) -> Self {
        ReplayError::Invalid {
            path: None,
            turn,
            position: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let origin = |f: &mut fmt::Formatter<'_>, path: &Option<PathBuf>| match path {
            Some(p) => write!(f, "replay script {}", p.display()),
            None => write!(f, "replay script"),
        };
        match self {
            ReplayError::Read { path, source } => {
                write!(f, "cannot read replay script {}: {source}", path.display())
            }
            ReplayError::Json {
                path,
                line,
                column,
                message,
            } => {
                origin(f, path)?;
                write!(
                    f,
                    ": malformed JSON at line {line} column {column}: {message}"
                )
            }
            ReplayError::Invalid {
                path,
                turn,
                position,
                message,
            } => {
                origin(f, path)?;
                if let Some(turn) = turn {
                    write!(f, ": turn {turn}")?;
                }
                write!(f, ": {message}")?;
                if let Some((line, column)) = position {
                    write!(f, " (line {line}, column {column})")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for ReplayError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReplayError::Read { source, .. } => Some(source),
            _ => None,
        }
    }
}
