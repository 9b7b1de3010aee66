//! Unary, binary (broadcasting) and reduction ops, NaN and infinity, GPU against CPU.

use super::*;

#[test]
fn unary_ops_agree() {
    let Some((dev, _g)) = gpu() else { return };
    // Scalars integral and not, and `pow`'s exact cases (2 and 0.5).
    let ops = unary_ops(&[2.5, 3.0, -3.0, 7.0, 2.0, 0.5, -1.5]);
    for dtype in DType::ALL {
        let x = random(37, 45, dtype, 1);
        for (name, view) in views(&x) {
            let gview = on(&x, &dev);
            let gview = match name {
                "contiguous" => gview,
                "transposed" => gview.t().expect("t"),
                _ => gview
                    .narrow(0, 1, 35)
                    .expect("narrow")
                    .narrow(1, 2, 42)
                    .expect("narrow"),
            };
            for &op in &ops {
                let (want, got) = (view.unary(op), gview.unary(op));
                let ulps = ulps(op.simplified().accuracy());
                match (want, got) {
                    (Ok(w), Ok(g)) => assert_agree(&format!("{op:?} {dtype} {name}"), &w, &g, ulps),
                    (Err(_), Err(_)) => {}
                    (w, g) => panic!("{op:?} {dtype} {name}: CPU {:?} but GPU {:?}", w.err(), g.err()),
                }
            }
        }
    }
}

#[test]
fn binary_ops_agree_with_broadcasting() {
    let Some((dev, _g)) = gpu() else { return };
    for dtype in DType::ALL {
        let a = random(33, 40, dtype, 2);
        let b = random(33, 40, dtype, 3);
        let row = random(1, 40, dtype, 4).squeeze(0).expect("squeeze"); // broadcast along rows
        let col = random(33, 1, dtype, 5); // broadcast along columns
        let (ga, gb, grow, gcol) = (on(&a, &dev), on(&b, &dev), on(&row, &dev), on(&col, &dev));
        for &op in BinaryOp::ALL {
            let ulps = ulps(op.accuracy());
            let pairs = [
                ("same shape", a.binary(&b, op), ga.binary(&gb, op)),
                ("row broadcast", a.binary(&row, op), ga.binary(&grow, op)),
                ("column broadcast", col.binary(&a, op), gcol.binary(&ga, op)),
                (
                    "transposed",
                    a.t().unwrap().binary(&b.t().unwrap(), op),
                    ga.t().unwrap().binary(&gb.t().unwrap(), op),
                ),
            ];
            for (name, want, got) in pairs {
                match (want, got) {
                    (Ok(w), Ok(g)) => assert_agree(&format!("{op:?} {dtype} {name}"), &w, &g, ulps),
                    (Err(_), Err(_)) => {}
                    (w, g) => panic!("{op:?} {dtype} {name}: CPU {:?} but GPU {:?}", w.err(), g.err()),
                }
            }
        }
    }
}

#[test]
fn nan_and_infinity_propagate_the_same_way() {
    let Some((dev, _g)) = gpu() else { return };
    for dtype in FLOATS {
        let x = Tensor::from_data(&[f64::NAN, f64::INFINITY, -1.0, 0.0, -0.0, 1e-30, 65504.0, 1e38], dtype)
            .expect("tensor");
        let gx = on(&x, &dev);
        for &op in UnaryOp::ALL.iter().filter(|op| op.scalar().is_none()) {
            assert_agree(
                &format!("{op:?} {dtype} specials"),
                &x.unary(op).unwrap(),
                &gx.unary(op).unwrap(),
                ulps(op.accuracy()),
            );
        }
        for &op in ReduceOp::ALL {
            assert_agree(
                &format!("{op:?} {dtype} with NaN"),
                &x.reduce_all(op).unwrap(),
                &gx.reduce_all(op).unwrap(),
                0.0,
            );
        }
    }
}

#[test]
fn reductions_agree() {
    let Some((dev, _g)) = gpu() else { return };
    for dtype in DType::ALL {
        let x = Tensor::from_f64_vec(
            &random(1, 6 * 7 * 300, dtype, 6).to_vec_f64().unwrap(),
            &[6, 7, 300],
            dtype,
        )
        .unwrap();
        let gx = on(&x, &dev);
        for &op in ReduceOp::ALL {
            // Sums are accumulated in f64 on both, in different orders: allow one ulp of the dtype.
            let ulps = if matches!(op, ReduceOp::Sum | ReduceOp::Mean) {
                1.0
            } else {
                0.0
            };
            for dims in [&[0isize][..], &[1], &[2], &[0, 2], &[-1, -2], &[0, 1, 2]] {
                match (x.reduce(op, dims, false), gx.reduce(op, dims, false)) {
                    (Ok(w), Ok(g)) => assert_agree(&format!("{op:?} {dtype} over {dims:?}"), &w, &g, ulps),
                    (Err(_), Err(_)) => {}
                    (w, g) => panic!("{op:?} {dtype} {dims:?}: CPU {:?} but GPU {:?}", w.err(), g.err()),
                }
            }
            // A transposed view, and a long full reduction that the GPU splits across many blocks.
            if let (Ok(w), Ok(g)) = (
                x.permute(&[2, 0, 1]).unwrap().reduce(op, &[1], true),
                gx.permute(&[2, 0, 1]).unwrap().reduce(op, &[1], true),
            ) {
                assert_agree(&format!("{op:?} {dtype} permuted keepdim"), &w, &g, ulps);
            }
        }
    }
    let big = random(1000, 3000, DType::F32, 7);
    let gbig = on(&big, &dev);
    assert_agree("sum of 3M f32", &big.sum_all().unwrap(), &gbig.sum_all().unwrap(), 1.0);
    assert_agree("max of 3M f32", &big.max_all().unwrap(), &gbig.max_all().unwrap(), 0.0);
    // An empty reduced dimension: sums are 0, means NaN, max is an error on both.
    let empty = Tensor::zeros(&[3, 0], DType::F32).unwrap();
    let gempty = on(&empty, &dev);
    assert_agree(
        "sum over empty",
        &empty.sum(&[1], false).unwrap(),
        &gempty.sum(&[1], false).unwrap(),
        0.0,
    );
    assert_agree(
        "mean over empty",
        &empty.mean(&[1], false).unwrap(),
        &gempty.mean(&[1], false).unwrap(),
        0.0,
    );
    assert!(gempty.max(&[1], false).is_err());
}
