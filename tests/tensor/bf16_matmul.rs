//! bf16 matmul against an f64 reference, through every kernel this CPU can run (AMX tiles and
//! AVX512_BF16 where it has them, the portable f32 one everywhere), on random shapes with odd
//! sizes and on batched, broadcast, transposed and sliced operands. The reference multiplies the
//! logical matrices the test drew, before it wrote them into strided buffers, so it shares no
//! indexing with the kernels. A kernel this CPU cannot run is said to be untested on the terminal
//! (CS336_REQUIRE_AVX512_BF16=1, set by CI, makes a missing AVX512_BF16 kernel a failure).
//!
//! Tolerance: both kernels accumulate in f32 and round to bf16 once, so for an output whose exact
//! value is c = Σ a·b (the products of bf16 values are exact in f32),
//!   |got − c| ≤ u_bf16·|c| + (1 + u_bf16)·γ_k·Σ|a·b|,   u_bf16 = 2⁻⁸, γ_k = k·2⁻²⁴ / (1 − k·2⁻²⁴),
//! the first term from the final rounding, the second from any order of f32 additions.

use crate::common;

use cs336::Tensor;
use cs336::device::cpu::bf16_gemm::{self, Bf16Kernel, Operand, Problem};
use cs336::device::cpu::bf16_matmul_isa;
use cs336::rng::Rng;
use cs336::tensor::DType;
use half::bf16;
use proptest::prelude::*;

const U_BF16: f64 = 1.0 / 256.0;

fn gamma(k: usize) -> f64 {
    let ku = k as f64 * f64::powi(2.0, -24);
    ku / (1.0 - ku)
}

/// Checks every output against its exact value and the bound above; `abs_sums` holds Σ|a·b|.
fn assert_close(got: &[f64], exact: &[f64], abs_sums: &[f64], k: usize, what: &str) {
    assert_eq!(got.len(), exact.len(), "{what}: output length");
    for (i, ((&g, &c), &s)) in got.iter().zip(exact).zip(abs_sums).enumerate() {
        // 1e-30 covers the flushing of subnormal partial results by vdpbf16ps, far below any
        // value these tests produce.
        let bound = U_BF16 * c.abs() + (1.0 + U_BF16) * gamma(k) * s + 1e-30;
        assert!(
            (g - c).abs() <= bound,
            "{what}: output {i} is {g}, exact {c}, error {} > bound {bound}",
            (g - c).abs()
        );
    }
}

/// The kernels this CPU can run. Without AVX512_BF16 only the portable one is, and the run says
/// so on the terminal; with `CS336_REQUIRE_AVX512_BF16=1` (CI, whose machine has it) that fails.
fn kernels() -> Vec<Bf16Kernel> {
    for k in Bf16Kernel::ALL {
        if k.is_available() {
            continue;
        }
        let msg = format!(
            "this CPU cannot run the {} bf16 kernel: it is not tested here",
            k.name()
        );
        assert!(
            k != Bf16Kernel::Avx512Bf16 || !std::env::var("CS336_REQUIRE_AVX512_BF16").is_ok_and(|v| v == "1"),
            "{msg}; CS336_REQUIRE_AVX512_BF16=1 makes that a failure"
        );
        common::note_once(&format!("bf16_matmul: skipped in part: {msg}"));
    }
    Bf16Kernel::ALL.into_iter().filter(|k| k.is_available()).collect()
}

fn random_bf16(len: usize, seed: u64) -> Vec<bf16> {
    let mut rng = Rng::seed(seed);
    (0..len).map(|_| bf16::from_f64(rng.normal())).collect()
}

/// A logical rows × cols matrix, row by row, as the test means it (no strides involved).
#[derive(Debug, Clone)]
struct Matrix {
    rows: usize,
    cols: usize,
    at: Vec<Vec<bf16>>,
}

impl Matrix {
    fn random(rows: usize, cols: usize, seed: u64) -> Matrix {
        let flat = random_bf16(rows * cols, seed);
        Matrix {
            rows,
            cols,
            at: (0..rows).map(|i| flat[i * cols..(i + 1) * cols].to_vec()).collect(),
        }
    }
}

/// The exact products of logical matrices (f64 holds each product of bf16 values exactly and sums
/// them far more precisely than bf16 shows), and Σ|a·b| per output for the error bound.
fn exact_product(a: &Matrix, b: &Matrix) -> (Vec<f64>, Vec<f64>) {
    assert_eq!(a.cols, b.rows, "inner sizes");
    let (mut exact, mut sums) = (Vec::new(), Vec::new());
    for i in 0..a.rows {
        for j in 0..b.cols {
            let terms: Vec<f64> = (0..a.cols).map(|l| a.at[i][l].to_f64() * b.at[l][j].to_f64()).collect();
            exact.push(terms.iter().sum());
            sums.push(terms.iter().map(|t| t.abs()).sum());
        }
    }
    (exact, sums)
}

/// How a rows × cols operand sits in its buffer.
#[derive(Debug, Clone, Copy)]
enum Placement {
    RowMajor,
    /// Stored transposed (column-major).
    ColMajor,
    /// A window of a larger row-major matrix: offset and padded row stride.
    Sliced {
        pad: usize,
        skip: usize,
    },
    /// Both strides above one (every other column of a larger matrix).
    Strided,
    /// Every row is the same row (row stride 0), as after broadcasting.
    RowBroadcast,
}

fn placement() -> impl Strategy<Value = Placement> {
    prop_oneof![
        Just(Placement::RowMajor),
        Just(Placement::ColMajor),
        (1usize..9, 0usize..7).prop_map(|(pad, skip)| Placement::Sliced { pad, skip }),
        Just(Placement::Strided),
        Just(Placement::RowBroadcast),
    ]
}

/// Where element (i, j) of a placed matrix lies in its buffer.
type Position = dyn Fn(usize, usize) -> usize;

/// A random logical rows × cols matrix (all rows equal when broadcast), written into a buffer as
/// `how` places it, the rest of the buffer other random values; and the operand describing it.
/// Each placement's positions are written out here, not computed from the operand.
fn place(rows: usize, cols: usize, how: Placement, seed: u64) -> (Matrix, Vec<bf16>, Operand) {
    let mut m = Matrix::random(rows, cols, seed);
    let (len, op, pos): (usize, Operand, Box<Position>) = match how {
        Placement::RowMajor => (
            rows * cols,
            Operand {
                offset: 0,
                rs: cols as isize,
                cs: 1,
            },
            Box::new(move |i, j| i * cols + j),
        ),
        Placement::ColMajor => (
            rows * cols,
            Operand {
                offset: 0,
                rs: 1,
                cs: rows as isize,
            },
            Box::new(move |i, j| j * rows + i),
        ),
        Placement::Sliced { pad, skip } => (
            skip + rows * (cols + pad),
            Operand {
                offset: skip,
                rs: (cols + pad) as isize,
                cs: 1,
            },
            Box::new(move |i, j| skip + i * (cols + pad) + j),
        ),
        Placement::Strided => (
            rows * cols * 2 + 1,
            Operand {
                offset: 1,
                rs: 2 * cols as isize,
                cs: 2,
            },
            Box::new(move |i, j| 1 + i * 2 * cols + 2 * j),
        ),
        Placement::RowBroadcast => {
            // One stored row stands for all of them.
            for i in 1..rows {
                m.at[i] = m.at[0].clone();
            }
            (
                cols,
                Operand {
                    offset: 0,
                    rs: 0,
                    cs: 1,
                },
                Box::new(|_, j| j),
            )
        }
    };
    let mut buffer = random_bf16(len, seed ^ 0x5eed);
    for i in 0..rows {
        for j in 0..cols {
            buffer[pos(i, j)] = m.at[i][j];
        }
    }
    (m, buffer, op)
}

/// Sizes around the kernels' tile edges (AVX-512: 12 rows, 32 columns; AMX: tiles of 16 rows,
/// blocks of 32 rows and 32 columns, steps of 32 k), and the odd k pair.
fn dim() -> impl Strategy<Value = usize> {
    prop_oneof![
        Just(1usize),
        Just(2),
        Just(3),
        Just(11),
        Just(12),
        Just(13),
        Just(15),
        Just(16),
        Just(17),
        Just(31),
        Just(32),
        Just(33),
        Just(64),
        Just(65),
        Just(96),
        Just(97),
        Just(128),
        1usize..140,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Single products, operands placed in every way, both kernels.
    #[test]
    fn kernel_matches_f64_reference(m in dim(), n in dim(), k in dim(), pa in placement(), pb in placement(), seed in any::<u64>()) {
        let (ma, a, oa) = place(m, k, pa, seed);
        let (mb, b, ob) = place(k, n, pb, seed ^ 0x9e37_79b9);
        let pairs = [(oa, ob)];
        let p = Problem { m, n, k, a: &a, b: &b, pairs: &pairs };
        let (exact, sums) = exact_product(&ma, &mb);
        for kernel in kernels() {
            let got: Vec<f64> = bf16_gemm::matmul(kernel, &p).unwrap().iter().map(|x| x.to_f64()).collect();
            assert_close(&got, &exact, &sums, k, &format!("{} {m}×{k}·{k}×{n} {pa:?} {pb:?}", kernel.name()));
        }
    }

    /// Batched products (several pairs from one buffer each), which run a product per thread.
    #[test]
    fn batched_problem_matches_reference(batch in 1usize..6, m in dim(), n in 1usize..40, k in dim(), seed in any::<u64>()) {
        // Matrix i of A is row-major at i·m·k; matrix i of B is stored transposed, 3 elements
        // late, at 3 + i·k·n.
        let lhs: Vec<Matrix> = (0..batch).map(|i| Matrix::random(m, k, seed + 2 * i as u64)).collect();
        let rhs: Vec<Matrix> = (0..batch).map(|i| Matrix::random(k, n, seed + 2 * i as u64 + 1)).collect();
        let mut a = random_bf16(batch * m * k, seed ^ 1);
        let mut b = random_bf16(batch * k * n + 3, seed ^ 2);
        for t in 0..batch {
            for (r, row) in lhs[t].at.iter().enumerate() {
                for (l, &x) in row.iter().enumerate() {
                    a[t * m * k + r * k + l] = x;
                }
            }
            for (l, row) in rhs[t].at.iter().enumerate() {
                for (c, &x) in row.iter().enumerate() {
                    b[3 + t * k * n + c * k + l] = x;
                }
            }
        }
        let pairs: Vec<_> = (0..batch).map(|i| (
            Operand { offset: i * m * k, rs: k as isize, cs: 1 },
            Operand { offset: 3 + i * k * n, rs: 1, cs: k as isize },
        )).collect();
        let p = Problem { m, n, k, a: &a, b: &b, pairs: &pairs };
        let (mut exact, mut sums) = (Vec::new(), Vec::new());
        for (x, y) in lhs.iter().zip(&rhs) {
            let (e, s) = exact_product(x, y);
            exact.extend(e);
            sums.extend(s);
        }
        for kernel in kernels() {
            let got: Vec<f64> = bf16_gemm::matmul(kernel, &p).unwrap().iter().map(|x| x.to_f64()).collect();
            assert_close(&got, &exact, &sums, k, &format!("{} batch {batch} of {m}×{k}·{k}×{n}", kernel.name()));
        }
    }
}

/// The tensor layer's views, through `Tensor::matmul`, for each kernel.
mod through_tensors {
    use super::*;

    /// Naive batched f64 product of two tensors already broadcast to [batch…, m, k] and [batch…, k, n].
    fn reference(a: &Tensor, b: &Tensor) -> (Vec<f64>, Vec<f64>) {
        let nd = a.ndim();
        let (m, k, n) = (a.shape()[nd - 2], a.shape()[nd - 1], b.shape()[nd - 1]);
        let (av, bv) = (
            a.contiguous().unwrap().to_vec_f64().unwrap(),
            b.contiguous().unwrap().to_vec_f64().unwrap(),
        );
        let batch = av.len() / (m * k).max(1);
        let (mut exact, mut sums) = (vec![], vec![]);
        for t in 0..batch {
            for i in 0..m {
                for j in 0..n {
                    let terms = (0..k).map(|l| av[t * m * k + i * k + l] * bv[t * k * n + l * n + j]);
                    exact.push(terms.clone().sum());
                    sums.push(terms.map(f64::abs).sum());
                }
            }
        }
        (exact, sums)
    }

    fn check(a: &Tensor, b: &Tensor, what: &str) {
        let out_shape = a.matmul(b).unwrap().shape().to_vec();
        let nd = out_shape.len();
        let batch = &out_shape[..nd - 2];
        let with = |t: &Tensor| {
            let tail = &t.shape()[t.ndim() - 2..];
            t.broadcast_to(&batch.iter().chain(tail).copied().collect::<Vec<_>>())
                .unwrap()
        };
        let (exact, sums) = reference(&with(a), &with(b));
        let k = a.shape()[a.ndim() - 1];
        for kernel in kernels() {
            let got = bf16_gemm::with_kernel(kernel, || a.matmul(b)).unwrap().unwrap();
            assert_eq!(got.dtype(), DType::BF16);
            assert_eq!(got.shape(), &out_shape[..]);
            assert_close(
                &got.to_vec_f64().unwrap(),
                &exact,
                &sums,
                k,
                &format!("{} {what}", kernel.name()),
            );
        }
    }

    fn randn(shape: &[usize], seed: u64) -> Tensor {
        Tensor::randn(shape, DType::BF16, &mut Rng::seed(seed)).unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// [batch, m, k] · [k, n]: the batch folds into one tall product.
        #[test]
        fn folded_batch(batch in 1usize..5, m in dim(), k in dim(), n in dim(), seed in any::<u64>()) {
            check(&randn(&[batch, m, k], seed), &randn(&[k, n], seed + 1), "folded batch");
        }

        /// [b1, 1, m, k] · [1, b2, k, n]: both operands broadcast, one product per output matrix.
        #[test]
        fn broadcast_batch(b1 in 1usize..4, b2 in 1usize..4, m in dim(), k in dim(), n in 1usize..70, seed in any::<u64>()) {
            check(&randn(&[b1, 1, m, k], seed), &randn(&[1, b2, k, n], seed + 1), "broadcast batch");
        }

        /// Transposed and sliced views of both operands.
        #[test]
        fn transposed_and_sliced(m in dim(), k in dim(), n in dim(), cut in 0usize..5, seed in any::<u64>()) {
            let a_t = randn(&[k, m + cut], seed).narrow(1, cut, m).unwrap().t().unwrap();
            let b_t = randn(&[n, k + cut], seed + 1).narrow(1, cut, k).unwrap().t().unwrap();
            check(&a_t, &b_t, "Aᵀ sliced · Bᵀ sliced");
            let a_rows = randn(&[m + cut, k], seed + 2).narrow(0, cut, m).unwrap();
            check(&a_rows, &b_t, "row slice · Bᵀ");
            let batched_t = randn(&[2, k, m], seed + 3).transpose(1, 2).unwrap();
            check(&batched_t, &randn(&[2, k, n], seed + 4), "batched Aᵀ");
        }
    }

    #[test]
    fn vectors_and_empty_dimensions() {
        let (v, m) = (randn(&[33], 1), randn(&[33, 17], 2));
        check(&v.unsqueeze(0).unwrap(), &m, "1×k row vector");
        for kernel in kernels() {
            let mv = bf16_gemm::with_kernel(kernel, || m.t().unwrap().matmul(&v))
                .unwrap()
                .unwrap();
            assert_eq!(mv.shape(), &[17]);
            // k = 0: the sum over nothing is 0, on every kernel.
            let zero_k = bf16_gemm::with_kernel(kernel, || randn(&[3, 0], 3).matmul(&randn(&[0, 5], 4)))
                .unwrap()
                .unwrap();
            assert_eq!(zero_k.to_vec_f64().unwrap(), vec![0.0; 15], "{}", kernel.name());
            let zero_m = bf16_gemm::with_kernel(kernel, || randn(&[0, 4], 3).matmul(&randn(&[4, 5], 4)))
                .unwrap()
                .unwrap();
            assert_eq!(zero_m.shape(), &[0, 5]);
        }
    }

    /// A product big enough to use both threads and several A groups and B panels.
    #[test]
    fn large_product_on_all_threads() {
        check(&randn(&[300, 520], 5), &randn(&[520, 130], 6), "300×520·520×130");
    }
}

/// Shapes where the AMX kernel reads A in place (row-major rows, k a multiple of 32) for whole
/// blocks of 32 rows and copies the last partial block, with row strides wider than k; large
/// enough to run on every thread, split along the rows (tall) and along the columns (wide, with A
/// in place and packed).
#[test]
fn rows_read_in_place_and_partial_blocks() {
    let shapes = [
        (70, 64, 40, 0),
        (64, 128, 33, 8),
        (32, 32, 32, 0),
        (320, 512, 96, 0),
        (33, 96, 64, 5),
        (40, 128, 520, 3),
        (40, 300, 500, 0),
    ];
    for (m, k, n, pad) in shapes {
        let (ma, a, oa) = place(m, k, Placement::Sliced { pad, skip: 3 }, m as u64);
        let (mb, b, ob) = place(k, n, Placement::RowMajor, n as u64);
        let pairs = [(oa, ob)];
        let p = Problem {
            m,
            n,
            k,
            a: &a,
            b: &b,
            pairs: &pairs,
        };
        let (exact, sums) = exact_product(&ma, &mb);
        for kernel in kernels() {
            let got: Vec<f64> = bf16_gemm::matmul(kernel, &p)
                .unwrap()
                .iter()
                .map(|x| x.to_f64())
                .collect();
            assert_close(
                &got,
                &exact,
                &sums,
                k,
                &format!("{} {m}×{k}·{k}×{n} pad {pad}", kernel.name()),
            );
        }
    }
}

#[test]
fn isa_names_the_kernel_in_use() {
    let detected = Bf16Kernel::detect();
    assert_eq!(bf16_matmul_isa(), detected.name());
    let inside = bf16_gemm::with_kernel(Bf16Kernel::PortableF32, bf16_matmul_isa).unwrap();
    assert_eq!(inside, "portable-f32");
    // The override ends with the closure.
    assert_eq!(bf16_matmul_isa(), detected.name());
    for kernel in Bf16Kernel::ALL.into_iter().filter(|k| !k.is_available()) {
        let err = bf16_gemm::with_kernel(kernel, || ()).unwrap_err();
        assert!(err.to_string().contains("AVX512_BF16"), "{err}");
    }
    // The fastest available kernel is the one detected.
    let fastest = Bf16Kernel::ALL.into_iter().find(|k| k.is_available());
    assert_eq!(fastest, Some(detected));
}

#[test]
fn operands_outside_their_buffer_are_rejected() {
    let (a, b) = (random_bf16(12, 1), random_bf16(12, 2));
    let pairs = [(
        Operand {
            offset: 1,
            rs: 4,
            cs: 1,
        },
        Operand {
            offset: 0,
            rs: 3,
            cs: 1,
        },
    )];
    let p = Problem {
        m: 3,
        n: 3,
        k: 4,
        a: &a,
        b: &b,
        pairs: &pairs,
    };
    for kernel in kernels() {
        let err = bf16_gemm::matmul(kernel, &p).unwrap_err().to_string();
        assert!(err.contains("lhs") && err.contains("outside"), "{err}");
    }
}
