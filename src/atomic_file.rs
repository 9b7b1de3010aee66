//! Atomic file writes: the bytes go to a temporary file in the target's folder, are synced, and
//! the temporary file is renamed over the target. A crash or Ctrl-C mid-write leaves the previous
//! file intact (traces, checkpoints, token files and cached kernels all rely on this).

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};

/// Writes `bytes` to `path` atomically, creating the parent folder if needed.
pub fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .suffix(".partial")
        .tempfile_in(dir)
        .map_err(|e| Error::io(dir, e))?;
    tmp.write_all(bytes).map_err(|e| Error::io(tmp.path(), e))?;
    tmp.as_file().sync_all().map_err(|e| Error::io(tmp.path(), e))?;
    // If we die before this line the temporary file is removed (or left as `.tmp-*.partial`),
    // and `path` is untouched.
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    Ok(())
}
