//! matmul against an f64 reference: random m, n, k (1, odd sizes and 0 included), batch dims that
//! broadcast ([2,1,m,k]·[3,k,n]), 1-D operands (torch.matmul's vector rules), and operands stored
//! transposed, padded or permuted, for f32, f16 and bf16; plus the FLOP count 2·batch·m·n·k.
//!
//! Tolerance: the contract is "accumulate in f32, round once into the dtype". An f32 dot product
//! of k terms (products rounded or fused, sums rounded) is off from the exact value by at most
//! γ_k·Σ|a·b| ≈ k·u32·Σ|a·b| with u32 = 2^-24 (the standard bound; half-type products are even
//! exact in f32). The final rounding into the dtype adds u·|exact| with u = eps/2 of the dtype.
//! So |got − exact| ≤ u·|exact| + (k + 1)·u32·Σ|a·b| + the dtype's smallest subnormal, which is
//! tight enough to catch any intermediate rounding to f16/bf16 (that would cost u·|partial sum|).

use cs336::Tensor;
use cs336::flops::FlopCounter;
use cs336::tensor::BufferElement;
use cs336::tensor::DType;
use half::{bf16, f16};
use proptest::prelude::*;

use super::elementwise::{broadcast, broadcast_read, eps};
use super::reference::{flat, indices, random_values, stored_as};

fn size() -> impl Strategy<Value = usize> {
    prop_oneof![1 => Just(0usize), 3 => Just(1usize), 10 => 2..=17usize, 2 => 18..=70usize]
}

/// Batch shapes for both operands that broadcast together.
fn batches() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    prop::collection::vec(1..=3usize, 0..=2)
        .prop_flat_map(|out| {
            let n = out.len();
            (
                Just(out),
                0..=n,
                0..=n,
                prop::collection::vec(any::<bool>(), n),
                prop::collection::vec(any::<bool>(), n),
            )
        })
        .prop_map(|(out, da, db, oa, ob)| {
            let cut = |drop: usize, ones: &[bool]| {
                out[drop..]
                    .iter()
                    .zip(&ones[drop..])
                    .map(|(&s, &one)| if one { 1 } else { s })
                    .collect()
            };
            (cut(da, &oa), cut(db, &ob))
        })
}

#[derive(Debug, Clone)]
struct Case {
    m: usize,
    n: usize,
    k: usize,
    batch_a: Vec<usize>,
    batch_b: Vec<usize>,
    a_vector: bool,
    b_vector: bool,
    kinds: (u8, u8),
    seed: u64,
}

fn cases() -> impl Strategy<Value = Case> {
    (
        size(),
        size(),
        size(),
        batches(),
        prop::bool::weighted(0.15),
        prop::bool::weighted(0.15),
        (0u8..5, 0u8..5),
        any::<u64>(),
    )
        .prop_map(|(m, n, k, (batch_a, batch_b), a_vector, b_vector, kinds, seed)| Case {
            m: if a_vector { 1 } else { m },
            n: if b_vector { 1 } else { n },
            k,
            batch_a: if a_vector { vec![] } else { batch_a },
            batch_b: if b_vector { vec![] } else { batch_b },
            a_vector,
            b_vector,
            kinds,
            seed,
        })
}

fn run_case<T: BufferElement>(c: &Case) -> Result<(), TestCaseError> {
    let dtype = T::DTYPE;
    let (m, n, k) = (c.m, c.n, c.k);
    let shape_a: Vec<usize> = if c.a_vector {
        vec![k]
    } else {
        [c.batch_a.clone(), vec![m, k]].concat()
    };
    let shape_b: Vec<usize> = if c.b_vector {
        vec![k]
    } else {
        [c.batch_b.clone(), vec![k, n]].concat()
    };
    let mut rng = cs336::rng::Rng::seed(c.seed);
    let va: Vec<T> = random_values(shape_a.iter().product(), 1.0, &mut rng);
    let vb: Vec<T> = random_values(shape_b.iter().product(), 1.0, &mut rng);
    let a = stored_as(&va, &shape_a, c.kinds.0, T::from_f64(f64::NAN));
    let b = stored_as(&vb, &shape_b, c.kinds.1, T::from_f64(f64::NAN));

    let counter = FlopCounter::start();
    let out = a
        .matmul(&b)
        .map_err(|e| TestCaseError::fail(format!("{shape_a:?} @ {shape_b:?}: {e}")))?;
    let flops = counter.finish();

    let batch = broadcast(&c.batch_a, &c.batch_b);
    let mut want_shape = batch.clone();
    if !c.a_vector {
        want_shape.push(m);
    }
    if !c.b_vector {
        want_shape.push(n);
    }
    prop_assert_eq!(out.shape(), want_shape.as_slice(), "{:?} @ {:?}", shape_a, shape_b);
    prop_assert_eq!(out.dtype(), dtype);
    let batch_count: usize = batch.iter().product();
    prop_assert_eq!(
        flops.by_op.get("matmul").copied().unwrap_or(0),
        (2 * batch_count * m * n * k) as u64
    );

    let got = out.to_vec_f64().unwrap();
    let u = eps(dtype) / 2.0;
    let u32_ = f32::EPSILON as f64 / 2.0;
    let tiny = dtype.float_format().unwrap().info().smallest_subnormal;
    let mut pos = 0;
    for bi in indices(&batch) {
        let (base_a, base_b) = (
            broadcast_read(&c.batch_a, &bi) * m * k,
            broadcast_read(&c.batch_b, &bi) * k * n,
        );
        for i in 0..m {
            for j in 0..n {
                let (mut exact, mut abs) = (0.0f64, 0.0f64);
                for p in 0..k {
                    let x = va[base_a + flat(&[m, k], &[i, p])].to_f64() * vb[base_b + flat(&[k, n], &[p, j])].to_f64();
                    exact += x;
                    abs += x.abs();
                }
                let tol = u * exact.abs() + (k + 1) as f64 * u32_ * abs + tiny;
                prop_assert!(
                    (got[pos] - exact).abs() <= tol,
                    "{} {:?}@{:?} kinds {:?}: out[{:?},{},{}] = {}, want {} ± {}",
                    dtype,
                    shape_a,
                    shape_b,
                    c.kinds,
                    bi,
                    i,
                    j,
                    got[pos],
                    exact,
                    tol
                );
                pos += 1;
            }
        }
    }
    prop_assert_eq!(pos, got.len());
    Ok(())
}

proptest! {
    #![proptest_config(crate::tensor_props::config(256))]

    #[test]
    fn matmul_matches_the_f64_reference(c in cases(), d in 0..3usize) {
        match d {
            0 => run_case::<f32>(&c)?,
            1 => run_case::<f16>(&c)?,
            _ => run_case::<bf16>(&c)?,
        }
    }
}

/// The shapes the brief names, spelled out: [2,1,m,k]·[3,k,n] → [2,3,m,n], and a transposed
/// right operand sliced out of a wider matrix.
#[test]
fn broadcast_batch_and_sliced_transposed_operands() {
    let mut rng = cs336::rng::Rng::seed(7);
    let a = Tensor::randn(&[2, 1, 5, 3], DType::F32, &mut rng).unwrap();
    let wide = Tensor::randn(&[3, 9, 4], DType::F32, &mut rng).unwrap();
    let b = wide.narrow(1, 2, 3).unwrap(); // [3, 3(k), 4(n)], rows 2..5 of each batch
    let counter = FlopCounter::start();
    let out = a.matmul(&b).unwrap();
    assert_eq!(counter.finish().by_op["matmul"], 2 * 6 * 5 * 4 * 3);
    assert_eq!(out.shape(), [2, 3, 5, 4]);
    let (av, bv, ov) = (
        a.to_vec_f64().unwrap(),
        b.to_vec_f64().unwrap(),
        out.to_vec_f64().unwrap(),
    );
    for (x, y, i, j) in itertools_free_product(2, 3, 5, 4) {
        let exact: f64 = (0..3).map(|p| av[x * 15 + i * 3 + p] * bv[y * 12 + p * 4 + j]).sum();
        assert!((ov[((x * 3 + y) * 5 + i) * 4 + j] - exact).abs() < 1e-5);
    }
    // x @ x.T for a sliced x: both operands strided views of one storage.
    let x = Tensor::randn(&[6, 8], DType::F32, &mut rng)
        .unwrap()
        .narrow(1, 1, 5)
        .unwrap();
    let g = x.matmul(&x.t().unwrap()).unwrap();
    let xv = x.to_vec_f64().unwrap();
    for i in 0..6 {
        for j in 0..6 {
            let exact: f64 = (0..5).map(|p| xv[i * 5 + p] * xv[j * 5 + p]).sum();
            assert!((g.get(&[i, j]).unwrap() - exact).abs() < 1e-5);
        }
    }
}

fn itertools_free_product(
    a: usize,
    b: usize,
    c: usize,
    d: usize,
) -> impl Iterator<Item = (usize, usize, usize, usize)> {
    (0..a).flat_map(move |x| (0..b).flat_map(move |y| (0..c).flat_map(move |i| (0..d).map(move |j| (x, y, i, j)))))
}

/// Bug found by the property test: `gemm`'s own f16 kernels round partial sums to f16 (after
/// every term for matrix-vector shapes, after each block of k otherwise), so the error grew with
/// k instead of being one final rounding. Here every partial sum is exact in f32 (multiples of
/// 2^-10 below 2^13) and the exact result, 4, is an f16 number: one rounding at the end gives
/// exactly 4, any rounding of a partial sum to f16 (ulp 2 above 2048) loses the fractions.
#[test]
fn half_precision_matmul_rounds_once() {
    let k = 8192;
    let column: Vec<f64> = (0..k)
        .map(|p| if p < k / 2 { 1.0 + 2f64.powi(-10) } else { -1.0 })
        .collect();
    for dtype in [DType::F16, DType::BF16, DType::F32] {
        let v = Tensor::from_f64_vec(&column, &[k], dtype).unwrap();
        if v.to_vec_f64().unwrap() != column {
            continue; // bf16 cannot hold 1 + 2^-10; the point is f16 and f32
        }
        let ones = Tensor::ones(&[k], dtype).unwrap();
        let b = v
            .unsqueeze(1)
            .unwrap()
            .broadcast_to(&[k, 3])
            .unwrap()
            .contiguous()
            .unwrap();
        let a = ones
            .unsqueeze(0)
            .unwrap()
            .broadcast_to(&[2, k])
            .unwrap()
            .contiguous()
            .unwrap();
        assert_eq!(ones.matmul(&v).unwrap().item().unwrap(), 4.0, "{dtype} dot product");
        assert_eq!(
            a.matmul(&b).unwrap().to_vec_f64().unwrap(),
            vec![4.0; 6],
            "{dtype} 2×k·k×3"
        );
        assert_eq!(
            a.narrow(0, 0, 1).unwrap().matmul(&b).unwrap().to_vec_f64().unwrap(),
            vec![4.0; 3],
            "{dtype} 1×k·k×3"
        );
    }
    // 1 + 2^-11 + 2^-11 = 1 + 2^-10 exactly; rounding after each term ties back to 1 twice.
    let a = Tensor::from_f64_vec(&[1.0, 2f64.powi(-11), 2f64.powi(-11)], &[1, 3], DType::F16).unwrap();
    let b = Tensor::from_f64_vec(&[1.0, 1.0, 1.0], &[3, 1], DType::F16).unwrap();
    assert_eq!(a.matmul(&b).unwrap().item().unwrap(), 1.0 + 2f64.powi(-10));
}

/// Zero strides inside the matrices: every row of `a` is one vector, every column of `b` is one
/// vector (what broadcasting before a matmul produces). gemm must read them, not assume gaps.
#[test]
fn zero_stride_rows_and_columns() {
    let mut rng = cs336::rng::Rng::seed(11);
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        let row = Tensor::randn(&[37], dtype, &mut rng).unwrap();
        let col = Tensor::randn(&[37, 1], dtype, &mut rng).unwrap();
        let a = row.broadcast_to(&[2, 5, 37]).unwrap(); // strides [0, 0, 1]
        let b = col.broadcast_to(&[37, 4]).unwrap(); // strides [1, 0]
        assert_eq!(a.strides(), [0, 0, 1]);
        assert_eq!(b.strides(), [1, 0]);
        let out = a.matmul(&b).unwrap();
        let (r, c) = (row.to_vec_f64().unwrap(), col.to_vec_f64().unwrap());
        let exact: f64 = r.iter().zip(&c).map(|(x, y)| x * y).sum();
        let abs: f64 = r.iter().zip(&c).map(|(x, y)| (x * y).abs()).sum();
        let tol = eps(dtype) / 2.0 * exact.abs() + 38.0 * f32::EPSILON as f64 * abs;
        for v in out.to_vec_f64().unwrap() {
            assert!((v - exact).abs() <= tol, "{dtype}: {v} vs {exact}");
        }
    }
}

/// Products large enough to be split across threads (along the rows when m ≥ n, along the
/// columns otherwise, batched too), with every way of storing the operands, in each dtype.
#[test]
fn products_split_across_threads() {
    let shapes = [
        (300, 70, 40, vec![]),
        (40, 70, 300, vec![]),
        (97, 64, 65, vec![2]),
        (64, 130, 96, vec![]),
    ];
    for (m, k, n, batch) in shapes {
        for kinds in [(0, 0), (1, 1), (2, 3), (4, 2), (3, 1)] {
            for d in 0..3 {
                let c = Case {
                    m,
                    n,
                    k,
                    batch_a: batch.clone(),
                    batch_b: batch.clone(),
                    a_vector: false,
                    b_vector: false,
                    kinds,
                    seed: (m * n + k + d) as u64,
                };
                let result = match d {
                    0 => run_case::<f32>(&c),
                    1 => run_case::<f16>(&c),
                    _ => run_case::<bf16>(&c),
                };
                if let Err(e) = result {
                    panic!("{m}×{k}·{k}×{n} batch {batch:?} kinds {kinds:?}: {e}");
                }
            }
        }
    }
}
