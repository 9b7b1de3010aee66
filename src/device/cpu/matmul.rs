//! CPU matrix multiply through the `gemm` crate (AVX-512 kernels with the `x86-v4` feature).
//!
//! `gemm` takes row and column strides for every operand, so transposed or sliced views are
//! multiplied in place without a copy. Precision: f32 accumulates in f32. f16 and bf16 are
//! converted to f32 (exactly), multiplied and accumulated in f32, and rounded into the dtype
//! once, which is what PyTorch's CPU kernels do. `gemm` has no bf16 at all, and its own f16 path
//! is not used because it rounds partial sums to f16: after every term in its matrix-vector
//! kernel (m = 1 or n = 1) and for k ≤ 2, and after every block of k (≥ 512) otherwise, so a
//! 1×21·21×1 product came out a whole f16 ulp off. bf16 goes to `bf16_gemm`: `vdpbf16ps` where
//! the CPU has AVX512_BF16 (f32 accumulation, one rounding at the end), otherwise this same f32
//! route.

use gemm::Parallelism;
use half::f16;

use std::sync::atomic::AtomicUsize;

use super::team::{Shared, Team, claim};
use super::{CpuBuffer, bf16_gemm};

use crate::base::layout::merged_stride;
use crate::base::{Element, Layout};
use crate::error::{Error, Result};

/// One matrix inside a batched operand: where it starts and its (row, column) strides.
#[derive(Clone, Copy)]
pub(super) struct Mat {
    offset: usize,
    rs: isize,
    cs: isize,
}

impl Mat {
    /// A row-major matrix with `cols` columns, from its first element.
    pub(super) fn row_major(cols: usize) -> Mat {
        Mat {
            offset: 0,
            rs: cols as isize,
            cs: 1,
        }
    }
}

/// Plans the batched product as a list of (lhs, rhs) matrix pairs, one per output matrix, plus the
/// sizes m, n, k. When `b` is the same matrix for every batch element and `a`'s batch and row
/// dimensions can be walked with one stride, the whole batch folds into a single tall product,
/// which `gemm` runs far faster than many small ones.
struct Plan {
    m: usize,
    n: usize,
    k: usize,
    pairs: Vec<(Mat, Mat)>,
}

fn plan(la: &Layout, lb: &Layout) -> Plan {
    let nd = la.ndim();
    let (m, k, n) = (la.shape[nd - 2], la.shape[nd - 1], lb.shape[nd - 1]);
    let batch = &la.shape[..nd - 2];
    let a_rows = Mat {
        offset: la.offset,
        rs: la.strides[nd - 2] as isize,
        cs: la.strides[nd - 1] as isize,
    };
    let b_mat = Mat {
        offset: lb.offset,
        rs: lb.strides[nd - 2] as isize,
        cs: lb.strides[nd - 1] as isize,
    };

    let b_shared = lb.strides[..nd - 2]
        .iter()
        .zip(batch)
        .all(|(&s, &size)| s == 0 || size == 1);
    if b_shared && let Some(row_stride) = merged_stride(&la.shape[..nd - 1], &la.strides[..nd - 1], 1) {
        let rows: usize = la.shape[..nd - 1].iter().product();
        let a = Mat {
            rs: row_stride as isize,
            ..a_rows
        };
        return Plan {
            m: rows,
            n,
            k,
            pairs: vec![(a, b_mat)],
        };
    }
    let count: usize = batch.iter().product();
    let mut pairs = Vec::with_capacity(count);
    let mut index = vec![0usize; batch.len()];
    for _ in 0..count {
        let off = |l: &Layout| l.offset + index.iter().zip(&l.strides).map(|(i, s)| i * s).sum::<usize>();
        pairs.push((
            Mat {
                offset: off(la),
                ..a_rows
            },
            Mat {
                offset: off(lb),
                ..b_mat
            },
        ));
        for d in (0..batch.len()).rev() {
            index[d] += 1;
            if index[d] < batch[d] {
                break;
            }
            index[d] = 0;
        }
    }
    Plan { m, n, k, pairs }
}

/// Below this many multiply-adds a product runs on one thread: handing half of it to a second
/// costs more than it saves.
const PARALLEL_MIN_MAC: usize = 64 * 64 * 64;
/// Parts per thread when a product is split. More would let a thread that runs slower (a core
/// shared with another process) claim fewer, but each part is one more `gemm` call that packs its
/// operands again: on a quiet machine one part per thread measured fastest (2 threads: 355 against
/// 317 GFLOP/s at 512³).
const PARTS_PER_THREAD: usize = 1;

/// dst (m×n, row-major) = lhs · rhs by `gemm`, on the team's threads: the output is cut along its
/// longer side into parts that the threads claim, each a single-threaded `gemm` call. (`gemm`'s
/// own threading goes through rayon, whose hand-offs cost tens of microseconds, as much as a
/// whole 256³ product on one core.)
///
/// # Safety
/// `lhs` (m×k at strides `ma`) and `rhs` (k×n at `mb`) lie inside their buffers, and `dst` has
/// room for m×n values, which are only written.
unsafe fn product(
    (m, n, k): (usize, usize, usize),
    dst: *mut f32,
    (lhs, ma): (*const f32, Mat),
    (rhs, mb): (*const f32, Mat),
) {
    let (dst, lhs, rhs) = (Shared(dst), Shared(lhs), Shared(rhs));
    // One block: rows `rows` and columns `cols` of the output.
    let block = |rows: (usize, usize), cols: (usize, usize)| {
        // SAFETY: the block's operands are rows of lhs and columns of rhs inside the caller's,
        // and it writes only its own rows × columns of dst (row stride n).
        unsafe {
            gemm_once(
                (rows.1 - rows.0, cols.1 - cols.0, k),
                (dst.get().add(rows.0 * n + cols.0), n),
                (lhs.get().offset(rows.0 as isize * ma.rs), ma),
                (rhs.get().offset(cols.0 as isize * mb.cs), mb),
            )
        }
    };
    in_parts((m, n, k), &block);
}

/// One single-threaded `gemm` call: dst (m×n, row stride `dst_rs`) = lhs (m×k, strides of `ma`)
/// · rhs (k×n, strides of `mb`); dst is only written (`read_dst = false`). The offsets of `ma` and
/// `mb` are not used: the pointers are the matrices' first elements.
///
/// # Safety
/// Every element the strides reach from the three pointers lies inside its buffer.
pub(super) unsafe fn gemm_once(
    (m, n, k): (usize, usize, usize),
    (dst, dst_rs): (*mut f32, usize),
    (lhs, ma): (*const f32, Mat),
    (rhs, mb): (*const f32, Mat),
) {
    // SAFETY: the caller's promise.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst,
            1,
            dst_rs as isize,
            false,
            lhs,
            ma.cs,
            ma.rs,
            rhs,
            mb.cs,
            mb.rs,
            0.0,
            1.0,
            false,
            false,
            false,
            Parallelism::None,
        )
    }
}

/// Whether `in_parts` cuts an m×n output into row ranges (each part takes whole rows) rather
/// than column ranges.
pub(super) fn splits_rows(m: usize, n: usize) -> bool {
    m >= n
}

/// Runs `block(rows, cols)` over the m×n output cut along its longer side into parts that the
/// team's threads claim (or over the whole output on this thread when the product is small).
/// Every output element lies in exactly one block.
pub(super) fn in_parts((m, n, k): (usize, usize, usize), block: &(dyn Fn((usize, usize), (usize, usize)) + Sync)) {
    let threads = rayon::current_num_threads();
    if threads <= 1 || m * n * k < PARALLEL_MIN_MAC {
        block((0, m), (0, n));
        return;
    }
    let along_rows = splits_rows(m, n);
    let len = if along_rows { m } else { n };
    let parts = (threads * PARTS_PER_THREAD).min(len);
    let next = AtomicUsize::new(0);
    Team::global().run(threads, &|_| {
        while let Some(i) = claim(&next, parts) {
            let range = (len * i / parts, len * (i + 1) / parts);
            if along_rows {
                block(range, (0, n));
            } else {
                block((0, m), range);
            }
        }
    });
}

fn run(plan: &Plan, a: &[f32], b: &[f32]) -> Vec<f32> {
    let (m, n, k) = (plan.m, plan.n, plan.k);
    let len = plan.pairs.len() * m * n;
    // k = 0 is an empty sum: zeros. Returning early also keeps us from forming pointers from the
    // offsets of empty operands, which may lie past their buffers.
    if len == 0 || k == 0 {
        return vec![0.0; len];
    }
    // No zero-fill: `gemm` is told not to read dst, and writes every one of its m×n values (a
    // memset of the output cost about 2 % of a training step).
    let mut out = Vec::<f32>::with_capacity(len);
    let base = out.spare_capacity_mut().as_mut_ptr().cast::<f32>();
    for (i, (ma, mb)) in plan.pairs.iter().enumerate() {
        // SAFETY: the layouts were bounds-checked against the buffers by the caller, and `dst`
        // has room for m×n elements of the allocation, which `product` only writes.
        unsafe {
            product(
                (m, n, k),
                base.add(i * m * n),
                (a.as_ptr().add(ma.offset), *ma),
                (b.as_ptr().add(mb.offset), *mb),
            )
        };
    }
    // SAFETY: every product wrote all of its m×n values, so all `len` are initialised.
    unsafe { out.set_len(len) };
    out
}

/// A half-precision product computed in f32 and rounded once (see the module comment).
fn run_in_f32<T: Element>(plan: &Plan, a: &[T], b: &[T]) -> Vec<T> {
    let widen = |v: &[T]| v.iter().map(|h| h.to_f32()).collect::<Vec<f32>>();
    run(plan, &widen(a), &widen(b)).into_iter().map(T::from_f32).collect()
}

/// Where a product is a matrix-vector product `A·x` or a dot product (one output column, `A`'s
/// rows one after another, `x` contiguous): the ranges of `A` and `x` in their buffers.
fn as_matvec(plan: &Plan) -> Option<(std::ops::Range<usize>, std::ops::Range<usize>)> {
    let (m, n, k) = (plan.m, plan.n, plan.k);
    let [(ma, mb)] = plan.pairs[..] else { return None };
    let rows_in_order = (ma.cs == 1 || k == 1) && (m == 1 || ma.rs == k as isize);
    let vector = mb.rs == 1 || k == 1;
    (n == 1 && m > 0 && k > 0 && rows_in_order && vector)
        .then(|| (ma.offset..ma.offset + m * k, mb.offset..mb.offset + k))
}

/// `A·x` by the memory-bound loops of `elementwise::matvec` (f32 accumulation, one rounding),
/// where the operands are where `as_matvec` found them.
fn matvec<T: super::elementwise::Lane>(
    (ra, rx): (std::ops::Range<usize>, std::ops::Range<usize>),
    a: &[T],
    x: &[T],
    k: usize,
    round: fn(f32) -> T,
) -> Result<Option<Vec<T>>> {
    let (Some(a), Some(x)) = (a.get(ra), x.get(rx)) else {
        return Ok(None);
    };
    Ok(Some(super::elementwise::matvec(
        super::elementwise::Level::current()?,
        a,
        x,
        k,
        round,
    )))
}

pub fn matmul(a: &CpuBuffer, la: &Layout, b: &CpuBuffer, lb: &Layout) -> Result<CpuBuffer> {
    la.check_bounds("matmul", a.len())?;
    lb.check_bounds("matmul", b.len())?;
    let plan = plan(la, lb);
    if let Some(ranges) = as_matvec(&plan) {
        let k = plan.k;
        let done = match (a, b) {
            (CpuBuffer::F32(x), CpuBuffer::F32(y)) => matvec(ranges, x, y, k, |v| v)?.map(CpuBuffer::F32),
            (CpuBuffer::BF16(x), CpuBuffer::BF16(y)) => {
                matvec(ranges, x, y, k, half::bf16::from_f32)?.map(CpuBuffer::BF16)
            }
            (CpuBuffer::F16(x), CpuBuffer::F16(y)) => matvec(ranges, x, y, k, f16::from_f32)?.map(CpuBuffer::F16),
            _ => None,
        };
        if let Some(out) = done {
            return Ok(out);
        }
    }
    Ok(match (a, b) {
        (CpuBuffer::F32(x), CpuBuffer::F32(y)) => CpuBuffer::F32(run(&plan, x, y)),
        (CpuBuffer::F16(x), CpuBuffer::F16(y)) => CpuBuffer::F16(run_in_f32::<f16>(&plan, x, y)),
        (CpuBuffer::BF16(x), CpuBuffer::BF16(y)) => {
            let operand = |m: &Mat| bf16_gemm::Operand {
                offset: m.offset,
                rs: m.rs,
                cs: m.cs,
            };
            let pairs: Vec<_> = plan.pairs.iter().map(|(ma, mb)| (operand(ma), operand(mb))).collect();
            let problem = bf16_gemm::Problem {
                m: plan.m,
                n: plan.n,
                k: plan.k,
                a: x,
                b: y,
                pairs: &pairs,
            };
            CpuBuffer::BF16(bf16_gemm::matmul(bf16_gemm::current_kernel()?, &problem)?)
        }
        (x, y) if x.dtype() != y.dtype() => {
            return Err(Error::DTypeMismatch {
                op: "matmul",
                lhs: x.dtype().name(),
                rhs: y.dtype().name(),
            });
        }
        (x, _) => {
            return Err(Error::UnsupportedDType {
                op: "matmul",
                dtype: x.dtype().name(),
                why: "matmul needs float32, float16 or bfloat16",
            });
        }
    })
}
