//! Every backward rule against central finite differences, plus the engine's behaviour:
//! gradients only where needed, retained intermediates, accumulation, clearing, and the FLOPs
//! that backward actually runs.

use cs336::autograd::{Var, gradcheck, mse_loss};
use cs336::base::{BinaryOp, UnaryOp};
use cs336::flops::FlopCounter;
use cs336::rng::Rng;
use cs336::tensor::DType;
use cs336::{Result, Tensor};

const STEP: f64 = 1e-2;
const ATOL: f64 = 1e-3;
const RTOL: f64 = 2e-3;

fn randn(shape: &[usize], rng: &mut Rng) -> Tensor {
    Tensor::randn(shape, DType::F32, rng).unwrap()
}

/// Values in [0.5, 2): safe as denominators and as bases of fractional powers.
fn positive(shape: &[usize], rng: &mut Rng) -> Tensor {
    Tensor::rand(shape, DType::F32, rng)
        .unwrap()
        .mul_scalar(1.5)
        .unwrap()
        .add_scalar(0.5)
        .unwrap()
}

fn check(name: &str, inputs: &[(Tensor, bool)], f: impl Fn(&[Var]) -> Result<Var>) {
    let mut rng = Rng::seed(7);
    let report = gradcheck(inputs, f, STEP, ATOL, RTOL, &mut rng).unwrap();
    assert!(report.checked > 0, "{name}: nothing was checked");
    assert!(report.passed(), "{name}: {report:?}");
}

/// `x ↦ value` in the forward pass, differentiated as `x ↦ grad_of`: the value is
/// `grad_of(x) + (value(x) − grad_of(x))` with the bracket a constant (detached), so backward sees
/// only `grad_of` while every evaluation returns `value`. A wrong gradient, made on purpose.
fn wrong_gradient(
    value: impl Fn(&Tensor) -> Result<Tensor>,
    grad_of: impl Fn(&Var) -> Result<Var>,
) -> impl Fn(&[Var]) -> Result<Var> {
    move |v: &[Var]| {
        let tracked = grad_of(&v[0])?;
        let gap = value(v[0].value())?.sub(tracked.value())?;
        tracked.add(&Var::constant(gap))
    }
}

/// The negative control: gradcheck must fail a gradient that is wrong, grossly (2x for 3x²) or
/// slightly (1% off), and say where; the same construction with the right gradient passes.
#[test]
fn gradcheck_fails_a_wrong_gradient() {
    let mut r = Rng::seed(8);
    let x = randn(&[3, 4], &mut r);
    let run = |f: &dyn Fn(&[Var]) -> Result<Var>| {
        gradcheck(&[(x.clone(), true)], f, STEP, ATOL, RTOL, &mut Rng::seed(7)).unwrap()
    };
    // Value x³, gradient of x²: 2x instead of 3x².
    let gross = run(&wrong_gradient(|t| t.pow_scalar(3.0), |v| v.square()));
    assert!(!gross.passed(), "x³ with the gradient of x² passed: {gross:?}");
    assert_eq!(gross.checked, 12);
    assert!(gross.worst.contains("input 0 element"), "{gross:?}");
    // Value 1.01·x², gradient of x²: 1% too small everywhere, five times the relative tolerance.
    let slight = run(&wrong_gradient(|t| t.square()?.mul_scalar(1.01), |v| v.square()));
    assert!(!slight.passed(), "a gradient 1% off passed: {slight:?}");
    // The construction itself is sound: with the matching gradient it passes.
    let right = run(&wrong_gradient(|t| t.pow_scalar(3.0), |v| v.pow_scalar(3.0)));
    assert!(right.passed(), "{right:?}");
}

#[test]
fn matmul_2d() {
    let mut r = Rng::seed(1);
    check(
        "matmul",
        &[(randn(&[3, 4], &mut r), true), (randn(&[4, 5], &mut r), true)],
        |v| v[0].matmul(&v[1]),
    );
}

#[test]
fn matmul_batched_with_broadcast_weight() {
    let mut r = Rng::seed(2);
    // [2, 3, 4, 5] @ [5, 2]: the weight is shared by all 6 batch elements, so its gradient sums them.
    check(
        "batched matmul",
        &[(randn(&[2, 3, 4, 5], &mut r), true), (randn(&[5, 2], &mut r), true)],
        |v| v[0].matmul(&v[1]),
    );
}

#[test]
fn matmul_batched_both_sides_broadcast() {
    let mut r = Rng::seed(3);
    // [2, 1, 3, 4] @ [5, 4, 2] -> [2, 5, 3, 2]: both operands broadcast over a batch dimension.
    check(
        "broadcast matmul",
        &[(randn(&[2, 1, 3, 4], &mut r), true), (randn(&[5, 4, 2], &mut r), true)],
        |v| v[0].matmul(&v[1]),
    );
}

#[test]
fn matmul_with_vectors() {
    let mut r = Rng::seed(4);
    check(
        "vector @ matrix",
        &[(randn(&[4], &mut r), true), (randn(&[4, 3], &mut r), true)],
        |v| v[0].matmul(&v[1]),
    );
    check(
        "matrix @ vector",
        &[(randn(&[3, 4], &mut r), true), (randn(&[4], &mut r), true)],
        |v| v[0].matmul(&v[1]),
    );
    check(
        "vector @ vector",
        &[(randn(&[4], &mut r), true), (randn(&[4], &mut r), true)],
        |v| v[0].matmul(&v[1]),
    );
    check(
        "batched @ vector",
        &[(randn(&[2, 3, 4], &mut r), true), (randn(&[4], &mut r), true)],
        |v| v[0].matmul(&v[1]),
    );
}

#[test]
fn elementwise_binary_with_broadcasting() {
    let mut r = Rng::seed(5);
    let (a, b) = (randn(&[3, 4], &mut r), randn(&[4], &mut r));
    check("add", &[(a.clone(), true), (b.clone(), true)], |v| v[0].add(&v[1]));
    check("sub", &[(a.clone(), true), (b.clone(), true)], |v| v[0].sub(&v[1]));
    check("mul", &[(a.clone(), true), (randn(&[3, 1], &mut r), true)], |v| {
        v[0].mul(&v[1])
    });
    check("div", &[(a, true), (positive(&[3, 1], &mut r), true)], |v| {
        v[0].div(&v[1])
    });
}

#[test]
fn scalar_forms_and_powers() {
    let mut r = Rng::seed(6);
    let a = randn(&[2, 3], &mut r);
    check("add_scalar", &[(a.clone(), true)], |v| v[0].add_scalar(1.5));
    check("sub_scalar", &[(a.clone(), true)], |v| v[0].sub_scalar(1.5));
    check("mul_scalar", &[(a.clone(), true)], |v| v[0].mul_scalar(-3.0));
    check("div_scalar", &[(a.clone(), true)], |v| v[0].div_scalar(4.0));
    check("neg", &[(a.clone(), true)], |v| v[0].neg());
    check("square", &[(a.clone(), true)], |v| v[0].square());
    check("pow 3", &[(a, true)], |v| v[0].pow_scalar(3.0));
    check("pow 1.5", &[(positive(&[2, 3], &mut r), true)], |v| {
        v[0].pow_scalar(1.5)
    });
}

/// Every declared elementwise op's derivative (`UnaryOp::ALL`, `BinaryOp::ALL`), on positive
/// inputs (inside every op's domain), broadcasting the right operand of binary ops. A new op is
/// checked here without a line of this file changing.
#[test]
fn every_declared_derivative() {
    let mut r = Rng::seed(9);
    let (a, b) = (positive(&[3, 4], &mut r), positive(&[4], &mut r));
    for op in UnaryOp::ALL {
        for s in [1.5, -3.0] {
            let op = op.with_scalar(s);
            check(&format!("{op:?}"), &[(a.clone(), true)], |v| v[0].unary(op));
        }
    }
    for &op in BinaryOp::ALL {
        if op.is_backward() {
            // Another op's backward: differentiable in the gradient `a` (a second derivative of
            // GeLU is not declared), checked on its own below.
            check(
                &format!("{} (gradient only)", op.name()),
                &[(a.clone(), true), (b.clone(), false)],
                |v| v[0].binary(&v[1], op),
            );
            continue;
        }
        check(op.name(), &[(a.clone(), true), (b.clone(), true)], |v| {
            v[0].binary(&v[1], op)
        });
        check(
            &format!("{} (left only)", op.name()),
            &[(a.clone(), true), (b.clone(), false)],
            |v| v[0].binary(&v[1], op),
        );
        check(
            &format!("{} (right only)", op.name()),
            &[(a.clone(), false), (b.clone(), true)],
            |v| v[0].binary(&v[1], op),
        );
    }
}

/// The activations on inputs of both signs (the shared check above sees positive ones only), and
/// a backward op's derivative in its input, which only ReLU's declares (0).
#[test]
fn activations_on_both_signs() {
    let mut r = Rng::seed(21);
    let x = randn(&[4, 5], &mut r);
    check("relu", &[(x.clone(), true)], |v| v[0].relu());
    check("gelu", &[(x.clone(), true)], |v| v[0].gelu());
    check("gelu_tanh", &[(x.clone(), true)], |v| v[0].gelu_tanh());
    let g = randn(&[4, 5], &mut r);
    check("relu_backward in x", &[(g.clone(), false), (x.clone(), true)], |v| {
        v[0].binary(&v[1], BinaryOp::ReluBackward)
    });
    let x = Var::leaf(x, true);
    let no_second = (|| {
        Var::constant(g)
            .binary(&x, BinaryOp::GeluBackward)?
            .sum_all()?
            .backward()
    })();
    assert!(
        matches!(&no_second, Err(e) if e.to_string().contains("second derivative")),
        "{no_second:?}"
    );
}

#[test]
fn reductions() {
    let mut r = Rng::seed(8);
    let a = randn(&[2, 3, 4], &mut r);
    check("sum all", &[(a.clone(), true)], |v| v[0].sum_all());
    check("mean all", &[(a.clone(), true)], |v| v[0].mean_all());
    check("sum dim 1", &[(a.clone(), true)], |v| v[0].sum(&[1], false));
    check("sum dims 0,2 keepdim", &[(a.clone(), true)], |v| {
        v[0].sum(&[0, -1], true)
    });
    check("mean dim -1", &[(a.clone(), true)], |v| v[0].mean(&[-1], false));
    check("mean dim 0 keepdim", &[(a, true)], |v| v[0].mean(&[0], true));
}

#[test]
fn views() {
    let mut r = Rng::seed(9);
    let a = randn(&[2, 3, 4], &mut r);
    // Each view is followed by a matmul with a fixed matrix so the gradient's layout matters.
    let w = Var::constant(randn(&[6, 2], &mut r));
    check("reshape", &[(a.clone(), true)], |v| v[0].reshape(&[4, 6])?.matmul(&w));
    let w2 = Var::constant(randn(&[3, 2], &mut r));
    check("transpose", &[(a.clone(), true)], |v| v[0].transpose(1, 2)?.matmul(&w2));
    check("t", &[(randn(&[3, 5], &mut r), true)], |v| v[0].t()?.matmul(&w2));
    check("unsqueeze/squeeze", &[(randn(&[3, 1], &mut r), true)], |v| {
        v[0].squeeze(-1)?.unsqueeze(0)?.mul_scalar(2.0)
    });
}

#[test]
fn mse_loss_both_arguments() {
    let mut r = Rng::seed(10);
    check(
        "mse",
        &[(randn(&[5], &mut r), true), (randn(&[5], &mut r), true)],
        |v| mse_loss(&v[0], &v[1]),
    );
    let bad = mse_loss(
        &Var::constant(randn(&[5], &mut r)),
        &Var::constant(randn(&[5, 1], &mut r)),
    )
    .unwrap_err();
    assert!(bad.to_string().contains("same shape"), "{bad}");
}

#[test]
fn cast_round_trip_keeps_gradient_dtype() {
    let mut r = Rng::seed(11);
    let w = Var::parameter(randn(&[4, 3], &mut r));
    let x = Var::constant(randn(&[2, 4], &mut r).to_dtype(DType::BF16).unwrap());
    let y = x
        .matmul(&w.to_dtype(DType::BF16).unwrap())
        .unwrap()
        .to_dtype(DType::F32)
        .unwrap();
    y.sum_all().unwrap().backward().unwrap();
    let g = w.grad().unwrap();
    assert_eq!(g.dtype(), DType::F32);
    // ∂/∂w of Σ x·w is xᵀ·1: every column equals the column sums of x (computed in bf16).
    let xs = x
        .value()
        .to_dtype(DType::F32)
        .unwrap()
        .sum(&[0], false)
        .unwrap()
        .to_vec_f64()
        .unwrap();
    let gv = g.to_vec_f64().unwrap();
    for i in 0..4 {
        for j in 0..3 {
            assert!(
                (gv[i * 3 + j] - xs[i]).abs() <= 1e-2 * xs[i].abs().max(1.0),
                "{gv:?} vs {xs:?}"
            );
        }
    }
}

/// The lecture's example: x = [1, 2, 3], w = [1, 1, 1], loss = 0.5·(x·w − 5)².
#[test]
fn gradients_basics_example() {
    let x = Var::constant(Tensor::from_data(&[1.0, 2.0, 3.0], DType::F32).unwrap());
    let w = Var::parameter(Tensor::from_data(&[1.0, 1.0, 1.0], DType::F32).unwrap());
    let pred = x.matmul(&w).unwrap();
    let loss = pred
        .sub_scalar(5.0)
        .unwrap()
        .pow_scalar(2.0)
        .unwrap()
        .mul_scalar(0.5)
        .unwrap();
    assert_eq!(loss.value().item().unwrap(), 0.5);
    loss.backward().unwrap();
    assert_eq!(w.grad().unwrap().to_vec_f64().unwrap(), vec![1.0, 2.0, 3.0]);
    assert!(x.grad().is_none());
    assert!(pred.grad().is_none(), "an intermediate keeps no gradient unless asked");
}

#[test]
fn retained_intermediate_gradient_and_accumulation() {
    let x = Var::constant(Tensor::from_data(&[1.0, 2.0, 3.0], DType::F32).unwrap());
    let w = Var::parameter(Tensor::from_data(&[1.0, 1.0, 1.0], DType::F32).unwrap());
    let run = || {
        let pred = x.matmul(&w).unwrap();
        pred.retain_grad();
        let loss = pred.sub_scalar(5.0).unwrap().square().unwrap().mul_scalar(0.5).unwrap();
        loss.backward().unwrap();
        pred
    };
    let pred = run();
    assert_eq!(pred.grad().unwrap().item().unwrap(), 1.0); // ∂loss/∂pred = pred − 5 = 1
    run();
    assert_eq!(
        w.grad().unwrap().to_vec_f64().unwrap(),
        vec![2.0, 4.0, 6.0],
        "gradients accumulate"
    );
    w.zero_grad();
    assert!(w.grad().is_none());
}

#[test]
fn backward_twice_through_one_graph_is_an_error() {
    let w = Var::parameter(Tensor::from_data(&[1.0, 2.0], DType::F32).unwrap());
    let loss = w.square().unwrap().sum_all().unwrap();
    loss.backward().unwrap();
    let err = loss.backward().unwrap_err().to_string();
    assert!(err.contains("already used"), "{err}");
    let not_scalar = w.square().unwrap().backward().unwrap_err().to_string();
    assert!(not_scalar.contains("scalar"), "{not_scalar}");
    let constant = Var::constant(Tensor::ones(&[1], DType::F32).unwrap())
        .backward()
        .unwrap_err()
        .to_string();
    assert!(constant.contains("requires a gradient"), "{constant}");
}

#[test]
fn a_value_used_twice_gets_both_gradients() {
    let mut r = Rng::seed(12);
    check("x * x + x", &[(randn(&[4], &mut r), true)], |v| {
        v[0].mul(&v[0])?.add(&v[0])
    });
}

/// x →w1→ h1 →w2→ h2: backward runs one matmul per parameter gradient plus one per intermediate
/// gradient that a parameter needs, and none for x.
#[test]
fn backward_flops_skip_inputs_that_need_no_gradient() {
    let (b, d, k) = (8usize, 6usize, 4usize);
    let mut r = Rng::seed(13);
    for x_requires_grad in [false, true] {
        let x = Var::leaf(randn(&[b, d], &mut r), x_requires_grad);
        let w1 = Var::parameter(randn(&[d, d], &mut r));
        let w2 = Var::parameter(randn(&[d, k], &mut r));
        let counter = FlopCounter::start();
        let h2 = x.matmul(&w1).unwrap().matmul(&w2).unwrap();
        let loss = h2.square().unwrap().mean_all().unwrap();
        let forward = counter.finish();
        let counter = FlopCounter::start();
        loss.backward().unwrap();
        let backward = counter.finish();
        let forward_formula = (2 * b * d * d + 2 * b * d * k) as u64;
        assert_eq!(forward.by_op["matmul"], forward_formula);
        let skipped = if x_requires_grad { 0 } else { (2 * b * d * d) as u64 };
        assert_eq!(backward.by_op["matmul"], 2 * forward_formula - skipped);
        assert_eq!(
            backward.forward, 0,
            "backward FLOPs are attributed to the backward phase"
        );
        assert!(backward.backward >= backward.by_op["matmul"]);
        assert_eq!(x.grad().is_some(), x_requires_grad);
    }
}

#[test]
fn backward_frees_saved_tensors() {
    let mut r = Rng::seed(14);
    let x = Var::constant(randn(&[4, 3], &mut r));
    let w = Var::parameter(randn(&[3, 2], &mut r));
    let loss = x.matmul(&w).unwrap().square().unwrap().sum_all().unwrap();
    let saved = loss.saved_tensors();
    // matmul saves x (w needs a gradient) but not w (x does not); square saves its input.
    let ops: Vec<&str> = saved.iter().map(|s| s.op).collect();
    assert_eq!(ops, vec!["square", "matmul"]);
    assert_eq!(saved.iter().map(|s| s.tensor.numel()).sum::<usize>(), 4 * 2 + 4 * 3);
    loss.backward().unwrap();
    assert!(loss.saved_tensors().is_empty());
}

#[test]
fn no_grad_records_nothing() {
    let w = Var::parameter(Tensor::ones(&[2], DType::F32).unwrap());
    let _g = cs336::autograd::no_grad();
    let y = w.square().unwrap();
    assert!(!y.requires_grad() && y.is_leaf());
}
