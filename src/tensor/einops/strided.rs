//! Reshaping without copying whenever the strides allow it. `Tensor::reshape` views only
//! contiguous tensors; rearrange splits and merges dimensions of permuted tensors all the time,
//! and most of those are still expressible as strides: splitting a dimension always is, and
//! merging two is whenever the outer one steps exactly over the inner one. Only when no strides
//! exist do we copy.

use crate::error::{Error, Result};
use crate::tensor::{Layout, Tensor};

/// `x` with `shape`: a view when strides for it exist, otherwise a contiguous copy.
pub(crate) fn reshape(x: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if shape.iter().product::<usize>() != x.numel() {
        return Err(Error::shape(
            "reshape",
            x.shape(),
            shape,
            "the number of elements differs",
        ));
    }
    match view_strides(x.layout(), shape) {
        Some(strides) => Ok(x.with_layout(Layout {
            shape: shape.to_vec(),
            strides,
            offset: x.storage_offset(),
        })),
        None => x.contiguous()?.view(shape),
    }
}

/// Strides that read `layout`'s elements in row-major order with `shape`, if any exist.
///
/// Walks the old dimensions from the innermost, cutting them into chunks that are contiguous
/// with each other (each stride equals the next one times its size). Every new dimension must
/// fall inside one chunk; inside a chunk strides are row-major multiples of its innermost stride.
fn view_strides(layout: &Layout, shape: &[usize]) -> Option<Vec<usize>> {
    let (old_shape, old_strides) = (&layout.shape, &layout.strides);
    let mut strides = vec![0; shape.len()];
    if layout.numel() == 0 || old_shape.is_empty() {
        // Nothing to read (or one element): any row-major strides will do.
        return Some(crate::base::layout::contiguous_strides(shape));
    }
    let mut new_d = shape.len();
    let mut chunk_stride = old_strides[old_shape.len() - 1];
    let (mut chunk_numel, mut new_numel) = (1usize, 1usize);
    for d in (0..old_shape.len()).rev() {
        chunk_numel *= old_shape[d];
        let chunk_ends = d == 0 || (old_shape[d - 1] != 1 && old_strides[d - 1] != chunk_numel * chunk_stride);
        if !chunk_ends {
            continue;
        }
        while new_d > 0 && (new_numel < chunk_numel || shape[new_d - 1] == 1) {
            new_d -= 1;
            strides[new_d] = new_numel * chunk_stride;
            new_numel *= shape[new_d];
        }
        if new_numel != chunk_numel {
            return None;
        }
        if d > 0 {
            chunk_stride = old_strides[d - 1];
            chunk_numel = 1;
            new_numel = 1;
        }
    }
    if new_d != 0 {
        return None;
    }
    Some(strides)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::DType;

    fn arange(shape: &[usize]) -> Tensor {
        Tensor::arange(shape.iter().product(), DType::F32)
            .unwrap()
            .view(shape)
            .unwrap()
    }

    #[test]
    fn split_of_a_transpose_is_a_view() {
        let x = arange(&[4, 6]).t().unwrap(); // 6x4, strides (1, 6)
        let y = reshape(&x, &[2, 3, 4]).unwrap();
        assert!(Tensor::same_storage(&x, &y));
        assert_eq!(y.to_vec_f64().unwrap(), x.contiguous().unwrap().to_vec_f64().unwrap());
    }

    #[test]
    fn merge_of_a_transpose_copies() {
        let x = arange(&[4, 6]).t().unwrap();
        let y = reshape(&x, &[24]).unwrap();
        assert!(!Tensor::same_storage(&x, &y));
        assert_eq!(y.to_vec_f64().unwrap(), x.contiguous().unwrap().to_vec_f64().unwrap());
    }

    #[test]
    fn merge_of_contiguous_neighbours_inside_a_permutation_is_a_view() {
        // [2, 3, 4] permuted to [3, 4, 2]: dims 0 and 1 are still adjacent in memory.
        let x = arange(&[2, 3, 4]).permute(&[1, 2, 0]).unwrap();
        let y = reshape(&x, &[12, 2]).unwrap();
        assert!(Tensor::same_storage(&x, &y));
        assert_eq!(y.to_vec_f64().unwrap(), x.contiguous().unwrap().to_vec_f64().unwrap());
    }

    #[test]
    fn size_one_dimensions_empty_and_scalars() {
        let x = arange(&[3, 1, 4]).narrow(2, 1, 2).unwrap(); // strides (4, 4, 1), not contiguous
        let y = reshape(&x, &[3, 2, 1]).unwrap();
        assert!(Tensor::same_storage(&x, &y));
        assert_eq!(y.to_vec_f64().unwrap(), x.contiguous().unwrap().to_vec_f64().unwrap());
        let s = Tensor::ones(&[], DType::F32).unwrap();
        assert_eq!(reshape(&s, &[1, 1]).unwrap().shape(), &[1, 1]);
        assert_eq!(
            reshape(&reshape(&s, &[1, 1]).unwrap(), &[]).unwrap().shape(),
            &[] as &[usize]
        );
        let e = Tensor::zeros(&[0, 3], DType::F32).unwrap();
        assert_eq!(reshape(&e, &[3, 0, 5]).unwrap().shape(), &[3, 0, 5]);
        assert!(matches!(reshape(&x, &[5]), Err(Error::ShapeMismatch { .. })));
    }
}
