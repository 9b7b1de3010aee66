//! Token data: a file of token ids read through a memory map, so a corpus larger than RAM costs
//! only the pages a batch touches, and `get_batch`, which cuts random windows out of it.
//!
//! Two formats, told apart by their first bytes: raw little-endian int32 (what
//! `np.array(..., dtype=np.int32).tofile` writes, the lecture's `data.npy`), and NumPy's `.npy`
//! (what `np.save` writes: see [`npy`]). int32 tokens are read in place; a `.npy` of uint16 or
//! int64 is converted into memory once (a copy, so no longer paged in on demand).

pub mod npy;

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
    Ok(crate::atomic_file::write(path, &bytes)?)
}

/// How a token file was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenFormat {
    /// Raw little-endian int32, no header: read in place.
    RawInt32,
    /// A NumPy `.npy` file of these elements (int32 read in place, others converted).
    Npy(npy::Elements),
}

impl TokenFormat {
    /// Whether the tokens were copied into memory rather than read through the map.
    pub fn converted(self) -> bool {
        matches!(self, TokenFormat::Npy(e) if e != npy::Elements::Int32)
    }

    pub fn describe(self) -> String {
        match self {
            TokenFormat::RawInt32 => "raw little-endian int32, read in place".into(),
            TokenFormat::Npy(npy::Elements::Int32) => ".npy of <i4, read in place".into(),
            TokenFormat::Npy(e) => format!(".npy of {}, converted to int32 in memory", e.descr()),
        }
    }
}

/// Where the int32 tokens are.
enum Tokens {
    /// In the map, from `offset` on (an empty file cannot be mapped: no map, no tokens).
    Mapped { map: Option<Mmap>, offset: usize },
    /// Converted into memory.
    Owned(Vec<i32>),
}

/// A token file, memory-mapped.
pub struct TokenFile {
    path: PathBuf,
    tokens: Tokens,
    format: TokenFormat,
}

impl TokenFile {
    pub fn open(path: &Path) -> Result<TokenFile> {
        let bad = |msg: String| Error::File {
            path: path.to_path_buf(),
            msg,
        };
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len() as usize;
        let map = if len == 0 {
            None
        } else {
            // SAFETY: the map is read-only; a concurrent writer truncating the file could fault
            // the process, the documented caveat of every file mapping (we never write it).
            Some(unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, e))?)
        };
        let bytes = map.as_deref().unwrap_or(&[]);
        let (tokens, format) = if bytes.starts_with(npy::MAGIC) {
            let layout = npy::layout(bytes).map_err(|why| bad(format!("a NumPy .npy file that {why}")))?;
            let format = TokenFormat::Npy(layout.elements);
            if layout.elements == npy::Elements::Int32 {
                (
                    Tokens::Mapped {
                        map,
                        offset: layout.offset,
                    },
                    format,
                )
            } else {
                let owned = npy::convert(layout.elements, &bytes[layout.offset..]).map_err(bad)?;
                (Tokens::Owned(owned), format)
            }
        } else {
            if !len.is_multiple_of(TOKEN_BYTES) {
                return Err(bad(format!(
                    "{len} bytes is not a whole number of int32 tokens (4 bytes each): the file is truncated or not a token file"
                )));
            }
            (Tokens::Mapped { map, offset: 0 }, TokenFormat::RawInt32)
        };
        Ok(TokenFile {
            path: path.to_path_buf(),
            tokens,
            format,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn format(&self) -> TokenFormat {
        self.format
    }

    /// The int32 bytes of a mapped file, or None for converted tokens.
    fn mapped(&self) -> Option<&[u8]> {
        match &self.tokens {
            Tokens::Mapped { map, offset } => Some(map.as_deref().map_or(&[], |m| &m[*offset..])),
            Tokens::Owned(_) => None,
        }
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        match &self.tokens {
            Tokens::Owned(v) => v.len(),
            Tokens::Mapped { .. } => self.mapped().map_or(0, |b| b.len() / TOKEN_BYTES),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Token `i`.
    pub fn token(&self, i: usize) -> Option<i32> {
        self.window(i, 1).ok().map(|w| w[0])
    }

    /// Tokens `start..start + len`, decoded (only those pages are read from disk).
    pub fn window(&self, start: usize, len: usize) -> Result<Vec<i32>> {
        let out_of_range = || Error::File {
            path: self.path.clone(),
            msg: format!(
                "tokens {start}..{} requested but the file has {}",
                start.saturating_add(len),
                self.len()
            ),
        };
        let end = start
            .checked_add(len)
            .filter(|&e| e <= self.len())
            .ok_or_else(out_of_range)?;
        Ok(match (&self.tokens, self.mapped()) {
            (Tokens::Owned(v), _) => v[start..end].to_vec(),
            (_, Some(bytes)) => decode(&bytes[start * TOKEN_BYTES..end * TOKEN_BYTES]),
            (Tokens::Mapped { .. }, None) => Vec::new(),
        })
    }

    pub fn to_vec(&self) -> Vec<i32> {
        self.window(0, self.len()).unwrap_or_default()
    }
}

fn decode(bytes: &[u8]) -> Vec<i32> {
    bytes
        .chunks_exact(TOKEN_BYTES)
        .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
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
