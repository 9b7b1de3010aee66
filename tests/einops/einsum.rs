//! einsum: the lecture's pattern, brute-force references, views, FLOP counts and errors.

use super::*;

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
