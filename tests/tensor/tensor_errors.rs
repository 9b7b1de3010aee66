//! Every shape, dtype and argument mistake is a typed error that names the operation and the
//! shapes involved, and its message says so in words. Never a panic, never a hang.

use cs336::rng::Rng;
use cs336::tensor::DType;
use cs336::{Error, Tensor};

fn t(shape: &[usize]) -> Tensor {
    Tensor::zeros(shape, DType::F32).unwrap()
}

/// Asserts a ShapeMismatch from `op` naming both shapes, and that the message shows them.
fn shape_error<T: std::fmt::Debug>(r: cs336::Result<T>, op: &str, lhs: &[usize], rhs: &[usize], says: &str) {
    match r {
        Err(e @ Error::ShapeMismatch { .. }) => {
            let Error::ShapeMismatch {
                op: o, lhs: l, rhs: r, ..
            } = &e
            else {
                unreachable!()
            };
            assert_eq!((*o, l.as_slice(), r.as_slice()), (op, lhs, rhs));
            let msg = e.to_string();
            assert!(msg.starts_with(op), "{msg}");
            assert!(
                msg.contains(&format!("{lhs:?}")) && msg.contains(&format!("{rhs:?}")),
                "{msg}"
            );
            assert!(msg.contains(says), "{msg:?} should say {says:?}");
        }
        other => panic!("{op}: expected ShapeMismatch, got {other:?}"),
    }
}

/// Asserts an InvalidArgument from `op` whose message contains every piece of `says`.
fn invalid<T: std::fmt::Debug>(r: cs336::Result<T>, op: &str, says: &[&str]) {
    match r {
        Err(e @ Error::InvalidArgument { .. }) => {
            let msg = e.to_string();
            assert!(msg.starts_with(&format!("{op}: ")), "{msg}");
            for s in says {
                assert!(msg.contains(s), "{msg:?} should say {s:?}");
            }
        }
        other => panic!("{op}: expected InvalidArgument, got {other:?}"),
    }
}

fn unsupported<T: std::fmt::Debug>(r: cs336::Result<T>, op: &str, dtype: &str) {
    match r {
        Err(e @ Error::UnsupportedDType { .. }) => {
            let msg = e.to_string();
            assert!(msg.starts_with(op) && msg.contains(dtype), "{msg}");
        }
        other => panic!("{op}: expected UnsupportedDType, got {other:?}"),
    }
}

#[test]
fn matmul_shape_errors_name_both_operands() {
    shape_error(
        t(&[2, 3]).matmul(&t(&[4, 5])),
        "matmul",
        &[2, 3],
        &[4, 5],
        "inner dimensions differ (3 vs 4)",
    );
    shape_error(
        t(&[3]).matmul(&t(&[4])),
        "matmul",
        &[3],
        &[4],
        "inner dimensions differ (3 vs 4)",
    );
    shape_error(
        t(&[3]).matmul(&t(&[4, 2])),
        "matmul",
        &[3],
        &[4, 2],
        "inner dimensions differ",
    );
    shape_error(
        t(&[2, 5, 3]).matmul(&t(&[4, 3, 2])),
        "matmul",
        &[2, 5, 3],
        &[4, 3, 2],
        "batch dimensions do not broadcast",
    );
    shape_error(t(&[]).matmul(&t(&[3])), "matmul", &[], &[3], "at least one dimension");
}

#[test]
fn dtype_errors_name_both_dtypes() {
    let a = t(&[2, 2]);
    let h = Tensor::zeros(&[2, 2], DType::F16).unwrap();
    for (r, op) in [
        (a.matmul(&h), "matmul"),
        (a.add(&h), "add"),
        (a.mul(&h), "mul"),
        (a.sub(&h), "sub"),
    ] {
        match r {
            Err(e @ Error::DTypeMismatch { .. }) => {
                let msg = e.to_string();
                assert!(
                    msg.starts_with(op) && msg.contains("float32") && msg.contains("float16"),
                    "{msg}"
                );
            }
            other => panic!("{op}: expected DTypeMismatch, got {other:?}"),
        }
    }
    let i = Tensor::zeros(&[2, 2], DType::I32).unwrap();
    unsupported(i.matmul(&i), "matmul", "int32");
    unsupported(i.sqrt(), "sqrt", "int32");
    unsupported(i.div(&i), "div", "int32");
    unsupported(i.pow_scalar(2.0), "pow", "int32");
    unsupported(i.div_scalar(2.0), "div_scalar", "int32");
    unsupported(i.add_scalar(0.5), "add_scalar", "int32");
    unsupported(i.mean(&[0], false), "mean", "int32");
}

#[test]
fn broadcast_errors() {
    shape_error(
        t(&[2, 3]).add(&t(&[4])),
        "add",
        &[2, 3],
        &[4],
        "cannot broadcast sizes 3 and 4",
    );
    shape_error(
        t(&[2, 3, 1]).sub(&t(&[5, 2])),
        "sub",
        &[2, 3, 1],
        &[5, 2],
        "cannot broadcast sizes 3 and 5",
    );
    shape_error(
        t(&[2, 3]).broadcast_to(&[3, 3]),
        "broadcast_to",
        &[2, 3],
        &[3, 3],
        "dimension 0 has size 2",
    );
    shape_error(
        t(&[2, 3]).broadcast_to(&[3]),
        "broadcast_to",
        &[2, 3],
        &[3],
        "fewer dimensions",
    );
    shape_error(t(&[2, 3]).view(&[4]), "view", &[2, 3], &[4], "number of elements");
    shape_error(
        t(&[2, 3]).t().unwrap().reshape(&[5]),
        "reshape",
        &[3, 2],
        &[5],
        "number of elements",
    );
}

#[test]
fn view_of_a_transpose_names_its_layout() {
    match t(&[2, 3]).t().unwrap().view(&[6]) {
        Err(e @ Error::NotContiguous { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.starts_with("view")
                    && msg.contains("[3, 2]")
                    && msg.contains("[1, 3]")
                    && msg.contains("contiguous()"),
                "{msg}"
            );
        }
        other => panic!("expected NotContiguous, got {other:?}"),
    }
}

#[test]
fn out_of_range_dimensions_and_indices() {
    let x = t(&[2, 3]);
    invalid(x.transpose(2, 0), "transpose", &["dimension 2", "[2, 3]"]);
    invalid(x.transpose(0, -3), "transpose", &["dimension -3", "[2, 3]"]);
    invalid(x.select(2, 0), "select", &["dimension 2", "[2, 3]"]);
    invalid(x.select(1, 3), "select", &["index 3", "size 3", "[2, 3]"]);
    invalid(x.narrow(1, 2, 2), "narrow", &["from 2", "size 3", "[2, 3]"]);
    invalid(x.narrow(1, usize::MAX, 2), "narrow", &["size 3"]); // start + len would wrap around
    invalid(x.narrow(5, 0, 1), "narrow", &["dimension 5"]);
    invalid(x.permute(&[0, 0]), "permute", &["[0, 0]", "[2, 3]"]);
    invalid(x.permute(&[1]), "permute", &["[1]"]);
    invalid(x.permute(&[0, 2]), "permute", &["[0, 2]"]);
    invalid(x.squeeze(0), "squeeze", &["size 2", "not 1"]);
    invalid(x.squeeze(2), "squeeze", &["dimension 2"]);
    invalid(x.unsqueeze(3), "unsqueeze", &["dimension 3"]);
    invalid(x.sum(&[2], false), "sum", &["dimension 2", "[2, 3]"]);
    invalid(x.max(&[-3], true), "max", &["dimension -3"]);
    invalid(x.mean(&[0, -2], false), "mean", &["given twice"]);
    invalid(x.get(&[2, 0]), "index", &["index 2", "size 2"]);
    invalid(x.set(&[0, 3], 1.0), "index", &["index 3", "size 3"]);
    shape_error(x.get(&[0]), "index", &[2, 3], &[0], "wrong number of dimensions");
    invalid(x.dim(2), "dim", &["dimension 2"]);
    invalid(x.item(), "item", &["[2, 3]", "6 elements"]);
    invalid(t(&[3]).triu(0), "triu", &["[3]"]);
    invalid(t(&[2, 0]).max(&[1], false), "max", &["empty"]);
    invalid(t(&[0]).min_all(), "min", &["empty"]);
}

#[test]
fn ragged_or_mismatched_data() {
    invalid(
        Tensor::from_data(&vec![vec![1.0, 2.0], vec![3.0]], DType::F32),
        "tensor",
        &["ragged", "[2]", "[1]"],
    );
    let deep = vec![vec![vec![1.0], vec![2.0]], vec![vec![3.0], vec![4.0, 5.0]]];
    invalid(Tensor::from_data(&deep, DType::F32), "tensor", &["ragged"]);
    invalid(
        Tensor::from_f64_vec(&[1.0, 2.0, 3.0], &[2, 2], DType::F32),
        "tensor",
        &["3 elements", "[2, 2]"],
    );
    invalid(Tensor::from_vec(vec![1i64; 5], &[2, 3]), "tensor", &["5 elements"]);
    // Empty rows are fine and keep their shape.
    let e = Tensor::from_data(&vec![Vec::<f64>::new(), Vec::new()], DType::F32).unwrap();
    assert_eq!(e.shape(), [2, 0]);
}

#[test]
fn trunc_normal_refuses_bad_arguments_instead_of_hanging() {
    let mut rng = Rng::seed(1);
    let bad = [
        (0.0, 0.0, -2.0, 2.0),
        (0.0, -1.0, -2.0, 2.0),
        (0.0, f64::NAN, -2.0, 2.0),
        (0.0, f64::INFINITY, -2.0, 2.0), // used to loop forever
        (f64::NAN, 1.0, -2.0, 2.0),      // used to loop forever
        (f64::INFINITY, 1.0, -2.0, 2.0),
        (0.0, 1.0, 2.0, 2.0),
        (0.0, 1.0, 3.0, -3.0),
        (0.0, 1.0, f64::NAN, 1.0),
        (0.0, 1.0, 10.0, 11.0), // entirely beyond 8σ
    ];
    for (mean, std, a, b) in bad {
        invalid(
            Tensor::trunc_normal(&[4], mean, std, a, b, DType::F32, &mut rng),
            "trunc_normal",
            &[],
        );
    }
    // Inside 8σ but with probability ~1e-12: refused after a bounded number of draws.
    invalid(
        Tensor::trunc_normal(&[4], 0.0, 1.0, 7.0, 8.0, DType::F32, &mut rng),
        "trunc_normal",
        &["less than 0.1%"],
    );
    // A narrow but reasonable interval still works (0.13% of the mass), and respects [a, b].
    let x = Tensor::trunc_normal(&[50], 0.0, 1.0, 3.0, f64::INFINITY, DType::F32, &mut rng).unwrap();
    assert!(x.to_vec_f64().unwrap().iter().all(|&v| v >= 3.0));
    let y = Tensor::trunc_normal(&[1000], 1.0, 2.0, -1.0, 2.0, DType::F32, &mut rng).unwrap();
    assert!(y.to_vec_f64().unwrap().iter().all(|&v| (-1.0..=2.0).contains(&v)));
}

/// A tensor host memory cannot hold is refused before anything is allocated (Rust would abort
/// the process on the failed allocation): made directly, or as the result of an op whose output
/// is far larger than its inputs (a broadcast, an outer product).
#[test]
fn results_too_large_for_host_memory_are_errors_not_aborts() {
    let huge = 1usize << 20; // 2^40 float32s: 4 TiB
    let says_memory = |r: cs336::Result<Tensor>, op: &str| {
        let msg = r.expect_err("4 TiB cannot be allocated").to_string();
        assert!(msg.starts_with(op) && msg.contains("of host memory"), "{msg}");
    };
    says_memory(Tensor::zeros(&[huge, huge], DType::F32), "zeros");
    says_memory(Tensor::ones(&[huge, huge], DType::F32), "tensor");
    says_memory(Tensor::randn(&[huge, huge], DType::F32, &mut Rng::seed(0)), "tensor");
    let column = Tensor::ones(&[huge, 1], DType::F32).expect("4 MiB");
    let row = Tensor::ones(&[1, huge], DType::F32).expect("4 MiB");
    says_memory(column.add(&row), "add");
    says_memory(column.matmul(&row), "matmul");
    says_memory(
        column.broadcast_to(&[huge, huge]).and_then(|t| t.contiguous()),
        "contiguous",
    );
    // A shape whose element count overflows is refused by name, not wrapped around.
    let msg = Tensor::zeros(&[usize::MAX, 2], DType::F32)
        .expect_err("overflows")
        .to_string();
    assert!(msg.contains("more elements than memory can address"), "{msg}");
}

/// The bound holds for the values stored, not the draws: in float32, a draw just inside `b` can
/// round to the float32 just above it (24 million inputs of width one put a weight past 3σ by
/// half a float32 step). Here every draw lies in [a, b] but rounds above `b`, so none may be kept.
#[test]
fn trunc_normal_keeps_its_bounds_after_rounding_to_the_dtype() {
    let mut rng = Rng::seed(2);
    let above = 1.0f32 as f64; // a float32; the one below it is 1 - 2⁻²⁴
    let ulp_below = 2f64.powi(-24);
    // [a, b] lies in the upper half of the gap below 1.0: everything there rounds up to 1.0.
    let (a, b) = (above - 0.45 * ulp_below, above - 0.05 * ulp_below);
    let mean = (a + b) / 2.0;
    let drawn = Tensor::trunc_normal(&[8], mean, 0.1 * ulp_below, a, b, DType::F32, &mut rng);
    match drawn {
        Ok(t) => {
            let stored = t.to_vec_f64().unwrap();
            assert!(
                stored.iter().all(|&v| (a..=b).contains(&v)),
                "{stored:?} past [{a}, {b}]"
            );
        }
        Err(e) => assert!(e.to_string().contains("less than 0.1%"), "{e}"),
    }
}
