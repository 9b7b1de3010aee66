//! reduce: against a loop over every element, pooling inside a group, errors.

use super::*;

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
