//! einsum / reduce / rearrange and run-time dimension names: results against brute-force
//! references on seeded random tensors, FLOP counts, views vs copies, every error case, and the
//! lecture's einops sections (fresh run and committed traces).

mod common;

use std::collections::BTreeMap;

use common::{flat, for_each_trace, num, val};
use cs336::einops::{ReduceOp, einsum, rearrange, reduce, reduce_with};
use cs336::flops::FlopCounter;
use cs336::rng::Rng;
use cs336::tensor::named::{Dims, NamedTensor};
use cs336::{DType, Error, Result, Tensor};
use proptest::prelude::*;

fn randn(shape: &[usize], seed: u64) -> Tensor {
    Tensor::randn(shape, DType::F32, &mut Rng::seed(seed)).unwrap()
}

fn arange(shape: &[usize]) -> Tensor {
    Tensor::arange(shape.iter().product(), DType::F32)
        .unwrap()
        .view(shape)
        .unwrap()
}

fn values(t: &Tensor) -> Vec<f64> {
    t.to_vec_f64().unwrap()
}

fn assert_close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-4 * (1.0 + w.abs()),
            "element {i}: got {g}, want {w}"
        );
    }
}

/// Brute-force einsum: loops over every combination of every axis. Patterns here use plain
/// names (no `...`), split on whitespace, so the reference shares no code with the parser.
fn naive_einsum(pattern: &str, xs: &[&Tensor]) -> (Vec<f64>, Vec<usize>) {
    let (lhs, rhs) = pattern.split_once("->").unwrap();
    let inputs: Vec<Vec<&str>> = lhs.split(',').map(|s| s.split_whitespace().collect()).collect();
    let out: Vec<&str> = rhs.split_whitespace().collect();
    let mut sizes = BTreeMap::new();
    for (names, x) in inputs.iter().zip(xs) {
        for (d, name) in names.iter().enumerate() {
            sizes.insert(*name, x.shape()[d]);
        }
    }
    let axes: Vec<&str> = sizes.keys().copied().collect();
    let data: Vec<Vec<f64>> = xs.iter().map(|x| values(x)).collect();
    let flat = |names: &[&str], at: &BTreeMap<&str, usize>| names.iter().fold(0, |acc, n| acc * sizes[n] + at[n]);
    let out_shape: Vec<usize> = out.iter().map(|n| sizes[n]).collect();
    let mut result = vec![0.0; out_shape.iter().product()];
    let total: usize = axes.iter().map(|a| sizes[a]).product();
    for mut k in 0..total {
        let mut at = BTreeMap::new();
        for a in axes.iter().rev() {
            at.insert(*a, k % sizes[a]);
            k /= sizes[a];
        }
        let product: f64 = inputs.iter().zip(&data).map(|(names, d)| d[flat(names, &at)]).product();
        result[flat(&out, &at)] += product;
    }
    (result, out_shape)
}

/// Asserts a pattern error whose message contains every word of `words`.
#[track_caller]
fn assert_pattern_error<T: std::fmt::Debug>(r: Result<T>, pattern: &str, words: &[&str]) {
    match r {
        Err(Error::Pattern { pattern: p, msg }) => {
            assert_eq!(p, pattern);
            for w in words {
                assert!(msg.contains(w), "message {msg:?} lacks {w:?}");
            }
        }
        other => panic!("expected a pattern error for {pattern:?}, got {other:?}"),
    }
}

// ---------------------------------------------------------------- einsum

#[test]
fn einsum_lecture_pattern_equals_batched_matmul_and_counts_its_flops() {
    let (x, y) = (randn(&[2, 3, 4], 1), randn(&[2, 5, 4], 2));
    let counter = FlopCounter::start();
    let z = einsum("batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2", &[&x, &y]).unwrap();
    let flops = counter.finish();
    assert_eq!(z.shape(), &[2, 3, 5]);
    assert_close(&values(&z), &values(&x.matmul(&y.t().unwrap()).unwrap()));
    // One batched matmul, nothing else: 2 × batch · seq1 · seq2 · hidden.
    assert_eq!(flops.total(), 2 * 2 * 3 * 5 * 4);
    assert_eq!(flops.by_op.get("matmul"), Some(&(2 * 2 * 3 * 5 * 4)));
    assert_eq!(flops.by_op.len(), 1);
}

#[test]
fn einsum_matches_brute_force_on_many_patterns() {
    let cases: &[(&str, &[&[usize]])] = &[
        ("i j, j k -> i k", &[&[3, 4], &[4, 5]]),
        ("i j, j k -> k i", &[&[3, 4], &[4, 5]]),
        ("b i j, b j k -> b i k", &[&[2, 3, 4], &[2, 4, 5]]),
        ("i, i ->", &[&[7], &[7]]),
        ("i, j -> i j", &[&[3], &[4]]),
        ("i, j -> j i", &[&[3], &[4]]),
        ("a b c, a c -> b", &[&[2, 3, 4], &[2, 4]]),
        ("h b q d, b k h d -> b h q k", &[&[2, 3, 4, 5], &[3, 6, 2, 5]]),
        ("b q d, d -> q b", &[&[2, 3, 4], &[4]]),
        ("a b c, c d, d e -> a b e", &[&[2, 3, 4], &[4, 5], &[5, 6]]),
        ("a b, b c, c d, d a -> a", &[&[2, 3], &[3, 4], &[4, 5], &[5, 2]]),
        ("i j -> j i", &[&[3, 4]]),
        ("i j -> i", &[&[3, 4]]),
        ("i j ->", &[&[3, 4]]),
        ("i j k, k -> i", &[&[2, 3, 4], &[4]]), // j: only in the first operand, summed first
        ("x y, y z -> x", &[&[2, 3], &[3, 4]]), // z: only in the second operand
        ("i, i, i -> i", &[&[5], &[5], &[5]]),
    ];
    for (n, (pattern, shapes)) in cases.iter().enumerate() {
        let xs: Vec<Tensor> = shapes
            .iter()
            .enumerate()
            .map(|(i, s)| randn(s, 100 * n as u64 + i as u64))
            .collect();
        let refs: Vec<&Tensor> = xs.iter().collect();
        let got = einsum(pattern, &refs).unwrap_or_else(|e| panic!("{pattern}: {e}"));
        let (want, shape) = naive_einsum(pattern, &refs);
        assert_eq!(got.shape(), shape.as_slice(), "{pattern}");
        assert_close(&values(&got), &want);
    }
}

#[test]
fn einsum_of_non_contiguous_operands() {
    let x = randn(&[5, 3], 7).t().unwrap(); // 3x5, strides (1, 3)
    let y = randn(&[4, 6, 5], 8)
        .narrow(1, 1, 4)
        .unwrap()
        .permute(&[2, 0, 1])
        .unwrap(); // 5x4x4
    let z = einsum("i j, j a b -> b i a", &[&x, &y]).unwrap();
    let (want, shape) = naive_einsum("i j, j a b -> b i a", &[&x, &y]);
    assert_eq!(z.shape(), shape.as_slice());
    assert_close(&values(&z), &want);
}

#[test]
fn einsum_single_operand_transpose_is_a_view() {
    let x = randn(&[3, 4, 5], 3);
    let y = einsum("a b c -> c a b", &[&x]).unwrap();
    assert!(Tensor::same_storage(&x, &y));
    assert_eq!(values(&y), values(&x.permute(&[2, 0, 1]).unwrap()));
    let counter = FlopCounter::start();
    let s = einsum("a b c -> b", &[&x]).unwrap();
    assert_eq!(counter.finish().total(), 60); // one summation FLOP per input element
    assert_close(&values(&s), &values(&x.sum(&[0, 2], false).unwrap()));
}

#[test]
fn einsum_flops_are_two_times_the_product_of_all_axis_sizes() {
    let cases: &[(&str, &[usize], &[usize], u64)] = &[
        ("i j, j k -> i k", &[6, 7], &[7, 8], 6 * 7 * 8),
        ("b i j, b j k -> b i k", &[3, 6, 7], &[3, 7, 8], 3 * 6 * 7 * 8),
        ("i, j -> i j", &[6], &[7], 6 * 7), // outer product: no contracted axis
        ("i, i ->", &[9], &[9], 9),
        ("a b c d, c d e -> e a b", &[2, 3, 4, 5], &[4, 5, 6], 2 * 3 * 4 * 5 * 6),
        (
            "h b q d, b k h d -> b h q k",
            &[2, 3, 4, 5],
            &[3, 6, 2, 5],
            2 * 3 * 4 * 5 * 6,
        ),
    ];
    for (pattern, sa, sb, product) in cases {
        let (a, b) = (randn(sa, 1), randn(sb, 2));
        let counter = FlopCounter::start();
        einsum(pattern, &[&a, &b]).unwrap();
        let flops = counter.finish();
        assert_eq!(flops.total(), 2 * product, "{pattern}");
        assert_eq!(flops.by_op.get("matmul"), Some(&(2 * product)), "{pattern}");
    }
    // An axis only one operand has is summed first (one FLOP per element), then the rest is a
    // matmul over the remaining axes.
    let (a, b) = (randn(&[2, 3, 4], 1), randn(&[4], 2));
    let counter = FlopCounter::start();
    einsum("i j k, k -> i", &[&a, &b]).unwrap();
    let flops = counter.finish();
    assert_eq!(flops.by_op.get("sum"), Some(&24));
    assert_eq!(flops.by_op.get("matmul"), Some(&(2 * 2 * 4)));
}

#[test]
fn einsum_ellipsis_broadcasts_like_matmul() {
    let cases: &[(&[usize], &[usize])] = &[
        (&[2, 3, 4, 5], &[3, 5, 6]), // the second operand lacks a leading dimension
        (&[2, 1, 4, 5], &[3, 5, 6]), // size 1 stretches
        (&[4, 5], &[5, 6]),          // `...` covers nothing
        (&[2, 3, 4, 5], &[5, 6]),
    ];
    for (sa, sb) in cases {
        let (a, b) = (randn(sa, 11), randn(sb, 12));
        let z = einsum("... i j, ... j k -> ... i k", &[&a, &b]).unwrap();
        let want = a.matmul(&b).unwrap();
        assert_eq!(z.shape(), want.shape(), "{sa:?} {sb:?}");
        assert_close(&values(&z), &values(&want));
    }
    // `...` in one operand only, anywhere in the pattern.
    let (x, w) = (randn(&[2, 3, 4], 13), randn(&[4, 5], 14));
    let z = einsum("... hidden1, hidden1 hidden2 -> hidden2 ...", &[&x, &w]).unwrap();
    assert_eq!(z.shape(), &[5, 2, 3]);
    assert_close(
        &values(&z),
        &values(&x.matmul(&w).unwrap().permute(&[2, 0, 1]).unwrap()),
    );
    // The lecture's two spellings agree.
    let y = randn(&[2, 3, 4], 15);
    let named = einsum("batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2", &[&x, &y]).unwrap();
    let dots = einsum("... seq1 hidden, ... seq2 hidden -> ... seq1 seq2", &[&x, &y]).unwrap();
    assert_eq!(values(&named), values(&dots));
}

#[test]
fn einsum_errors() {
    let (x, y) = (randn(&[2, 3, 4], 1), randn(&[2, 3, 4], 2));
    let p = "a b c, a d c -> a b d";
    assert_pattern_error(einsum(p, &[&x]), p, &["2 input(s)", "1 tensor(s)"]);
    assert_pattern_error(einsum(p, &[&x, &y, &y]), p, &["2 input(s)", "3 tensor(s)"]);
    let p = "a b c, a d c -> a b e";
    assert_pattern_error(
        einsum(p, &[&x, &y]),
        p,
        &["axis `e`", "output", "does not appear in any input"],
    );
    let p = "a a c -> a";
    assert_pattern_error(einsum(p, &[&x]), p, &["axis `a` appears twice"]);
    let p = "a (b c) -> a";
    assert_pattern_error(einsum(p, &[&x]), p, &["einsum does not take parenthesised groups"]);
    let p = "a b -> a";
    assert_pattern_error(
        einsum(p, &[&x]),
        p,
        &["needs 2 dimension(s)", "[2, 3, 4]", "3 dimension(s)"],
    );
    let p = "... a b c d -> ... a";
    assert_pattern_error(einsum(p, &[&x]), p, &["needs at least 4 dimension(s)", "[2, 3, 4]"]);
    let z = randn(&[2, 3, 5], 3);
    let p = "a b c, a d c -> a b d";
    assert_pattern_error(
        einsum(p, &[&x, &z]),
        p,
        &["axis `c` has size 4 in input 1", "size 5 in input 2", "[2, 3, 5]"],
    );
    let p = "a b c -> ... a";
    assert_pattern_error(einsum(p, &[&x]), p, &["`...` appears in the output but in no input"]);
    let p = "... c -> c";
    assert_pattern_error(
        einsum(p, &[&x]),
        p,
        &["`...` appears in an input but not in the output"],
    );
    let w = randn(&[5, 4, 6], 4);
    let p = "... i j, ... j k -> ... i k";
    assert_pattern_error(
        einsum(p, &[&x, &w]),
        p,
        &["`...` dimensions do not broadcast", "[2]", "[5]"],
    );
    let p = "a b c, a d c";
    assert_pattern_error(einsum(p, &[&x, &y]), p, &["no `->`"]);
    let p = "a b c -> a -> b";
    assert_pattern_error(einsum(p, &[&x]), p, &["`->` appears 2 times"]);
    let h = x.to_dtype(DType::F16).unwrap();
    match einsum("a b c, a d c -> a b d", &[&x, &h]) {
        Err(Error::DTypeMismatch {
            op: "einsum",
            lhs: "float32",
            rhs: "float16",
        }) => {}
        other => panic!("expected a dtype mismatch, got {other:?}"),
    }
}

// ---------------------------------------------------------------- rearrange

#[test]
fn rearrange_split_is_a_view_and_merge_round_trips() {
    let x = randn(&[2, 3, 8], 21);
    let split = rearrange(&x, "... (heads hidden1) -> ... heads hidden1", &[("heads", 2)]).unwrap();
    assert_eq!(split.shape(), &[2, 3, 2, 4]);
    assert!(Tensor::same_storage(&x, &split));
    assert_eq!(values(&split), values(&x));
    // heads=2 means the first 4 features are head 0.
    assert_eq!(split.get(&[1, 2, 1, 3]).unwrap(), x.get(&[1, 2, 7]).unwrap());
    let merged = rearrange(&split, "... heads hidden1 -> ... (heads hidden1)", &[]).unwrap();
    assert_eq!(merged.shape(), x.shape());
    assert!(Tensor::same_storage(&x, &merged));
    assert_eq!(values(&merged), values(&x));
    // The other axis given instead: inferred heads.
    let split2 = rearrange(&x, "b s (heads hidden1) -> b s heads hidden1", &[("hidden1", 4)]).unwrap();
    assert_eq!(values(&split2), values(&split));
    assert_eq!(split2.shape(), split.shape());
}

#[test]
fn rearrange_permutes_and_regroups_like_index_arithmetic() {
    let x = arange(&[2, 12]);
    // b (h d) -> b d h with h = 3, d = 4: y[b][d][h] = x[b][h*4 + d].
    let y = rearrange(&x, "b (h d) -> b d h", &[("h", 3)]).unwrap();
    assert_eq!(y.shape(), &[2, 4, 3]);
    for (b, d, h) in itertools(2, 4, 3) {
        assert_eq!(y.get(&[b, d, h]).unwrap(), x.get(&[b, h * 4 + d]).unwrap());
    }
    // (a b) (c d) -> (a c) (b d) with a = 2, c = 3 (b = 3, d = 4 inferred): a block transpose.
    let x = randn(&[6, 12], 22);
    let y = rearrange(&x, "(a b) (c d) -> (a c) (b d)", &[("a", 2), ("c", 3)]).unwrap();
    assert_eq!(y.shape(), &[6, 12]);
    for (a, b, c) in itertools(2, 3, 3) {
        for d in 0..4 {
            assert_eq!(
                y.get(&[a * 3 + c, b * 4 + d]).unwrap(),
                x.get(&[a * 3 + b, c * 4 + d]).unwrap()
            );
        }
    }
    // A plain permutation is `permute` (a view).
    let x = randn(&[2, 3, 4], 23);
    let y = rearrange(&x, "a b c -> c a b", &[]).unwrap();
    assert!(Tensor::same_storage(&x, &y));
    assert_eq!(values(&y), values(&x.permute(&[2, 0, 1]).unwrap()));
    // Merging axes that are still neighbours in memory, inside a permuted (non-contiguous)
    // tensor, is a view too.
    let y = rearrange(&x, "a b c -> c (a b)", &[]).unwrap();
    assert!(!x.permute(&[2, 0, 1]).unwrap().is_contiguous());
    assert!(Tensor::same_storage(&x, &y));
    assert_eq!(
        values(&y),
        values(
            &x.permute(&[2, 0, 1])
                .unwrap()
                .contiguous()
                .unwrap()
                .view(&[4, 6])
                .unwrap()
        )
    );
    // Merging axes that are no longer neighbours in memory needs a copy; values still right.
    let y = rearrange(&x, "a b c -> (c a) b", &[]).unwrap();
    assert!(!Tensor::same_storage(&x, &y));
    assert_eq!(
        values(&y),
        values(
            &x.permute(&[2, 0, 1])
                .unwrap()
                .contiguous()
                .unwrap()
                .view(&[8, 3])
                .unwrap()
        )
    );
}

fn itertools(n0: usize, n1: usize, n2: usize) -> impl Iterator<Item = (usize, usize, usize)> {
    (0..n0).flat_map(move |i| (0..n1).flat_map(move |j| (0..n2).map(move |k| (i, j, k))))
}

#[test]
fn rearrange_unit_axes_identity_and_non_contiguous_input() {
    let x = randn(&[3, 4], 24);
    let y = rearrange(&x, "a b -> a () b", &[]).unwrap();
    assert_eq!(y.shape(), &[3, 1, 4]);
    let z = rearrange(&y, "a () b -> a b", &[]).unwrap();
    assert_eq!(values(&z), values(&x));
    let same = rearrange(&x, "... -> ...", &[]).unwrap();
    assert!(Tensor::same_storage(&x, &same));
    assert_eq!(same.shape(), x.shape());
    // A transposed input splits without copying.
    let t = randn(&[4, 6], 25).t().unwrap(); // 6x4
    let s = rearrange(&t, "(g r) c -> g r c", &[("g", 2)]).unwrap();
    assert!(Tensor::same_storage(&t, &s));
    assert_eq!(values(&s), values(&t));
    // Scalars: nothing to name.
    let s = Tensor::full(&[], 2.5, DType::F32).unwrap();
    assert_eq!(values(&rearrange(&s, " -> ", &[]).unwrap()), vec![2.5]);
    assert_eq!(rearrange(&s, " -> () ()", &[]).unwrap().shape(), &[1, 1]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Splitting the last dimension, permuting, and undoing both gives the input back, for any
    /// sizes and any starting view (contiguous or transposed).
    #[test]
    fn rearrange_round_trip(a in 1usize..4, b in 1usize..4, h in 1usize..4, d in 1usize..5, transposed: bool, seed: u64) {
        let base = randn(&[a, b, h * d], seed);
        let x = if transposed {
            randn(&[h * d, b, a], seed).permute(&[2, 1, 0]).unwrap()
        } else {
            base
        };
        let y = rearrange(&x, "a b (h d) -> d h b a", &[("h", h)]).unwrap();
        prop_assert_eq!(y.shape(), &[d, h, b, a]);
        let back = rearrange(&y, "d h b a -> a b (h d)", &[]).unwrap();
        prop_assert_eq!(back.shape(), x.shape());
        prop_assert_eq!(values(&back), values(&x));
        // Every element: y[l, k, j, i] = x[i, j, k·d + l].
        let mut seen = 0;
        for (i, j, k) in itertools(a, b, h) {
            for l in 0..d {
                prop_assert_eq!(y.get(&[l, k, j, i]).unwrap(), x.get(&[i, j, k * d + l]).unwrap());
                seen += 1;
            }
        }
        prop_assert_eq!(seen, x.numel());
    }

    /// einsum of two random matrices against the brute-force reference for random sizes.
    #[test]
    fn einsum_random_sizes(b in 1usize..3, i in 1usize..5, j in 1usize..5, k in 1usize..5, seed: u64) {
        let x = randn(&[b, i, j], seed);
        let y = randn(&[j, b, k], seed.wrapping_add(1));
        let p = "b i j, j b k -> k b i";
        let got = einsum(p, &[&x, &y]).unwrap();
        let (want, shape) = naive_einsum(p, &[&x, &y]);
        prop_assert_eq!(got.shape(), shape.as_slice());
        assert_close(&values(&got), &want);
    }
}

#[test]
fn rearrange_errors() {
    let x = randn(&[2, 3, 8], 1);
    let p = "... (heads hidden1) -> ... heads hidden2";
    assert_pattern_error(
        rearrange(&x, p, &[("heads", 2)]),
        p,
        &["axis `hidden2` in the output does not appear in the input"],
    );
    let p = "a b c -> a b";
    assert_pattern_error(
        rearrange(&x, p, &[]),
        p,
        &["axis `c` is missing from the output", "use reduce"],
    );
    let p = "... c -> c";
    assert_pattern_error(rearrange(&x, p, &[]), p, &["`...` is missing from the output"]);
    let p = "a b c -> ... a b c";
    assert_pattern_error(
        rearrange(&x, p, &[]),
        p,
        &["`...` appears in the output but not in the input"],
    );
    let p = "... (heads hidden1) -> ... heads hidden1";
    assert_pattern_error(
        rearrange(&x, p, &[("heads", 3)]),
        p,
        &["wrong split", "size 8", "not divisible by 3", "heads=3", "[2, 3, 8]"],
    );
    assert_pattern_error(
        rearrange(&x, p, &[("heads", 2), ("hidden1", 5)]),
        p,
        &["wrong split", "heads=2, hidden1=5", "has size 10", "size 8"],
    );
    assert_pattern_error(
        rearrange(&x, p, &[]),
        p,
        &["cannot infer the sizes of `heads` and `hidden1`", "size 8"],
    );
    assert_pattern_error(rearrange(&x, p, &[("heads", 0)]), p, &["cannot infer `hidden1`"]);
    assert_pattern_error(
        rearrange(&x, p, &[("heads", usize::MAX), ("hidden1", 2)]),
        p,
        &["multiply to more than"],
    );
    assert_pattern_error(
        rearrange(&x, p, &[("heads", 2), ("heads", 2)]),
        p,
        &["axis `heads` is given twice"],
    );
    assert_pattern_error(
        rearrange(&x, p, &[("heads", 2), ("tails", 2)]),
        p,
        &["axis `tails`", "not in the pattern"],
    );
    let p = "a b c -> c b a";
    assert_pattern_error(
        rearrange(&x, p, &[("a", 5)]),
        p,
        &["axis `a` is given size 5", "dimension 0", "has size 2"],
    );
    let p = "batch (heads hidden1) -> batch heads hidden1";
    assert_pattern_error(
        rearrange(&x, p, &[("heads", 2)]),
        p,
        &["needs 2 dimension(s)", "[2, 3, 8]", "3 dimension(s)"],
    );
    let p = "a b c d ... -> a b c d ...";
    assert_pattern_error(rearrange(&x, p, &[]), p, &["needs at least 4 dimension(s)"]);
    let p = "a b, c -> a b c";
    assert_pattern_error(rearrange(&x, p, &[]), p, &["rearrange takes one tensor", "2 inputs"]);
    let p = "a a c -> a c";
    assert_pattern_error(rearrange(&x, p, &[]), p, &["axis `a` appears twice"]);
    let p = "a (b c -> a b c";
    assert_pattern_error(rearrange(&x, p, &[]), p, &["never closed"]);
}

// ---------------------------------------------------------------- reduce

/// Reduces a [2, 3, 4] tensor by `op` over every axis not in `keep`, the output's axes being
/// `keep` in that order: a plain loop over every input element, sharing no code with the library.
fn loop_reduce(x: &Tensor, keep: &[usize], op: ReduceOp) -> (Vec<usize>, Vec<f64>) {
    let shape = [2usize, 3, 4];
    assert_eq!(x.shape(), &shape);
    let v = values(x);
    let out_shape: Vec<usize> = keep.iter().map(|&d| shape[d]).collect();
    let mut groups: Vec<Vec<f64>> = vec![Vec::new(); out_shape.iter().product()];
    for i in 0..2 {
        for j in 0..3 {
            for k in 0..4 {
                let at = [i, j, k];
                let slot = keep.iter().fold(0, |acc, &d| acc * shape[d] + at[d]);
                groups[slot].push(v[(i * 3 + j) * 4 + k]);
            }
        }
    }
    let reduced = groups
        .iter()
        .map(|g| match op {
            ReduceOp::Sum => g.iter().sum(),
            ReduceOp::Mean => g.iter().sum::<f64>() / g.len() as f64,
            ReduceOp::Max => g.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
            ReduceOp::Min => g.iter().cloned().fold(f64::INFINITY, f64::min),
        })
        .collect();
    (out_shape, reduced)
}

#[test]
fn reduce_matches_a_loop_over_every_element() {
    let x = randn(&[2, 3, 4], 31);
    let ops = [ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min];
    // Pattern, and the input axes the output keeps, in its order.
    let patterns: [(&str, &[usize]); 7] = [
        ("... hidden -> ...", &[0, 1]),
        ("b s h -> b s", &[0, 1]),
        ("batch seq hidden -> hidden", &[2]),
        // Reduce, then the kept axes in a new order.
        ("batch seq hidden -> hidden batch", &[2, 0]),
        // `...` reduced too when the output leaves it out.
        ("... hidden -> hidden", &[2]),
        ("a b c -> c b a", &[2, 1, 0]),
        ("a b c ->", &[]),
    ];
    for op in ops {
        for (pattern, keep) in patterns {
            let y = reduce(&x, pattern, op).unwrap();
            let (shape, want) = loop_reduce(&x, keep, op);
            assert_eq!(y.shape(), shape.as_slice(), "{pattern} {op:?}");
            let got = values(&y);
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (g - w).abs() <= 1e-6 * (1.0 + w.abs()),
                    "{pattern} {op:?}: element {i} is {g}, the loop gives {w}"
                );
            }
        }
    }
}

#[test]
fn reduce_inside_a_group_is_pooling() {
    // Max-pool pairs of positions: "b (t pool) c -> b t c" with pool = 2.
    let x = randn(&[2, 6, 3], 32);
    let y = reduce_with(&x, "b (t pool) c -> b t c", ReduceOp::Max, &[("pool", 2)]).unwrap();
    assert_eq!(y.shape(), &[2, 3, 3]);
    for (b, t, c) in itertools(2, 3, 3) {
        let want = x.get(&[b, 2 * t, c]).unwrap().max(x.get(&[b, 2 * t + 1, c]).unwrap());
        assert_eq!(y.get(&[b, t, c]).unwrap(), want);
    }
    // Counts one FLOP per input element, like `Tensor::sum`.
    let counter = FlopCounter::start();
    reduce(&x, "b t c -> b", ReduceOp::Sum).unwrap();
    assert_eq!(counter.finish().total(), 36);
}

#[test]
fn reduce_errors() {
    let x = randn(&[2, 3, 4], 1);
    let p = "... hidden -> ... hidden2";
    assert_pattern_error(
        reduce(&x, p, ReduceOp::Sum),
        p,
        &["axis `hidden2` in the output does not appear in the input"],
    );
    let p = "a b c -> ... a";
    assert_pattern_error(
        reduce(&x, p, ReduceOp::Sum),
        p,
        &["`...` appears in the output but not in the input"],
    );
    let p = "a b -> a";
    assert_pattern_error(reduce(&x, p, ReduceOp::Mean), p, &["needs 2 dimension(s)", "[2, 3, 4]"]);
    let p = "a b (c d) -> a b";
    assert_pattern_error(
        reduce(&x, p, ReduceOp::Max),
        p,
        &["cannot infer the sizes of `c` and `d`"],
    );
    assert_pattern_error(
        reduce_with(&x, p, ReduceOp::Max, &[("c", 3)]),
        p,
        &["wrong split", "not divisible by 3"],
    );
    let p = "a b c, a -> a";
    assert_pattern_error(reduce(&x, p, ReduceOp::Min), p, &["min takes one tensor"]);
}

// ---------------------------------------------------------------- dimension names

#[test]
fn dims_bind_on_first_sight_and_check_afterwards() {
    let mut dims = Dims::new();
    let x = randn(&[2, 3, 4], 1);
    dims.check(&x, "batch seq hidden").unwrap();
    assert_eq!(
        dims.iter().collect::<Vec<_>>(),
        vec![("batch", 2), ("seq", 3), ("hidden", 4)]
    );
    dims.check(&randn(&[2, 5, 4], 2), "batch seq2 hidden").unwrap(); // a new name binds
    assert_eq!(dims.size("seq2").unwrap(), 5);
    dims.check(&randn(&[7, 4], 3), "... hidden").unwrap(); // `...` is not checked
    assert_eq!(dims.get("nothing"), None);

    match dims.check(&randn(&[2, 9, 5], 4), "batch extra hidden") {
        Err(Error::DimSize {
            name,
            expected,
            actual,
            shape,
            names,
            bound_by,
        }) => {
            assert_eq!((name.as_str(), expected, actual), ("hidden", 4, 5));
            assert_eq!(shape, vec![2, 9, 5]);
            assert_eq!(names, "batch extra hidden");
            assert!(
                bound_by.contains("[2, 3, 4]") && bound_by.contains("batch seq hidden"),
                "{bound_by}"
            );
        }
        other => panic!("expected a size error, got {other:?}"),
    }
    // A failed check binds nothing, not even the names before the bad one.
    assert_eq!(dims.get("extra"), None);

    let err = dims.check(&randn(&[2, 3], 5), "batch seq hidden").unwrap_err();
    match &err {
        Error::DimNames { msg } => assert!(msg.contains("names 3 dimension(s)") && msg.contains("[2, 3]"), "{msg}"),
        other => panic!("expected a dimension-count error, got {other:?}"),
    }
    let err = dims.check(&randn(&[3], 5), "... seq hidden").unwrap_err();
    assert!(
        matches!(&err, Error::DimNames { msg } if msg.contains("at least 2")),
        "{err}"
    );
    let err = dims.size("heads").unwrap_err();
    assert!(
        matches!(&err, Error::DimNames { msg } if msg.contains("`heads`")),
        "{err}"
    );
    assert!(matches!(
        dims.check(&x, "batch (seq hidden)"),
        Err(Error::DimNames { .. })
    ));
    assert!(matches!(
        dims.check(&x, "batch batch hidden"),
        Err(Error::Pattern { .. })
    ));
    assert!(matches!(
        dims.check(&x, "batch seq -> hidden"),
        Err(Error::Pattern { .. })
    ));
}

#[test]
fn dims_bind_and_feed_rearrange() {
    let mut dims = Dims::new();
    dims.bind("heads", 2).unwrap();
    dims.bind("heads", 2).unwrap();
    let err = dims.bind("heads", 3).unwrap_err();
    assert!(
        matches!(&err, Error::DimNames { msg } if msg.contains("already 2")),
        "{err}"
    );
    let x = randn(&[3, 8], 1);
    let y = rearrange(&x, "s (heads d) -> heads s d", &dims.axes()).unwrap();
    assert_eq!(y.shape(), &[2, 3, 4]);
}

#[test]
fn named_tensor_sizes_by_name() {
    let x = NamedTensor::new(randn(&[2, 2, 1, 3], 1), "batch seq heads hidden").unwrap();
    assert_eq!(x.size("hidden").unwrap(), 3);
    assert_eq!(x.dim("heads").unwrap(), 2);
    assert_eq!(x.names(), "batch seq heads hidden");
    let err = x.size("tokens").unwrap_err();
    assert!(
        matches!(&err, Error::DimNames { msg } if msg.contains("`tokens`") && msg.contains("[2, 2, 1, 3]")),
        "{err}"
    );
    let mut dims = Dims::new();
    x.check(&mut dims).unwrap();
    assert_eq!(dims.size("seq").unwrap(), 2);

    let y = NamedTensor::new(randn(&[5, 6, 7], 2), "... hidden").unwrap();
    assert_eq!(y.size("hidden").unwrap(), 7);
    assert!(matches!(
        y.check(&mut dims),
        Err(Error::DimSize {
            expected: 3,
            actual: 7,
            ..
        })
    ));
    assert!(matches!(
        NamedTensor::new(randn(&[5, 6], 2), "a b c"),
        Err(Error::DimNames { .. })
    ));
    assert_eq!(y.into_tensor().shape(), &[5, 6, 7]);
}

// ---------------------------------------------------------------- the lecture's sections

fn text<'a>(s: &'a cs336::trace::SectionRecord, name: &str) -> &'a str {
    val(s, name)
        .as_str()
        .unwrap_or_else(|| panic!("`{}.{name}` is not a string", s.id))
}

fn shape(s: &cs336::trace::SectionRecord, name: &str) -> Vec<usize> {
    flat(val(s, name)).into_iter().map(|v| v as usize).collect()
}

#[test]
fn section_einops_motivation() {
    for_each_trace("einops_motivation", |from, _, s| {
        let z = &s.values["z"];
        assert_eq!(z.shape.as_deref(), Some(&[2, 2, 2][..]), "{from}");
        assert!(flat(&z.value).iter().all(|&v| v == 3.0), "{from}");
    });
}

#[test]
fn section_jaxtyping_basics() {
    for_each_trace("jaxtyping_basics", |from, _, s| {
        assert_eq!(
            val(s, "dims"),
            &serde_json::json!({"batch": 2, "seq": 2, "heads": 1, "hidden": 3}),
            "{from}"
        );
        let m = text(s, "mismatch_error");
        assert!(
            m.contains("`hidden`")
                && m.contains("expected size 3")
                && m.contains("has size 4")
                && m.contains("[2, 2, 1, 4]"),
            "{from}: {m}"
        );
        assert!(text(s, "ndim_error").contains("[2, 2, 3]"), "{from}");
        assert_eq!(num(s, "hidden"), 3.0, "{from}");
    });
}

#[test]
fn section_einops_einsum() {
    for_each_trace("einops_einsum", |from, _, s| {
        for name in ["z", "z_ellipsis"] {
            let z = &s.values[name];
            assert_eq!(z.shape.as_deref(), Some(&[2, 3, 3][..]), "{from}: {name}");
            assert!(flat(&z.value).iter().all(|&v| v == 4.0), "{from}: {name}");
        }
        assert_eq!(val(s, "z_equals_matmul"), &serde_json::json!(true), "{from}");
        assert_eq!(num(s, "z_flops"), 2.0 * 2.0 * 3.0 * 3.0 * 4.0, "{from}");
        assert_eq!(num(s, "z_flops"), num(s, "z_flops_formula"), "{from}");
        assert_eq!(shape(s, "z_ellipsis_broadcast_shape"), vec![5, 2, 3, 3], "{from}");
        assert!(text(s, "unknown_axis_error").contains("`seq3`"), "{from}");
        assert!(text(s, "axis_size_error").contains("`hidden` has size 4"), "{from}");
    });
}

#[test]
fn section_einops_reduce() {
    for_each_trace("einops_reduce", |from, _, s| {
        for (name, want) in [("y_mean", 1.0), ("y_sum", 4.0)] {
            let y = &s.values[name];
            assert_eq!(y.shape.as_deref(), Some(&[2, 3][..]), "{from}: {name}");
            assert!(flat(&y.value).iter().all(|&v| v == want), "{from}: {name}");
        }
        assert_eq!(val(s, "y_mean_equals_old_way"), &serde_json::json!(true), "{from}");
    });
}

#[test]
fn section_einops_rearrange() {
    for_each_trace("einops_rearrange", |from, _, s| {
        assert_eq!(shape(s, "x_split_shape"), vec![2, 3, 2, 4], "{from}");
        assert_eq!(val(s, "x_split_same_storage"), &serde_json::json!(true), "{from}");
        let t = &s.values["x_transformed"];
        assert_eq!(t.shape.as_deref(), Some(&[2, 3, 2, 4][..]), "{from}");
        assert!(flat(&t.value).iter().all(|&v| v == 4.0), "{from}");
        assert_eq!(shape(s, "x_merged_shape"), vec![2, 3, 8], "{from}");
        assert!(flat(val(s, "x_merged")).iter().all(|&v| v == 4.0), "{from}");
        assert!(text(s, "wrong_split_error").contains("not divisible by 3"), "{from}");
        assert!(
            text(s, "shape_mismatch_error").contains("needs 2 dimension(s)"),
            "{from}"
        );
        assert!(text(s, "unknown_axis_error").contains("`hidden2`"), "{from}");
    });
}
