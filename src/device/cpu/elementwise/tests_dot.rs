//! Dot products and matrix-vector products follow their documented order exactly, on every
//! instruction set and whether one thread or the team runs them; a NaN anywhere in a row makes
//! that row's output NaN.

use half::{bf16, f16};

use super::reduce::SUM_BLOCK;
use super::tests::{Bits, levels, values};
use super::*;
use crate::device::cpu::BufferElement;

/// The documented order, written out one element at a time: f32 lanes in a block, the block
/// sums added in f32.
fn dot_in_documented_order(a: &[f32], b: &[f32]) -> f32 {
    a.chunks(SUM_BLOCK)
        .zip(b.chunks(SUM_BLOCK))
        .fold(0.0, |total, (ba, bb)| {
            let mut l = [0f32; 64];
            for (i, (x, y)) in ba.iter().zip(bb).enumerate() {
                l[i % 64] += x * y;
            }
            for half in [32, 16, 8, 4, 2, 1] {
                for i in 0..half {
                    l[i] += l[i + half];
                }
            }
            total + l[0]
        })
}

fn one_thread<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a pool");
    pool.install(f)
}

/// (rows, columns): one row of every remainder of the lanes, of a block and of the threshold for
/// threads; few long rows (shared whole) and many short ones.
const SHAPES: [(usize, usize); 11] = [
    (1, 1),
    (1, 63),
    (1, 64),
    (1, 65),
    (1, SUM_BLOCK + 3),
    (1, PARALLEL_MIN + 5),
    (2, 1),
    (3, 17),
    (5, SUM_BLOCK + 1),
    (300, 257),
    (PARALLEL_MIN / 64 + 7, 64),
];

fn check<T: Bits + BufferElement + Lane>(round: fn(f32) -> T) {
    for level in levels() {
        for (m, k) in SHAPES {
            let finite = |len, seed| -> Vec<T> {
                values(len, seed)
                    .into_iter()
                    .map(|v| if v.is_finite() { v } else { 0.5 })
                    .map(T::from_f32)
                    .collect()
            };
            let (a, x) = (finite(m * k, 7), finite(k, 11));
            let wide = |v: &[T]| v.iter().map(|e| e.to_f64() as f32).collect::<Vec<f32>>();
            let xw = wide(&x);
            let want: Vec<T> = a
                .chunks_exact(k)
                .map(|row| round(dot_in_documented_order(&wide(row), &xw)))
                .collect();
            let bits = |v: &[T]| v.iter().map(|e| e.bits()).collect::<Vec<_>>();
            let got = matvec(level, &a, &x, k, round);
            assert_eq!(bits(&got), bits(&want), "{:?} {m}x{k} at {level:?}", T::DTYPE);
            let alone = one_thread(|| matvec(level, &a, &x, k, round));
            assert_eq!(bits(&alone), bits(&want), "{:?} {m}x{k} on one thread", T::DTYPE);
            // One NaN (a signalling one for the half types, which the shift widening keeps)
            // makes its row NaN and no other.
            let mut a = a;
            a[k / 2] = T::from_f32(f32::NAN);
            let got = matvec(level, &a, &x, k, round);
            assert!(got[0].to_f64().is_nan(), "{:?} {m}x{k}: NaN row", T::DTYPE);
            assert_eq!(bits(&got[1..]), bits(&want[1..]), "{:?} {m}x{k}: other rows", T::DTYPE);
        }
    }
}

#[test]
fn dot_and_matvec_follow_their_order_in_every_dtype_and_variant() {
    check::<f32>(|v| v);
    check::<bf16>(bf16::from_f32);
    check::<f16>(f16::from_f32);
}

/// Four bf16 rows' f32 sums, before they are rounded: rounding into bf16 hides most changes of
/// order (lanes 0 and 1 swapped in `dot_bf16` passed the test above), so the rows are held to the
/// documented order here, in f32 bits, on every level (`dot_bf16`'s loop on AVX-512).
#[test]
fn bf16_rows_follow_the_order_in_f32_bits() {
    for level in levels() {
        for k in [1, 63, 64, 65, 257, SUM_BLOCK, SUM_BLOCK + 77, 2 * SUM_BLOCK + 130] {
            let finite = |len, seed| -> Vec<f32> {
                values(len, seed)
                    .into_iter()
                    .filter(|v| v.is_finite() && v.abs() < 1e30)
                    .collect()
            };
            let a: Vec<bf16> = finite(8 * k, 5).into_iter().take(4 * k).map(bf16::from_f32).collect();
            let x: Vec<f32> = finite(2 * k, 9)
                .into_iter()
                .take(k)
                .map(|v| bf16::from_f32(v).to_f32())
                .collect();
            assert_eq!((a.len(), x.len()), (4 * k, k), "enough finite values");
            #[cfg(target_arch = "x86_64")]
            let interleaved = (level == Level::Avx512).then(|| super::dot_bf16::interleave(&x));
            #[cfg(not(target_arch = "x86_64"))]
            let interleaved: Option<Vec<f32>> = None;
            // Asking for rows ahead is a hint: the bits are the same either way.
            let ahead = k % 2 == 1;
            let got = super::dot::rows_dot4(level, &a, &x, interleaved.as_deref(), ahead);
            for (r, got) in got.into_iter().enumerate() {
                let row: Vec<f32> = a[r * k..(r + 1) * k].iter().map(|v| v.to_f32()).collect();
                let want = dot_in_documented_order(&row, &x);
                assert_eq!(
                    got.to_bits(),
                    want.to_bits(),
                    "row {r} of 4×{k} at {level:?}: {got} against {want}"
                );
            }
        }
    }
}
