//! Walking a layout: storage positions in row-major logical order, and merging dimensions that
//! can be walked as one (what the CUDA kernels and both matmuls use to do less index arithmetic).

use super::Layout;

/// Merges dimensions that can be walked as one in every operand (`stride[d] == stride[d+1] ×
/// shape[d+1]`) and drops size-1 dimensions. The logical row-major order of the elements, and so
/// every element's storage position, is unchanged; a walk over the result just does less index
/// arithmetic.
pub fn collapse(shape: &[usize], strides: &[&[usize]]) -> (Vec<usize>, Vec<Vec<usize>>) {
    let keep: Vec<usize> = (0..shape.len()).filter(|&d| shape[d] != 1).collect();
    let mut out_shape: Vec<usize> = Vec::new();
    let mut out_strides: Vec<Vec<usize>> = vec![Vec::new(); strides.len()];
    for &d in &keep {
        let mergeable = !out_shape.is_empty()
            && strides
                .iter()
                .zip(&out_strides)
                .all(|(s, o)| *o.last().unwrap_or(&0) == s[d] * shape[d]);
        if mergeable {
            if let Some(last) = out_shape.last_mut() {
                *last *= shape[d];
            }
            for (o, s) in out_strides.iter_mut().zip(strides) {
                if let Some(last) = o.last_mut() {
                    *last = s[d];
                }
            }
        } else {
            out_shape.push(shape[d]);
            for (o, s) in out_strides.iter_mut().zip(strides) {
                o.push(s[d]);
            }
        }
    }
    (out_shape, out_strides)
}

/// The one stride that walks all of `shape` when its dimensions collapse into one (see
/// [`collapse`]); `single` when no dimension has more than one element (any stride walks a single
/// element; callers pick the one their library expects). None when they do not collapse.
pub fn merged_stride(shape: &[usize], strides: &[usize], single: usize) -> Option<usize> {
    match collapse(shape, &[strides]).1[0].as_slice() {
        [] => Some(single),
        [stride] => Some(*stride),
        _ => None,
    }
}

/// Walks a layout in row-major logical order, yielding storage positions. An odometer over the
/// dimensions: the innermost stride is added each step, carries adjust the outer ones.
pub struct StridedIndices<'a> {
    layout: &'a Layout,
    counter: Vec<usize>,
    next: usize,
    remaining: usize,
}

impl<'a> StridedIndices<'a> {
    pub(super) fn new(layout: &'a Layout) -> Self {
        StridedIndices {
            layout,
            counter: vec![0; layout.ndim()],
            next: layout.offset,
            remaining: layout.numel(),
        }
    }
}

impl Iterator for StridedIndices<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let current = self.next;
        let (shape, strides) = (&self.layout.shape, &self.layout.strides);
        for d in (0..shape.len()).rev() {
            self.counter[d] += 1;
            self.next += strides[d];
            if self.counter[d] < shape[d] {
                break;
            }
            self.next -= strides[d] * shape[d];
            self.counter[d] = 0;
        }
        Some(current)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for StridedIndices<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_layouts_collapse_to_one_dimension() {
        let (shape, strides) = collapse(&[4, 8, 16], &[&[128, 16, 1]]);
        assert_eq!((shape, strides), (vec![512], vec![vec![1]]));
    }

    #[test]
    fn a_transpose_does_not_collapse_but_size_one_dimensions_go() {
        // [3, 1, 2] transposed view of a 2x3 matrix with an inserted unit dimension.
        let (shape, strides) = collapse(&[3, 1, 2], &[&[1, 7, 3]]);
        assert_eq!((shape, strides), (vec![3, 2], vec![vec![1, 3]]));
    }

    #[test]
    fn broadcast_operands_collapse_only_where_both_can() {
        // a: contiguous [2, 3, 4]; b: [3, 4] broadcast along dim 0 (stride 0).
        let (shape, strides) = collapse(&[2, 3, 4], &[&[12, 4, 1], &[0, 4, 1]]);
        assert_eq!(shape, vec![2, 12]);
        assert_eq!(strides, vec![vec![12, 1], vec![0, 1]]);
    }

    #[test]
    fn collapsing_keeps_every_storage_position() {
        let layout = Layout {
            shape: vec![2, 1, 3, 4],
            strides: vec![1, 99, 8, 2],
            offset: 5,
        };
        let (shape, strides) = collapse(&layout.shape, &[&layout.strides]);
        let collapsed = Layout {
            shape,
            strides: strides[0].clone(),
            offset: 5,
        };
        assert_eq!(
            layout.storage_indices().collect::<Vec<_>>(),
            collapsed.storage_indices().collect::<Vec<_>>()
        );
    }

    #[test]
    fn merged_strides_walk_collapsible_dimensions_as_one() {
        assert_eq!(merged_stride(&[4, 8, 16], &[128, 16, 1], 1), Some(1));
        assert_eq!(merged_stride(&[4, 1, 16], &[16, 99, 1], 1), Some(1));
        assert_eq!(merged_stride(&[4, 8], &[0, 0], 1), Some(0), "a broadcast collapses too");
        assert_eq!(merged_stride(&[3, 2], &[1, 3], 1), None, "a transpose does not");
        assert_eq!(merged_stride(&[1, 1], &[5, 7], 1), Some(1));
        assert_eq!(merged_stride(&[], &[], 0), Some(0));
    }
}
