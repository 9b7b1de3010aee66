//! What can go wrong with a file: a trace that is refused (naming the place in it), an OS error, or
//! a file that is not what it should be. The lecture's own error type takes these in whole.

use std::path::PathBuf;

use crate::console::shorten_path;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {msg}", shorten_path(path))]
    File { path: PathBuf, msg: String },

    /// The OS error is part of the message, not a `source`: with a source, `anyhow`'s `{:#}`
    /// would print it twice.
    #[error("{}: {err}", shorten_path(path))]
    Io { path: PathBuf, err: std::io::Error },

    #[error("trace {}: {msg}", shorten_path(path))]
    Trace { path: PathBuf, msg: String },
}

impl Error {
    pub fn io(path: impl Into<PathBuf>, err: std::io::Error) -> Self {
        Error::Io { path: path.into(), err }
    }
}
