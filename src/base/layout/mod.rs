//! Shape, strides and offset: how a tensor's logical indices map onto its storage. Every view
//! (`select`, `narrow`, `transpose`, `view`, broadcasting) is a new `Layout` over the same storage.

mod walk;

pub use walk::{StridedIndices, collapse, merged_stride};

use crate::error::{Error, Result};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub shape: Vec<usize>,
    /// Elements (not bytes) to skip in storage to move one step along each dimension.
    pub strides: Vec<usize>,
    pub offset: usize,
}

impl Layout {
    pub fn contiguous(shape: &[usize]) -> Layout {
        Layout {
            shape: shape.to_vec(),
            strides: contiguous_strides(shape),
            offset: 0,
        }
    }

    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Row-major and gap-free (size-1 dimensions may have any stride).
    pub fn is_contiguous(&self) -> bool {
        // An empty tensor reads no storage, so any strides describe it (PyTorch agrees). Without
        // this, a size-0 dimension makes every outer stride "wrong" and `view` of an empty slice
        // (say `x[:, 3:]` of a 2×3 tensor) failed with NotContiguous.
        if self.numel() == 0 {
            return true;
        }
        let mut expected = 1;
        for (&size, &stride) in self.shape.iter().zip(&self.strides).rev() {
            if size != 1 && stride != expected {
                return false;
            }
            expected *= size;
        }
        true
    }

    /// The storage range holding exactly this layout's elements in row-major order, when the
    /// layout is contiguous. Empty layouts give `0..0`: their offset may lie past the end of the
    /// storage (narrowing to length 0 at the end advances it), so slicing from it could panic.
    pub fn contiguous_range(&self) -> Option<std::ops::Range<usize>> {
        match self.numel() {
            0 => Some(0..0),
            n if self.is_contiguous() => Some(self.offset..self.offset + n),
            _ => None,
        }
    }

    /// [`Layout::contiguous_range`] for an op that needs a contiguous view inside a buffer of
    /// `len` elements: a view that is not contiguous, or that reaches past the end, is an error.
    pub fn contiguous_range_in(&self, op: &'static str, len: usize) -> Result<std::ops::Range<usize>> {
        let range = self.contiguous_range().ok_or_else(|| Error::NotContiguous {
            op,
            shape: self.shape.clone(),
            strides: self.strides.clone(),
        })?;
        if range.end > len {
            return Err(self.past_the_end(op, len));
        }
        Ok(range)
    }

    /// Checks that every element of this layout lies inside a buffer of `len` elements, before any
    /// unchecked access.
    pub fn check_bounds(&self, op: &'static str, len: usize) -> Result<()> {
        match self.max_storage_index() {
            Some(max) if max >= len => Err(self.past_the_end(op, len)),
            _ => Ok(()),
        }
    }

    fn past_the_end(&self, op: &'static str, len: usize) -> Error {
        Error::invalid(
            op,
            format!("layout {self:?} reaches past the end of its storage ({len} elements)"),
        )
    }

    /// Storage position of a logical index.
    pub fn storage_index(&self, index: &[usize]) -> Result<usize> {
        if index.len() != self.ndim() {
            return Err(Error::shape(
                "index",
                &self.shape,
                index,
                "index has the wrong number of dimensions",
            ));
        }
        let mut pos = self.offset;
        for (d, (&i, (&size, &stride))) in index.iter().zip(self.shape.iter().zip(&self.strides)).enumerate() {
            if i >= size {
                return Err(Error::invalid(
                    "index",
                    format!(
                        "index {i} is out of range for dimension {d} of size {size} (shape {:?})",
                        self.shape
                    ),
                ));
            }
            pos += i * stride;
        }
        Ok(pos)
    }

    /// Storage positions of every element in row-major logical order.
    pub fn storage_indices(&self) -> StridedIndices<'_> {
        StridedIndices::new(self)
    }

    /// The storage range this layout can touch (for bounds checks on views).
    pub fn max_storage_index(&self) -> Option<usize> {
        if self.numel() == 0 {
            return None;
        }
        Some(
            self.offset
                + self
                    .shape
                    .iter()
                    .zip(&self.strides)
                    .map(|(&n, &s)| (n - 1) * s)
                    .sum::<usize>(),
        )
    }

    pub fn select(&self, dim: usize, index: usize) -> Result<Layout> {
        self.check_dim("select", dim)?;
        if index >= self.shape[dim] {
            return Err(Error::invalid(
                "select",
                format!(
                    "index {index} out of range for dimension {dim} of size {} (shape {:?})",
                    self.shape[dim], self.shape
                ),
            ));
        }
        let mut out = self.clone();
        out.offset += index * self.strides[dim];
        out.shape.remove(dim);
        out.strides.remove(dim);
        Ok(out)
    }

    pub fn narrow(&self, dim: usize, start: usize, len: usize) -> Result<Layout> {
        self.check_dim("narrow", dim)?;
        // `checked_add`: a huge `start + len` wrapped around in release builds and passed.
        if start.checked_add(len).is_none_or(|end| end > self.shape[dim]) {
            return Err(Error::invalid(
                "narrow",
                format!(
                    "range of length {len} from {start} exceeds dimension {dim} of size {} (shape {:?})",
                    self.shape[dim], self.shape
                ),
            ));
        }
        let mut out = self.clone();
        out.offset += start * self.strides[dim];
        out.shape[dim] = len;
        Ok(out)
    }

    pub fn transpose(&self, d0: usize, d1: usize) -> Result<Layout> {
        self.check_dim("transpose", d0)?;
        self.check_dim("transpose", d1)?;
        let mut out = self.clone();
        out.shape.swap(d0, d1);
        out.strides.swap(d0, d1);
        Ok(out)
    }

    pub fn permute(&self, dims: &[usize]) -> Result<Layout> {
        let mut seen = vec![false; self.ndim()];
        if dims.len() != self.ndim()
            || dims
                .iter()
                .any(|&d| d >= self.ndim() || std::mem::replace(&mut seen[d], true))
        {
            return Err(Error::invalid(
                "permute",
                format!(
                    "{dims:?} is not a permutation of the {} dimensions of shape {:?}",
                    self.ndim(),
                    self.shape
                ),
            ));
        }
        Ok(Layout {
            shape: dims.iter().map(|&d| self.shape[d]).collect(),
            strides: dims.iter().map(|&d| self.strides[d]).collect(),
            offset: self.offset,
        })
    }

    /// A new shape over the same elements without copying; only possible when the elements are
    /// laid out so that the new strides exist (always for contiguous layouts).
    pub fn view(&self, shape: &[usize]) -> Result<Layout> {
        if shape.iter().product::<usize>() != self.numel() {
            return Err(Error::shape(
                "view",
                &self.shape,
                shape,
                "the number of elements differs",
            ));
        }
        if !self.is_contiguous() {
            return Err(Error::NotContiguous {
                op: "view",
                shape: self.shape.clone(),
                strides: self.strides.clone(),
            });
        }
        Ok(Layout {
            shape: shape.to_vec(),
            strides: contiguous_strides(shape),
            offset: self.offset,
        })
    }

    /// Broadcasts to `shape` (numpy rules, aligned on the right) with stride 0 on repeated
    /// dimensions: the data is not copied.
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Layout> {
        if shape.len() < self.ndim() {
            return Err(Error::shape(
                "broadcast_to",
                &self.shape,
                shape,
                "target has fewer dimensions",
            ));
        }
        let lead = shape.len() - self.ndim();
        let mut strides = vec![0; shape.len()];
        for (i, (&size, &stride)) in self.shape.iter().zip(&self.strides).enumerate() {
            let target = shape[lead + i];
            if size == target {
                strides[lead + i] = stride;
            } else if size != 1 {
                return Err(Error::shape(
                    "broadcast_to",
                    &self.shape,
                    shape,
                    format!("dimension {i} has size {size}, expected 1 or {target}"),
                ));
            }
        }
        Ok(Layout {
            shape: shape.to_vec(),
            strides,
            offset: self.offset,
        })
    }

    pub fn unsqueeze(&self, dim: usize) -> Result<Layout> {
        if dim > self.ndim() {
            return Err(Error::invalid(
                "unsqueeze",
                format!("dimension {dim} out of range for shape {:?}", self.shape),
            ));
        }
        let mut out = self.clone();
        let stride = self.strides.get(dim).map_or(1, |&s| s * self.shape[dim]);
        out.shape.insert(dim, 1);
        out.strides.insert(dim, stride);
        Ok(out)
    }

    pub fn squeeze(&self, dim: usize) -> Result<Layout> {
        self.check_dim("squeeze", dim)?;
        if self.shape[dim] != 1 {
            return Err(Error::invalid(
                "squeeze",
                format!(
                    "dimension {dim} has size {}, not 1 (shape {:?})",
                    self.shape[dim], self.shape
                ),
            ));
        }
        let mut out = self.clone();
        out.shape.remove(dim);
        out.strides.remove(dim);
        Ok(out)
    }

    fn check_dim(&self, op: &'static str, dim: usize) -> Result<()> {
        if dim >= self.ndim() {
            return Err(Error::invalid(
                op,
                format!("dimension {dim} out of range for shape {:?}", self.shape),
            ));
        }
        Ok(())
    }
}

pub fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    strides
}

/// The shape two operands broadcast to (numpy rules).
pub fn broadcast_shapes(op: &'static str, a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let db = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            (x, y) => return Err(Error::shape(op, a, b, format!("cannot broadcast sizes {x} and {y}"))),
        };
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_ranges_and_bounds_are_checked_against_the_buffer() {
        let row = Layout::contiguous(&[2, 3]).narrow(0, 1, 1).expect("narrow");
        assert_eq!(row.contiguous_range_in("t", 6).expect("inside"), 3..6);
        assert!(row.contiguous_range_in("t", 5).is_err(), "past the end");
        let t = Layout::contiguous(&[2, 3]).transpose(0, 1).expect("t");
        assert!(matches!(
            t.contiguous_range_in("t", 6),
            Err(Error::NotContiguous { .. })
        ));
        assert!(t.check_bounds("t", 6).is_ok() && t.check_bounds("t", 5).is_err());
        let empty = Layout::contiguous(&[2, 3]).narrow(1, 3, 0).expect("empty");
        assert_eq!(empty.contiguous_range_in("t", 6).expect("empty"), 0..0);
        assert!(empty.check_bounds("t", 0).is_ok());
    }
}
