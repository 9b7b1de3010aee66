//! Elementwise ops with broadcasting against f64 references, on contiguous and strided operands.
//!
//! The contract (PyTorch's "opmath" on the CPU): compute in f32, correctly rounded, then round
//! once into the dtype; scalars are converted to f32 first. The reference is therefore
//! `round_dtype(round_f32(exact))`, and for + − × ÷, max, sqrt, neg, abs, square it must match
//! bit for bit: the exact result of these ops on f32 inputs, rounded to f64 and then to f32, is
//! the correctly rounded f32 result, because f64 has at least 2·24 + 2 bits (double rounding is
//! then innocuous). The f32 step matters for f16/bf16 only with f32 scalars: between two f16
//! operands it changes nothing (24 ≥ 2·11 + 2), but `x / 0.3` in f16 can land on an f16 tie in
//! f32 and round differently from the exact quotient; PyTorch does the same.
//! pow and rsqrt go through an f32 library function or two roundings (`Accuracy::MathLibrary`,
//! `TwoRoundings`) and one final rounding: within one ulp of the dtype, i.e. eps·|ref|. GeLU and
//! its backward go through a polynomial erf (`Accuracy::Approximation`): an absolute bound in f32,
//! then the dtype's rounding.
//!
//! The ops are every op declared in `base::op` (`UnaryOp::ALL`, `BinaryOp::ALL`), each held to the
//! exact value and the accuracy its declaration states.

use cs336::Tensor;
use cs336::base::formats::round_to_format;
use cs336::base::{Accuracy, BinaryOp, UnaryOp};
use cs336::tensor::BufferElement;
use cs336::tensor::DType;
use half::{bf16, f16};
use proptest::prelude::*;

use super::reference::{flat, indices, random_values, stored_as};
use super::views::shape_strategy;

/// An output shape and two operand shapes that broadcast to it: each operand drops some leading
/// dimensions and has some others set to 1.
pub fn broadcast_shapes() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    shape_strategy(4)
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

/// numpy's broadcast rule, written out independently of the library.
pub fn broadcast(a: &[usize], b: &[usize]) -> Vec<usize> {
    let n = a.len().max(b.len());
    let at = |s: &[usize], i: usize| if i + s.len() >= n { s[i + s.len() - n] } else { 1 };
    (0..n)
        .map(|i| if at(a, i) == 1 { at(b, i) } else { at(a, i) })
        .collect()
}

/// The element of an operand of shape `s` that output index `i` reads.
pub fn broadcast_read(s: &[usize], i: &[usize]) -> usize {
    let lead = i.len() - s.len();
    let j: Vec<usize> = s
        .iter()
        .enumerate()
        .map(|(d, &n)| if n == 1 { 0 } else { i[lead + d] })
        .collect();
    flat(s, &j)
}

/// What the library's float arithmetic returns for an exact result `x`: rounded to f32, then
/// into the dtype.
fn via_f32(dtype: DType, x: f64) -> f64 {
    round_to(dtype, x as f32 as f64)
}

/// Rounds an f64 into `dtype` (f32 via `as`, which rounds to nearest even).
pub fn round_to(dtype: DType, x: f64) -> f64 {
    match dtype.float_format() {
        Some(fmt) if dtype != DType::F32 => round_to_format(x, fmt),
        _ => x as f32 as f64,
    }
}

pub fn eps(dtype: DType) -> f64 {
    dtype.float_format().map_or(0.0, |f| f.info().eps)
}

fn same(got: f64, want: f64) -> bool {
    got == want || (got.is_nan() && want.is_nan())
}

fn close(dtype: DType, got: f64, want: f64) -> bool {
    let fmt = dtype.float_format().unwrap().info();
    same(got, want) || (got - want).abs() <= eps(dtype) * want.abs() + fmt.smallest_subnormal
}

/// Whether `got` is what an op of this accuracy may return for the rounded reference `want`;
/// `bound` is an `Approximation`'s declared absolute error in f32 at this input.
fn accurate(accuracy: Accuracy, dtype: DType, got: f64, want: f64, bound: f64) -> bool {
    match accuracy {
        Accuracy::CorrectlyRounded => same(got, want),
        Accuracy::TwoRoundings | Accuracy::MathLibrary => close(dtype, got, want),
        // GeLU's polynomials: the declared bound in f32, then one rounding into the dtype.
        Accuracy::Approximation => close(dtype, got, want) || (got - want).abs() <= bound + eps(dtype) * want.abs(),
    }
}

/// `Accuracy::Approximation`'s bound for `f` at `x`: 1e-6·(1 + |x|). A backward `g·f'(x)` scales
/// it by |g|: the inputs are normal with a scale of 3, so |x| passes 4 and |g| 5 now and then.
fn approximation_bound(x: f64) -> f64 {
    1e-6 * (1.0 + x.abs())
}

fn float_case<T: BufferElement>(
    op: BinaryOp,
    sa: &[usize],
    sb: &[usize],
    kinds: (u8, u8),
    seed: u64,
) -> Result<(), TestCaseError> {
    let dtype = T::DTYPE;
    let mut rng = cs336::rng::Rng::seed(seed);
    let (na, nb) = (sa.iter().product(), sb.iter().product());
    let mut va: Vec<T> = random_values(na, 3.0, &mut rng);
    let vb: Vec<T> = random_values(nb, 3.0, &mut rng);
    if op.exact(-1.0, 0.5).is_nan() {
        // An op undefined for negative left operands (a real power, say) gets positive ones.
        va = va.iter().map(|x| T::from_f64(x.to_f64().abs() + 0.25)).collect();
    }
    // NaN in the padding: if a strided read strays into it, the result shows it.
    let filler = T::from_f64(f64::NAN);
    let a = stored_as(&va, sa, kinds.0, filler);
    let b = stored_as(&vb, sb, kinds.1, filler);
    let out = a.binary(&b, op).unwrap();
    let shape = broadcast(sa, sb);
    prop_assert_eq!(out.shape(), shape.as_slice());
    prop_assert_eq!(out.dtype(), dtype);
    prop_assert!(out.is_contiguous());
    let got = out.to_vec_f64().unwrap();
    for (k, i) in indices(&shape).iter().enumerate() {
        let (x, y) = (va[broadcast_read(sa, i)].to_f64(), vb[broadcast_read(sb, i)].to_f64());
        let want = via_f32(dtype, op.exact(x, y));
        // The backwards are `g·f'(x)`: `g` on the left, `x` on the right.
        let ok = accurate(op.accuracy(), dtype, got[k], want, x.abs() * approximation_bound(y));
        prop_assert!(
            ok,
            "{} {}: {} op {} gave {}, want {} (index {:?})",
            dtype,
            op.name(),
            x,
            y,
            got[k],
            want,
            i
        );
    }
    Ok(())
}

/// Splitmix64: full-range integers (the library's Rng gives floats).
fn integers(n: usize, seed: u64, small: bool) -> Vec<i64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            let z = (z ^ (z >> 31)) as i64;
            if small { z % 100 } else { z }
        })
        .collect()
}

fn int_case<T: BufferElement>(
    op: BinaryOp,
    sa: &[usize],
    sb: &[usize],
    kinds: (u8, u8),
    seed: u64,
    wrap: fn(i64) -> T,
) -> Result<(), TestCaseError> {
    let (na, nb): (usize, usize) = (sa.iter().product(), sb.iter().product());
    let small = seed.is_multiple_of(2);
    let va: Vec<T> = integers(na, seed, small).into_iter().map(wrap).collect();
    let vb: Vec<T> = integers(nb, seed ^ 0xabcdef, small).into_iter().map(wrap).collect();
    let a = stored_as(&va, sa, kinds.0, wrap(12345));
    let b = stored_as(&vb, sb, kinds.1, wrap(12345));
    // Two's-complement wrapping in the element's own width; any other op must be refused.
    let reference = |x: i64, y: i64| match op {
        BinaryOp::Add => Some(x.wrapping_add(y)),
        BinaryOp::Sub => Some(x.wrapping_sub(y)),
        BinaryOp::Mul => Some(x.wrapping_mul(y)),
        BinaryOp::ReluBackward => Some(if y > 0 { x } else { 0 }),
        _ => None,
    };
    let result = a.binary(&b, op);
    if reference(1, 1).is_none() {
        prop_assert!(
            matches!(result, Err(cs336::Error::UnsupportedDType { .. })),
            "{} on integers must ask for a float dtype",
            op.name()
        );
        return Ok(());
    }
    let out = result.unwrap();
    let shape = broadcast(sa, sb);
    prop_assert_eq!(out.shape(), shape.as_slice());
    let got: Vec<i64> = out.to_vec::<i64>().unwrap();
    for (k, i) in indices(&shape).iter().enumerate() {
        let (x, y) = (va[broadcast_read(sa, i)].to_i64(), vb[broadcast_read(sb, i)].to_i64());
        let exact = reference(x, y).unwrap_or_default();
        prop_assert_eq!(got[k], wrap(exact).to_i64(), "{} {} {} {}", T::DTYPE, x, op.name(), y);
    }
    Ok(())
}

/// Every declared unary op; scalar ops with scalars of both signs, integral or not, and the
/// exponents `pow` treats exactly (2, 0.5).
fn unary_ops() -> impl Strategy<Value = UnaryOp> {
    let scalars = prop_oneof![
        (-8i32..8).prop_map(|s| s as f64 * 0.3),
        (-8i32..8).prop_map(|s| s as f64 * 0.7),
        prop::sample::select(vec![2.0, 0.5, 3.0, -1.0, 1.5]),
    ];
    (prop::sample::select(UnaryOp::ALL.to_vec()), scalars).prop_map(|(op, s)| op.with_scalar(s))
}

fn unary_float_case<T: BufferElement>(op: UnaryOp, shape: &[usize], kind: u8, seed: u64) -> Result<(), TestCaseError> {
    let dtype = T::DTYPE;
    let mut rng = cs336::rng::Rng::seed(seed);
    let n = shape.iter().product();
    let mut v: Vec<T> = random_values(n, 2.0, &mut rng);
    if op.exact(-1.0).is_nan() && !seed.is_multiple_of(4) {
        // Mostly the real domain; every fourth case keeps negatives (NaN must come out).
        v = v.iter().map(|x| T::from_f64(x.to_f64().abs())).collect();
    }
    let x = stored_as(&v, shape, kind, T::from_f64(f64::NAN));
    let got = x.unary(op).unwrap();
    prop_assert_eq!(got.shape(), shape);
    let got = got.to_vec_f64().unwrap();
    for (k, &xv) in v.iter().enumerate() {
        // Floats run the op's exact form (`pow` with 2 and 0.5 as `square` and `sqrt`).
        let exact = op.simplified();
        let want = via_f32(dtype, exact.exact(xv.to_f64()));
        let ok = accurate(exact.accuracy(), dtype, got[k], want, approximation_bound(xv.to_f64()));
        prop_assert!(ok, "{} {:?}({}) gave {}, want {}", dtype, op, xv.to_f64(), got[k], want);
    }
    Ok(())
}

fn binary_ops() -> impl Strategy<Value = BinaryOp> {
    prop::sample::select(BinaryOp::ALL.to_vec())
}

proptest! {
    #![proptest_config(crate::tensor_props::config(256))]

    #[test]
    fn binary_float_ops_broadcast_like_the_reference(
        (sa, sb) in broadcast_shapes(), op in binary_ops(), kinds in (0u8..5, 0u8..5), seed in any::<u64>(), d in 0..3usize,
    ) {
        match d {
            0 => float_case::<f32>(op, &sa, &sb, kinds, seed)?,
            1 => float_case::<f16>(op, &sa, &sb, kinds, seed)?,
            _ => float_case::<bf16>(op, &sa, &sb, kinds, seed)?,
        }
    }

    #[test]
    fn binary_int_ops_wrap_exactly(
        (sa, sb) in broadcast_shapes(), op in binary_ops(), kinds in (0u8..5, 0u8..5), seed in any::<u64>(), wide in any::<bool>(),
    ) {
        if wide {
            int_case::<i64>(op, &sa, &sb, kinds, seed, |x| x)?;
        } else {
            int_case::<i32>(op, &sa, &sb, kinds, seed, |x| x as i32)?;
        }
    }

    #[test]
    fn unary_float_ops_match_the_reference(
        shape in shape_strategy(4), op in unary_ops(), kind in 0u8..5, seed in any::<u64>(), d in 0..3usize,
    ) {
        match d {
            0 => unary_float_case::<f32>(op, &shape, kind, seed)?,
            1 => unary_float_case::<f16>(op, &shape, kind, seed)?,
            _ => unary_float_case::<bf16>(op, &shape, kind, seed)?,
        }
    }

    #[test]
    fn unary_int_ops_wrap_or_refuse(shape in shape_strategy(3), op in unary_ops(), kind in 0u8..5, seed in any::<u64>()) {
        let n = shape.iter().product();
        let v: Vec<i32> = integers(n, seed, seed % 2 == 0).into_iter().map(|x| x as i32).collect();
        let x = stored_as(&v, &shape, kind, 12345);
        let want: Option<Vec<i32>> = match op {
            UnaryOp::Neg => Some(v.iter().map(|a| a.wrapping_neg()).collect()),
            UnaryOp::Square => Some(v.iter().map(|a| a.wrapping_mul(*a)).collect()),
            UnaryOp::Relu => Some(v.iter().map(|a| (*a).max(0)).collect()),
            UnaryOp::AddScalar(s) if s.fract() == 0.0 => Some(v.iter().map(|a| a.wrapping_add(s as i32)).collect()),
            UnaryOp::MulScalar(s) if s.fract() == 0.0 => Some(v.iter().map(|a| a.wrapping_mul(s as i32)).collect()),
            _ => None,
        };
        match (x.unary(op), want) {
            (Ok(out), Some(want)) => prop_assert_eq!(out.to_vec::<i32>().unwrap(), want),
            (Err(cs336::Error::UnsupportedDType { dtype: "int32", .. }), None) => {}
            (got, want) => return Err(TestCaseError::fail(format!("{op:?} on int32: got {got:?}, expected {want:?}"))),
        }
    }
}

/// Bugs found here: integer arithmetic went through f64, so i64 values above 2^53 were rounded
/// and i32 overflow saturated instead of wrapping (PyTorch wraps); `to_vec::<i64>` and int→int
/// casts rounded the same way.
#[test]
fn integer_arithmetic_is_exact_and_wraps() {
    let big = (1i64 << 53) + 1;
    let a = Tensor::from_vec(vec![big, i64::MAX], &[2]).unwrap();
    assert_eq!(a.to_vec::<i64>().unwrap(), vec![big, i64::MAX]);
    let one = Tensor::from_vec(vec![1i64, 1], &[2]).unwrap();
    assert_eq!(a.add(&one).unwrap().to_vec::<i64>().unwrap(), vec![big + 1, i64::MIN]);
    assert_eq!(a.to_dtype(DType::I32).unwrap().to_vec::<i32>().unwrap(), vec![1, -1]);
    let b = Tensor::from_vec(vec![i32::MAX, i32::MIN], &[2]).unwrap();
    let c = Tensor::from_vec(vec![1i32, 0], &[2]).unwrap();
    assert_eq!(b.add(&c).unwrap().to_vec::<i32>().unwrap(), vec![i32::MIN, i32::MIN]);
    assert_eq!(b.neg().unwrap().to_vec::<i32>().unwrap(), vec![-i32::MAX, i32::MIN]);
    assert_eq!(b.sum_all().unwrap().to_vec::<i32>().unwrap(), vec![-1]);
    let s = Tensor::from_vec(vec![big, big], &[2]).unwrap();
    assert_eq!(s.sum_all().unwrap().to_vec::<i64>().unwrap(), vec![2 * big]);
    assert_eq!(s.max_all().unwrap().to_vec::<i64>().unwrap(), vec![big]);
}

/// The lecture's elementwise examples, exactly.
#[test]
fn lecture_elementwise_values() {
    let x = Tensor::from_data(&[1.0, 4.0, 9.0], DType::F32).unwrap();
    assert_eq!(x.pow_scalar(2.0).unwrap().to_vec_f64().unwrap(), vec![1.0, 16.0, 81.0]);
    assert_eq!(x.sqrt().unwrap().to_vec_f64().unwrap(), vec![1.0, 2.0, 3.0]);
    assert_eq!(
        x.rsqrt().unwrap().to_vec_f64().unwrap(),
        vec![1.0, 0.5, (1.0f32 / 3.0) as f64]
    );
    assert_eq!(x.add(&x).unwrap().to_vec_f64().unwrap(), vec![2.0, 8.0, 18.0]);
    assert_eq!(x.mul_scalar(2.0).unwrap().to_vec_f64().unwrap(), vec![2.0, 8.0, 18.0]);
    assert_eq!(x.div_scalar(0.5).unwrap().to_vec_f64().unwrap(), vec![2.0, 8.0, 18.0]);
    let m = Tensor::ones(&[3, 3], DType::F32).unwrap().triu(0).unwrap();
    assert_eq!(
        m.to_vec_f64().unwrap(),
        vec![1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0]
    );
}
