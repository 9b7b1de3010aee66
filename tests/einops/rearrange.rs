//! rearrange: splits and merges as views, permutations against index arithmetic, errors.

use super::*;

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
