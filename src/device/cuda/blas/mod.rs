//! Matrix multiply through cuBLAS.
//!
//! cuBLAS is column-major; our tensors are row-major views with arbitrary strides. A row-major
//! matrix with row stride `ld` is, byte for byte, its transpose stored column-major with leading
//! dimension `ld`. So C = A·B (row-major, C contiguous) is computed as Cᵀ = Bᵀ·Aᵀ in cuBLAS's
//! terms: pass B first, then A, swap m and n, and C comes out row-major. A transposed view (unit
//! row stride) is a column-major matrix and needs only the transpose flag, no copy. Batches whose
//! matrices sit at one fixed stride apart (0 for a broadcast operand) go to one strided-batched
//! call; when B is shared by the whole batch and A's batch and row dimensions can be walked with
//! one stride, the batch folds into a single taller product. Anything else is made contiguous first.
//!
//! Precision ([`GemmMode`]): FP32 pedantic (CUBLAS_COMPUTE_32F_PEDANTIC: FP32 in every step,
//! reductions included: the lecture's `fp32` row), FP32 default (CUBLAS_COMPUTE_32F with the
//! default math mode: FP32 arithmetic, no TF32, but cuBLAS may split or reorder reductions: what
//! PyTorch's float32 matmul does, so the figure to set against PyTorch), TF32
//! (CUBLAS_COMPUTE_32F_FAST_TF32: FP32 inputs rounded to 10-bit mantissas on the tensor cores,
//! FP32 accumulation), BF16/FP16 inputs with FP32 accumulation and an output in the input dtype,
//! or in FP32 ([`GemmMode::Bf16F32Out`]). With a BF16/FP16 output cuBLAS's default math mode
//! allows reduced-precision reductions (split-K partial sums in the output type), as PyTorch's
//! `allow_bf16_reduced_precision_reduction` does by default; [`GemmMode::math_mode`] says which
//! mode each call runs under, and the lecture records it.

use std::ffi::c_void;

use cudarc::cublas::{result as blas, sys as blas_sys};

pub mod lt;
mod mode;

pub use lt::GemmRoute;
pub use mode::{F32Matmul, GemmMode};

use crate::base::Layout;
use crate::base::layout::merged_stride;
use crate::error::{Error, Result};

/// One operand as cuBLAS sees it: where its first matrix starts (in elements), whether it is
/// stored column-major (our transpose), its leading dimension, and the distance between the
/// matrices of a batch (0 when one matrix serves every batch element).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatDesc {
    pub offset: usize,
    pub col_major: bool,
    pub ld: usize,
    pub batch_stride: usize,
}

/// A matmul as cuBLAS calls: `batch` products of (m×k)·(k×n), row-major, output contiguous.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmPlan {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub batch: usize,
    pub a: MatDesc,
    pub b: MatDesc,
}

/// Which operands must be made contiguous before cuBLAS can take them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NeedsCopy {
    pub a: bool,
    pub b: bool,
}

/// How a rows×cols matrix with these strides can be handed to cuBLAS, if at all: row-major
/// (unit column stride) or column-major (unit row stride), with a valid leading dimension.
fn describe(rows: usize, cols: usize, rs: usize, cs: usize) -> Option<(bool, usize)> {
    let row_major_ld = if rows <= 1 { cols.max(1) } else { rs };
    if (cs == 1 || cols <= 1) && row_major_ld >= cols.max(1) {
        return Some((false, row_major_ld));
    }
    let col_major_ld = if cols <= 1 { rows.max(1) } else { cs };
    if (rs == 1 || rows <= 1) && col_major_ld >= rows.max(1) {
        return Some((true, col_major_ld));
    }
    None
}

/// Plans `a`·`b` for layouts [batch…, m, k] and [batch…, k, n] with identical batch shapes.
pub fn plan(la: &Layout, lb: &Layout) -> std::result::Result<GemmPlan, NeedsCopy> {
    let nd = la.ndim();
    let (m, k, n) = (la.shape[nd - 2], la.shape[nd - 1], lb.shape[nd - 1]);
    let batch_shape = &la.shape[..nd - 2];
    let batch: usize = batch_shape.iter().product();
    let a_mat = describe(m, k, la.strides[nd - 2], la.strides[nd - 1]);
    let b_mat = describe(k, n, lb.strides[nd - 2], lb.strides[nd - 1]);
    let a_batch = merged_stride(batch_shape, &la.strides[..nd - 2], 0);
    let b_batch = merged_stride(batch_shape, &lb.strides[..nd - 2], 0);
    let (Some((a_cm, a_ld)), Some((b_cm, b_ld)), Some(a_bs), Some(b_bs)) = (a_mat, b_mat, a_batch, b_batch) else {
        return Err(NeedsCopy {
            a: a_mat.is_none() || a_batch.is_none(),
            b: b_mat.is_none() || b_batch.is_none(),
        });
    };
    let b = MatDesc {
        offset: lb.offset,
        col_major: b_cm,
        ld: b_ld,
        batch_stride: b_bs,
    };
    // One B for the whole batch, and A's batch and row dimensions walkable as one row-major
    // dimension: a single (batch·m)×k product.
    if batch > 1 && b_bs == 0 && !a_cm {
        let rows_shape: Vec<usize> = la.shape[..nd - 1].to_vec();
        if let Some(row_stride) = merged_stride(&rows_shape, &la.strides[..nd - 1], 0) {
            let rows = batch * m;
            if let Some((false, ld)) = describe(rows, k, row_stride, la.strides[nd - 1]) {
                let a = MatDesc {
                    offset: la.offset,
                    col_major: false,
                    ld,
                    batch_stride: 0,
                };
                return Ok(GemmPlan {
                    m: rows,
                    n,
                    k,
                    batch: 1,
                    a,
                    b: MatDesc { batch_stride: 0, ..b },
                });
            }
        }
    }
    let a = MatDesc {
        offset: la.offset,
        col_major: a_cm,
        ld: a_ld,
        batch_stride: a_bs,
    };
    Ok(GemmPlan { m, n, k, batch, a, b })
}

fn int(what: &str, v: usize) -> Result<i32> {
    i32::try_from(v).map_err(|_| Error::invalid("matmul", format!("{what} = {v} exceeds cuBLAS's 32-bit limit")))
}

/// Device addresses of the operands' element 0 (offsets are added here) and of the output.
#[derive(Debug, Clone, Copy)]
pub struct GemmPtrs {
    pub a: u64,
    pub b: u64,
    pub c: u64,
}

/// Runs a planned product. The caller holds the cuBLAS handle's lock, has bound the context to
/// this thread, and guarantees the addresses cover the plan (layouts were bounds-checked).
/// `m`, `n` and `k` must be non-zero (empty products are handled by the caller).
///
/// # Safety
/// `handle` must be a live cuBLAS handle and the pointers valid device memory of the mode's dtypes.
pub unsafe fn run(handle: blas_sys::cublasHandle_t, mode: GemmMode, plan: &GemmPlan, ptrs: GemmPtrs) -> Result<()> {
    use blas_sys::cublasOperation_t::{CUBLAS_OP_N, CUBLAS_OP_T};
    let in_size = mode.input_dtype().size_in_bytes() as u64;
    let a_ptr = (ptrs.a + plan.a.offset as u64 * in_size) as *const c_void;
    let b_ptr = (ptrs.b + plan.b.offset as u64 * in_size) as *const c_void;
    let c_ptr = ptrs.c as *mut c_void;
    // Cᵀ (n×m) = Bᵀ (n×k) · Aᵀ (k×m): cuBLAS's first operand is our B, its second our A.
    let op_first = if plan.b.col_major { CUBLAS_OP_T } else { CUBLAS_OP_N };
    let op_second = if plan.a.col_major { CUBLAS_OP_T } else { CUBLAS_OP_N };
    let (m, n, k) = (int("n", plan.n)?, int("m", plan.m)?, int("k", plan.k)?);
    let (ld_first, ld_second, ldc) = (int("ld of B", plan.b.ld)?, int("ld of A", plan.a.ld)?, m);
    let in_type = mode::data_type(mode.input_dtype());
    let out_type = mode::data_type(mode.output_dtype());
    let (alpha, beta) = (1.0f32, 0.0f32);
    let alpha_ptr = &alpha as *const f32 as *const c_void;
    let beta_ptr = &beta as *const f32 as *const c_void;
    let algo = blas_sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT;
    // SAFETY: a live handle (the caller's contract).
    unsafe { blas_sys::cublasSetMathMode(handle, mode.math_mode()) }
        .result()
        .map_err(|e| Error::Cuda(format!("cublasSetMathMode: {e:?}")))?;
    let status = if plan.batch == 1 {
        // SAFETY: a live handle and device buffers of the plan's dtypes and sizes (the caller's
        // contract); alpha and beta live across the call.
        unsafe {
            blas::gemm_ex(
                handle,
                op_first,
                op_second,
                m,
                n,
                k,
                alpha_ptr,
                b_ptr,
                in_type,
                ld_first,
                a_ptr,
                in_type,
                ld_second,
                beta_ptr,
                c_ptr,
                out_type,
                ldc,
                mode.compute_type(),
                algo,
            )
        }
    } else {
        let stride_c = (plan.m * plan.n) as i64;
        // SAFETY: as the single product above, for every matrix of the batch.
        unsafe {
            blas::gemm_strided_batched_ex(
                handle,
                op_first,
                op_second,
                m,
                n,
                k,
                alpha_ptr,
                b_ptr,
                in_type,
                ld_first,
                plan.b.batch_stride as i64,
                a_ptr,
                in_type,
                ld_second,
                plan.a.batch_stride as i64,
                beta_ptr,
                c_ptr,
                out_type,
                ldc,
                stride_c,
                int("batch", plan.batch)?,
                mode.compute_type(),
                algo,
            )
        }
    };
    status.map_err(|e| {
        Error::Cuda(format!(
            "cuBLAS {} gemm ({}×{}×{}, batch {}) failed: {e:?}",
            mode.name(),
            plan.m,
            plan.n,
            plan.k,
            plan.batch
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(shape: &[usize], strides: &[usize], offset: usize) -> Layout {
        Layout {
            shape: shape.to_vec(),
            strides: strides.to_vec(),
            offset,
        }
    }

    #[test]
    fn contiguous_matrices_are_row_major() {
        let p = plan(&Layout::contiguous(&[16, 32]), &Layout::contiguous(&[32, 2])).expect("no copy");
        assert_eq!((p.m, p.n, p.k, p.batch), (16, 2, 32, 1));
        assert_eq!(
            p.a,
            MatDesc {
                offset: 0,
                col_major: false,
                ld: 32,
                batch_stride: 0
            }
        );
        assert_eq!(
            p.b,
            MatDesc {
                offset: 0,
                col_major: false,
                ld: 2,
                batch_stride: 0
            }
        );
    }

    #[test]
    fn a_transposed_view_is_column_major_without_a_copy() {
        // w: [8, 32] stored row-major; w.t(): [32, 8] with strides [1, 32].
        let p = plan(&Layout::contiguous(&[4, 32]), &layout(&[32, 8], &[1, 32], 0)).expect("no copy");
        assert_eq!(
            p.b,
            MatDesc {
                offset: 0,
                col_major: true,
                ld: 32,
                batch_stride: 0
            }
        );
    }

    #[test]
    fn a_shared_right_operand_folds_the_batch_into_rows() {
        // x: [4, 8, 16, 32] @ w: [32, 2] broadcast to [4, 8, 32, 2].
        let w = layout(&[4, 8, 32, 2], &[0, 0, 2, 1], 0);
        let p = plan(&Layout::contiguous(&[4, 8, 16, 32]), &w).expect("no copy");
        assert_eq!((p.m, p.n, p.k, p.batch), (4 * 8 * 16, 2, 32, 1));
        assert_eq!(p.a.ld, 32);
    }

    #[test]
    fn independent_batches_use_strided_batched_calls() {
        let p = plan(&Layout::contiguous(&[3, 5, 7]), &Layout::contiguous(&[3, 7, 2])).expect("no copy");
        assert_eq!((p.m, p.n, p.k, p.batch), (5, 2, 7, 3));
        assert_eq!((p.a.batch_stride, p.b.batch_stride), (35, 14));
    }

    #[test]
    fn a_sliced_row_keeps_its_offset_and_row_stride() {
        // Columns 2..6 of a [10, 10] matrix: [10, 4] with strides [10, 1], offset 2.
        let p = plan(&layout(&[10, 4], &[10, 1], 2), &Layout::contiguous(&[4, 3])).expect("no copy");
        assert_eq!(
            p.a,
            MatDesc {
                offset: 2,
                col_major: false,
                ld: 10,
                batch_stride: 0
            }
        );
    }

    #[test]
    fn unsupported_strides_ask_for_a_copy() {
        // Every other column: column stride 2, row stride 20; neither unit.
        let err = plan(&layout(&[10, 4], &[20, 2], 0), &Layout::contiguous(&[4, 3])).expect_err("needs a copy");
        assert_eq!(err, NeedsCopy { a: true, b: false });
        // A batch whose matrices are not one stride apart.
        let a = layout(&[2, 3, 4, 5], &[0, 20, 5, 1], 0);
        let err = plan(&a, &Layout::contiguous(&[2, 3, 5, 6])).expect_err("needs a copy");
        assert_eq!(err, NeedsCopy { a: true, b: false });
    }

    #[test]
    fn vectors_and_unit_dimensions_get_valid_leading_dimensions() {
        // x @ v with v a column [k, 1] made by unsqueeze (stride of the unit dim arbitrary).
        let p = plan(&Layout::contiguous(&[3, 4]), &layout(&[4, 1], &[1, 1], 0)).expect("no copy");
        assert!(p.b.ld >= 1);
        // A row vector [1, k] broadcast from a 1-D tensor.
        let p = plan(&layout(&[1, 4], &[4, 1], 0), &Layout::contiguous(&[4, 5])).expect("no copy");
        assert!(!p.a.col_major && p.a.ld >= 4);
    }
}
