//! Token data: a file of little-endian int32 token ids, read through a memory map so a corpus
//! larger than RAM costs only the pages a batch touches, and `get_batch`, which cuts random
//! windows out of it.

use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::device::Device;
use crate::error::{Error, Result};
use crate::rng::Rng;
use crate::tensor::Tensor;

const TOKEN_BYTES: usize = 4;

/// Writes `tokens` as little-endian int32 (what `np.array(..., dtype=np.int32).tofile` makes),
/// atomically.
pub fn write_tokens(path: &Path, tokens: &[i32]) -> Result<()> {
    let bytes: Vec<u8> = tokens.iter().flat_map(|t| t.to_le_bytes()).collect();
    crate::trace::io::write_atomic(path, &bytes)
}

/// A memory-mapped token file.
pub struct TokenFile {
    path: PathBuf,
    map: Option<Mmap>,
}

impl TokenFile {
    pub fn open(path: &Path) -> Result<TokenFile> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len() as usize;
        if !len.is_multiple_of(TOKEN_BYTES) {
            return Err(Error::File {
                path: path.to_path_buf(),
                msg: format!(
                    "{len} bytes is not a whole number of int32 tokens (4 bytes each): the file is truncated or not a token file"
                ),
            });
        }
        // An empty file cannot be mapped; it simply has no tokens.
        let map = if len == 0 {
            None
        } else {
            // SAFETY: the map is read-only; a concurrent writer truncating the file could fault
            // the process, the documented caveat of every file mapping (we never write it).
            Some(unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, e))?)
        };
        Ok(TokenFile {
            path: path.to_path_buf(),
            map,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.bytes().len() / TOKEN_BYTES
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Token `i` (no bounds check beyond the slice's own).
    pub fn token(&self, i: usize) -> Option<i32> {
        let b = self.bytes().get(i * TOKEN_BYTES..(i + 1) * TOKEN_BYTES)?;
        Some(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Tokens `start..start + len`, decoded (only those pages are read from disk).
    pub fn window(&self, start: usize, len: usize) -> Result<Vec<i32>> {
        let bytes = self
            .bytes()
            .get(start * TOKEN_BYTES..(start + len) * TOKEN_BYTES)
            .ok_or_else(|| Error::File {
                path: self.path.clone(),
                msg: format!(
                    "tokens {start}..{} requested but the file has {}",
                    start + len,
                    self.len()
                ),
            })?;
        Ok(bytes
            .chunks_exact(TOKEN_BYTES)
            .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }

    pub fn to_vec(&self) -> Vec<i32> {
        self.bytes()
            .chunks_exact(TOKEN_BYTES)
            .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()
    }
}

/// A batch: `inputs` [B, L] int32 and the random starts it was cut from.
#[derive(Debug, Clone)]
pub struct Batch {
    pub inputs: Tensor,
    pub starts: Vec<usize>,
}

/// `batch_size` windows of `sequence_length` consecutive tokens at random starts. A start is
/// drawn from 0..=len−L−1, so the token after each window (the next-token target) exists: the
/// data needs at least L+1 tokens.
pub fn get_batch(
    data: &TokenFile,
    batch_size: usize,
    sequence_length: usize,
    rng: &mut Rng,
    device: &Device,
) -> Result<Batch> {
    if sequence_length == 0 || batch_size == 0 {
        return Err(Error::invalid(
            "get_batch",
            format!("batch size and sequence length must be positive (got {batch_size} × {sequence_length})"),
        ));
    }
    if data.len() < sequence_length + 1 {
        return Err(Error::File {
            path: data.path.clone(),
            msg: format!(
                "has {} tokens; a sequence of length {sequence_length} needs at least {} (the window plus its next token)",
                data.len(),
                sequence_length + 1
            ),
        });
    }
    let starts: Vec<usize> = (0..batch_size)
        .map(|_| rng.below(data.len() - sequence_length))
        .collect();
    let mut flat = Vec::with_capacity(batch_size * sequence_length);
    for &s in &starts {
        flat.extend(data.window(s, sequence_length)?);
    }
    // To a GPU through pinned memory with an asynchronous copy (`pin_memory=True`,
    // `non_blocking=True` in PyTorch); on the CPU this is the tensor itself.
    let inputs = Tensor::from_vec(flat, &[batch_size, sequence_length])?.to_device_pinned(device)?;
    Ok(Batch { inputs, starts })
}
