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
                let accuracy = op.simplified().accuracy();
                match (want, got) {
                    (Ok(w), Ok(g)) if matches!(accuracy, Accuracy::Approximation) => {
                        let allowance = approximation_allowance(&view, None);
                        assert_agree_within(&format!("{op:?} {dtype} {name}"), &w, &g, &allowance);
                    }
                    (Ok(w), Ok(g)) => assert_agree(&format!("{op:?} {dtype} {name}"), &w, &g, ulps(accuracy)),
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
        let (at, bt, gat, gbt) = (a.t().unwrap(), b.t().unwrap(), ga.t().unwrap(), gb.t().unwrap());
        for &op in BinaryOp::ALL {
            // Each case's CPU operands too: an approximation's allowance is read from them.
            let cases = [
                ("same shape", (&a, &b), (&ga, &gb)),
                ("row broadcast", (&a, &row), (&ga, &grow)),
                ("column broadcast", (&col, &a), (&gcol, &ga)),
                ("transposed", (&at, &bt), (&gat, &gbt)),
            ];
            for (name, (l, r), (gl, gr)) in cases {
                let what = format!("{op:?} {dtype} {name}");
                match (l.binary(r, op), gl.binary(gr, op)) {
                    // A backward's `g·f'(x)`: the gradient on the left, the input on the right.
                    (Ok(w), Ok(g)) if matches!(op.accuracy(), Accuracy::Approximation) => {
                        let grad = l.broadcast_to(w.shape()).expect("broadcast");
                        let input = r.broadcast_to(w.shape()).expect("broadcast");
                        let allowance = approximation_allowance(&input, Some(&grad));
                        assert_agree_within(&what, &w, &g, &allowance);
                    }
                    (Ok(w), Ok(g)) => assert_agree(&what, &w, &g, ulps(op.accuracy())),
                    (Err(_), Err(_)) => {}
                    (w, g) => panic!("{what}: CPU {:?} but GPU {:?}", w.err(), g.err()),
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
        let mx = magnitudes(&x);
        for &op in ReduceOp::ALL {
            // Max and min pick an element: bit for bit. Sums and means are added in other orders
            // and precisions (`sum_allowance`).
            let sums = matches!(op, ReduceOp::Sum | ReduceOp::Mean);
            let agree = |what: &str, w: &Tensor, g: &Tensor, m: Result<Tensor, cs336::Error>| {
                if sums {
                    let m = m.expect("the magnitudes reduce as the values do");
                    assert_agree_within(what, w, g, &sum_allowance(dtype, &m));
                } else {
                    assert_agree(what, w, g, 0.0);
                }
            };
            for dims in [&[0isize][..], &[1], &[2], &[0, 2], &[-1, -2], &[0, 1, 2]] {
                match (x.reduce(op, dims, false), gx.reduce(op, dims, false)) {
                    (Ok(w), Ok(g)) => agree(
                        &format!("{op:?} {dtype} over {dims:?}"),
                        &w,
                        &g,
                        mx.reduce(op, dims, false),
                    ),
                    (Err(_), Err(_)) => {}
                    (w, g) => panic!("{op:?} {dtype} {dims:?}: CPU {:?} but GPU {:?}", w.err(), g.err()),
                }
            }
            // A transposed view, and a long full reduction that the GPU splits across many blocks.
            let permuted = |t: &Tensor| t.permute(&[2, 0, 1]).unwrap().reduce(op, &[1], true);
            if let (Ok(w), Ok(g)) = (permuted(&x), permuted(&gx)) {
                agree(&format!("{op:?} {dtype} permuted keepdim"), &w, &g, permuted(&mx));
            }
        }
    }
    let big = random(1000, 3000, DType::F32, 7);
    let gbig = on(&big, &dev);
    let allowance = sum_allowance(DType::F32, &magnitudes(&big).sum_all().unwrap());
    assert_agree_within(
        "sum of 3M f32",
        &big.sum_all().unwrap(),
        &gbig.sum_all().unwrap(),
        &allowance,
    );
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
