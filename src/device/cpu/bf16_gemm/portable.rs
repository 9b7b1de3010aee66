//! The fallback: widen each operand matrix to f32 (exact), multiply with `gemm` in f32, round the
//! result to bf16 once. Correct everywhere; never faster than f32.

use gemm::Parallelism;
use half::bf16;

use super::{Operand, Problem};

/// Copies one strided rows × cols bf16 matrix into a row-major f32 one.
fn widen(src: &[bf16], op: &Operand, rows: usize, cols: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(rows * cols);
    for i in 0..rows {
        out.extend((0..cols).map(|j| src[op.at(i, j)].to_f32()));
    }
    out
}

pub(super) fn matmul(p: &Problem<'_>) -> Vec<bf16> {
    let (m, n, k) = (p.m, p.n, p.k);
    let mut out = Vec::with_capacity(p.pairs.len() * m * n);
    let mut acc = vec![0f32; m * n];
    let parallelism = if m * n * k >= 64 * 64 * 64 {
        Parallelism::Rayon(0)
    } else {
        Parallelism::None
    };
    for (oa, ob) in p.pairs {
        let (a, b) = (widen(p.a, oa, m, k), widen(p.b, ob, k, n));
        if m * n > 0 {
            // SAFETY: `a` is m×k and `b` k×n row-major, `acc` has m×n elements, and
            // `read_dst = false` means acc is only written (k = 0 gives zeros).
            unsafe {
                gemm::gemm(
                    m,
                    n,
                    k,
                    acc.as_mut_ptr(),
                    1,
                    n as isize,
                    false,
                    a.as_ptr(),
                    1,
                    k as isize,
                    b.as_ptr(),
                    1,
                    n as isize,
                    0.0,
                    1.0,
                    false,
                    false,
                    false,
                    parallelism,
                );
            }
        }
        out.extend(acc.iter().map(|&x| bf16::from_f32(x)));
    }
    out
}
