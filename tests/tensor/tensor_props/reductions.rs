//! sum / mean / max / min over random sets of dimensions (negative numbers included, any order),
//! with and without keepdim, on contiguous and strided inputs, against f64 references.
//!
//! Tolerance for sum and mean: a contiguous run adds up to 64 elements in each of 64 f32 lanes,
//! folds the lanes, and adds the blocks in f64, then rounds once into the dtype: off from the exact
//! sum by at most half an ulp of the dtype (u·|s|, u = eps/2) plus about 70 f32 roundings relative
//! to Σ|x| (other layouts add in f64, well inside that), plus half the dtype's smallest subnormal
//! for results that underflow. max and min must be exact.

use std::collections::BTreeMap;

use cs336::flops::FlopCounter;
use cs336::tensor::{BufferElement, ReduceOp};
use cs336::{Error, Tensor};
use half::{bf16, f16};
use proptest::prelude::*;

use super::elementwise::{eps, round_to};
use super::reference::{flat, indices, random_values, stored_as};
use super::views::shape_strategy;

/// A shape and the dimensions to reduce: a random subset, each written as d or d − ndim.
fn shape_and_dims() -> impl Strategy<Value = (Vec<usize>, Vec<isize>)> {
    shape_strategy(4)
        .prop_flat_map(|s| {
            let n = s.len();
            (
                Just(s),
                prop::collection::vec(any::<bool>(), n),
                prop::collection::vec(any::<bool>(), n),
                Just(()).prop_perturb(|_, mut r| r.next_u64()),
            )
        })
        .prop_map(|(s, chosen, negative, order)| {
            let n = s.len() as isize;
            let mut dims: Vec<isize> = (0..n)
                .filter(|&d| chosen[d as usize])
                .map(|d| if negative[d as usize] { d - n } else { d })
                .collect();
            if !dims.is_empty() {
                let k = order as usize % dims.len();
                dims.rotate_left(k);
            }
            (s, dims)
        })
}

/// Per output element: (sum, Σ|x|, count, max, min) of the inputs it reduces.
type Groups = BTreeMap<usize, (f64, f64, usize, f64, f64)>;

/// The reference: groups input elements by their output index.
fn group(shape: &[usize], values: &[f64], reduced: &[usize], out_shape_keep: &[usize]) -> Groups {
    let mut groups = Groups::new();
    for o in indices(out_shape_keep) {
        groups.insert(
            flat(out_shape_keep, &o),
            (0.0, 0.0, 0, f64::NEG_INFINITY, f64::INFINITY),
        );
    }
    for (k, i) in indices(shape).iter().enumerate() {
        let o: Vec<usize> = i
            .iter()
            .enumerate()
            .map(|(d, &x)| if reduced.contains(&d) { 0 } else { x })
            .collect();
        let g = groups.get_mut(&flat(out_shape_keep, &o)).unwrap();
        let x = values[k];
        *g = (g.0 + x, g.1 + x.abs(), g.2 + 1, g.3.max(x), g.4.min(x));
    }
    groups
}

fn float_case<T: BufferElement>(
    op: ReduceOp,
    shape: &[usize],
    dims: &[isize],
    keepdim: bool,
    kind: u8,
    seed: u64,
) -> Result<(), TestCaseError> {
    let dtype = T::DTYPE;
    let mut rng = cs336::rng::Rng::seed(seed);
    let n = shape.len() as isize;
    let v: Vec<T> = random_values(shape.iter().product(), 4.0, &mut rng);
    let values: Vec<f64> = v.iter().map(|x| x.to_f64()).collect();
    let x = stored_as(&v, shape, kind, T::from_f64(f64::NAN));
    let reduced: Vec<usize> = dims
        .iter()
        .map(|&d| if d < 0 { (d + n) as usize } else { d as usize })
        .collect();
    let keep_shape: Vec<usize> = shape
        .iter()
        .enumerate()
        .map(|(d, &s)| if reduced.contains(&d) { 1 } else { s })
        .collect();
    let out_shape: Vec<usize> = if keepdim {
        keep_shape.clone()
    } else {
        shape
            .iter()
            .enumerate()
            .filter(|(d, _)| !reduced.contains(d))
            .map(|(_, &s)| s)
            .collect()
    };
    let run: usize = reduced.iter().map(|&d| shape[d]).product();

    let counter = FlopCounter::start();
    let result = x.reduce(op, dims, keepdim);
    let flops = counter.finish();
    if run == 0 && matches!(op, ReduceOp::Max | ReduceOp::Min) {
        prop_assert!(
            matches!(result, Err(Error::InvalidArgument { .. })),
            "{} over an empty dimension must fail, got {:?}",
            op.name(),
            result
        );
        return Ok(());
    }
    let out = result.unwrap();
    prop_assert_eq!(out.shape(), out_shape.as_slice());
    prop_assert_eq!(out.dtype(), dtype);
    prop_assert_eq!(
        flops.by_op.get(op.name()).copied().unwrap_or(0),
        x.numel() as u64,
        "one FLOP per input element"
    );

    let got = out.to_vec_f64().unwrap();
    let fmt = dtype.float_format().unwrap().info();
    let u = eps(dtype) / 2.0;
    for (k, (s, abs, count, max, min)) in group(shape, &values, &reduced, &keep_shape).into_values().enumerate() {
        // A contiguous run adds up to 64 elements in each f32 lane and folds the 64 lanes (six
        // more additions) before the blocks add up in f64: at most 70 f32 roundings on the way
        // (other layouts add in f64, well inside this).
        let accumulation = 2.0 * (count.min(64) + 6) as f64 * f64::from(f32::EPSILON) * abs;
        let (want, tol) = match op {
            ReduceOp::Sum => (s, u * s.abs() + 2.0 * accumulation + fmt.smallest_subnormal),
            ReduceOp::Mean => (
                s / count as f64,
                (u * s.abs() + 2.0 * accumulation) / count as f64 + fmt.smallest_subnormal,
            ),
            ReduceOp::Max => (round_to(dtype, max), 0.0),
            ReduceOp::Min => (round_to(dtype, min), 0.0),
        };
        if count == 0 && op == ReduceOp::Mean {
            prop_assert!(got[k].is_nan(), "mean over nothing is NaN, got {}", got[k]);
        } else {
            prop_assert!(
                (got[k] - want).abs() <= tol,
                "{} {} over {:?} of {:?}: got {}, want {} ± {}",
                dtype,
                op.name(),
                dims,
                shape,
                got[k],
                want,
                tol
            );
        }
    }
    Ok(())
}

fn int_case(
    op: ReduceOp,
    shape: &[usize],
    dims: &[isize],
    keepdim: bool,
    kind: u8,
    seed: u64,
) -> Result<(), TestCaseError> {
    let n = shape.len() as isize;
    let mut s = seed;
    // Large values: sums overflow i32 and wrap.
    let v: Vec<i32> = (0..shape.iter().product::<usize>())
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 32) as i32
        })
        .collect();
    let x = stored_as(&v, shape, kind, 12345);
    let reduced: Vec<usize> = dims
        .iter()
        .map(|&d| if d < 0 { (d + n) as usize } else { d as usize })
        .collect();
    let keep_shape: Vec<usize> = shape
        .iter()
        .enumerate()
        .map(|(d, &s)| if reduced.contains(&d) { 1 } else { s })
        .collect();
    let run: usize = reduced.iter().map(|&d| shape[d]).product();
    let result = x.reduce(op, dims, keepdim);
    match op {
        ReduceOp::Mean => {
            let refused = matches!(result, Err(Error::UnsupportedDType { op: "mean", .. }));
            prop_assert!(refused, "mean of int32 must ask for a float dtype");
            return Ok(());
        }
        ReduceOp::Max | ReduceOp::Min if run == 0 => {
            prop_assert!(result.is_err());
            return Ok(());
        }
        _ => {}
    }
    let got = result.unwrap().to_vec::<i32>().unwrap();
    let mut want: BTreeMap<usize, Vec<i32>> = indices(&keep_shape)
        .iter()
        .map(|o| (flat(&keep_shape, o), Vec::new()))
        .collect();
    for (k, i) in indices(shape).iter().enumerate() {
        let o: Vec<usize> = i
            .iter()
            .enumerate()
            .map(|(d, &x)| if reduced.contains(&d) { 0 } else { x })
            .collect();
        want.get_mut(&flat(&keep_shape, &o)).unwrap().push(v[k]);
    }
    let want: Vec<i32> = want
        .into_values()
        .map(|g| match op {
            ReduceOp::Sum => g.iter().fold(0i32, |a, &b| a.wrapping_add(b)),
            ReduceOp::Max => *g.iter().max().unwrap(),
            _ => *g.iter().min().unwrap(),
        })
        .collect();
    prop_assert_eq!(got, want);
    Ok(())
}

fn ops() -> impl Strategy<Value = ReduceOp> {
    prop::sample::select(vec![ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min])
}

proptest! {
    #![proptest_config(crate::tensor_props::config(256))]

    #[test]
    fn float_reductions_match_the_reference(
        (shape, dims) in shape_and_dims(), op in ops(), keepdim in any::<bool>(), kind in 0u8..5, seed in any::<u64>(), d in 0..3usize,
    ) {
        match d {
            0 => float_case::<f32>(op, &shape, &dims, keepdim, kind, seed)?,
            1 => float_case::<f16>(op, &shape, &dims, keepdim, kind, seed)?,
            _ => float_case::<bf16>(op, &shape, &dims, keepdim, kind, seed)?,
        }
    }

    #[test]
    fn int_reductions_are_exact((shape, dims) in shape_and_dims(), op in ops(), keepdim in any::<bool>(), kind in 0u8..5, seed in any::<u64>()) {
        int_case(op, &shape, &dims, keepdim, kind, seed)?;
    }

    /// The `*_all` forms are the reduction over every dimension, giving a 0-d tensor.
    #[test]
    fn reduce_all_is_every_dimension(shape in shape_strategy(4), kind in 0u8..5, seed in any::<u64>()) {
        reduce_all_case(&shape, kind, seed)?;
    }

}

/// One case of `reduce_all_is_every_dimension`.
fn reduce_all_case(shape: &[usize], kind: u8, seed: u64) -> Result<(), TestCaseError> {
    let mut rng = cs336::rng::Rng::seed(seed);
    let v: Vec<f32> = random_values(shape.iter().product(), 1.0, &mut rng);
    let x = stored_as(&v, shape, kind, f32::NAN);
    let all: Vec<isize> = (0..shape.len() as isize).collect();
    let exact: f64 = v.iter().map(|&a| a as f64).sum();
    let sum = x.sum_all().unwrap();
    prop_assert_eq!(sum.shape(), &[] as &[usize]);
    prop_assert_eq!(sum.item().unwrap(), x.sum(&all, false).unwrap().item().unwrap());
    // The bound `float_reductions_match_the_reference` uses: half an f32 ulp of the sum, and up
    // to 70 f32 roundings of the lanes, relative to Σ|x| (a sum that cancels is much smaller
    // than its terms: [4, 4, 4, 3] drawn with seed 10800831511226554022 missed 1e-6·|sum|).
    let abs: f64 = v.iter().map(|&a| f64::from(a).abs()).sum();
    let accumulation = 2.0 * (v.len().min(64) + 6) as f64 * f64::from(f32::EPSILON) * abs;
    let tol = f64::from(f32::EPSILON) / 2.0 * exact.abs() + 2.0 * accumulation;
    prop_assert!(
        (sum.item().unwrap() - exact).abs() <= tol,
        "{} against {exact} ± {tol}",
        sum.item().unwrap()
    );
    if !v.is_empty() {
        let max = v.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
        prop_assert_eq!(x.max_all().unwrap().item().unwrap(), max);
        let min = v.iter().copied().fold(f32::INFINITY, f32::min) as f64;
        prop_assert_eq!(x.min_all().unwrap().item().unwrap(), min);
    }
    Ok(())
}

/// The case a full test run drew: 192 terms whose sum cancels to far less than their magnitudes.
#[test]
fn a_sum_that_cancels_is_held_to_its_terms_magnitude() {
    reduce_all_case(&[4, 4, 4, 3], 0, 10800831511226554022).expect("within the bound");
}

/// NaN propagates through max and min (as in PyTorch), and a dimension given twice is refused.
#[test]
fn nan_propagates_and_duplicate_dims_are_refused() {
    let x = Tensor::from_f64_vec(&[1.0, f64::NAN, 3.0, 4.0], &[2, 2], cs336::tensor::DType::F32).unwrap();
    let m = x.max(&[1], false).unwrap().to_vec_f64().unwrap();
    assert!(m[0].is_nan() && m[1] == 4.0);
    let m = x.min(&[0], false).unwrap().to_vec_f64().unwrap();
    assert!(m[0] == 1.0 && m[1].is_nan());
    assert!(matches!(
        x.sum(&[1, -1], false),
        Err(Error::InvalidArgument { op: "sum", .. })
    ));
}
