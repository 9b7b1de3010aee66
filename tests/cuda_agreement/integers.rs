//! Integer ops: exact, and wrapping like the CPU.

use super::*;

#[test]
fn integers_are_exact_and_wrap_like_the_cpu() {
    let Some((dev, _g)) = gpu() else { return };
    let big: i64 = (1 << 60) + 3; // not representable in f64
    let i64s = Tensor::from_vec(vec![big, -big, i64::MAX, i64::MIN, 7], &[5]).unwrap();
    let i32s = Tensor::from_vec(vec![i32::MAX, i32::MIN, -1, 65536, 3], &[5]).unwrap();
    for x in [&i64s, &i32s] {
        let g = on(x, &dev);
        for op in unary_ops(&[1.0, 3.0]).into_iter().filter(|op| op.integral()) {
            assert_agree(
                &format!("{op:?} {}", x.dtype()),
                &x.unary(op).unwrap(),
                &g.unary(op).unwrap(),
                0.0,
            );
        }
        for &op in BinaryOp::ALL.iter().filter(|op| op.integral()) {
            assert_agree(
                &format!("{op:?} {}", x.dtype()),
                &x.binary(x, op).unwrap(),
                &g.binary(&g, op).unwrap(),
                0.0,
            );
        }
        for &op in ReduceOp::ALL.iter().filter(|op| op.integral()) {
            assert_agree(
                &format!("{op:?} {}", x.dtype()),
                &x.reduce_all(op).unwrap(),
                &g.reduce_all(op).unwrap(),
                0.0,
            );
        }
        for to in DType::ALL {
            assert_agree(
                &format!("cast {} -> {to}", x.dtype()),
                &x.to_dtype(to).unwrap(),
                &g.to_dtype(to).unwrap(),
                0.0,
            );
        }
    }
    // Exactness, not just agreement: values above 2^53 survive, i32 overflow wraps.
    assert_eq!(
        on(&i64s, &dev).add_scalar(0.0).unwrap().to_vec::<i64>().unwrap()[0],
        big
    );
    assert_eq!(
        on(&i32s, &dev).add_scalar(1.0).unwrap().to_vec::<i32>().unwrap()[0],
        i32::MIN
    );
    assert_eq!(
        on(&i64s, &dev).to_dtype(DType::I32).unwrap().to_vec::<i32>().unwrap()[0],
        big as i32
    );
}
