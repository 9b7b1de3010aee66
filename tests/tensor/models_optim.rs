//! Models and optimizers: parameter naming and counting, initialisers, the exact update rules,
//! and the FLOPs of a training step (6·B·P).

use cs336::Tensor;
use cs336::autograd::{Var, mse_loss};
use cs336::flops::FlopCounter;
use cs336::nn::{Cruncher, Init, Module, ParamOptions};
use cs336::optim::{AdaGrad, Optimizer, Sgd};
use cs336::rng::Rng;
use cs336::tensor::DType;

#[test]
fn cruncher_names_shapes_and_counts() {
    let model = Cruncher::new(16, 3, &mut Rng::seed(0)).unwrap();
    let names: Vec<(String, Vec<usize>)> = model
        .named_parameters()
        .into_iter()
        .map(|(n, p)| (n, p.shape().to_vec()))
        .collect();
    assert_eq!(
        names,
        vec![
            ("layers.0.weight".to_string(), vec![16, 16]),
            ("layers.1.weight".into(), vec![16, 16]),
            ("layers.2.weight".into(), vec![16, 16]),
            ("final.weight".into(), vec![16, 1])
        ]
    );
    assert_eq!(model.num_parameters(), 16 * 16 * 3 + 16);
    assert_eq!(model.num_parameters(), Cruncher::expected_num_parameters(16, 3));
    assert_eq!(model.parameter_bytes(), 4 * model.num_parameters());
    let y = model
        .forward(&Var::constant(Tensor::ones(&[5, 16], DType::F32).unwrap()))
        .unwrap();
    assert_eq!(y.shape(), &[5]);
    let bad = model
        .forward(&Var::constant(Tensor::ones(&[5, 8], DType::F32).unwrap()))
        .unwrap_err()
        .to_string();
    assert!(bad.contains("[batch, 16]"), "{bad}");
    // Same seed, same weights; the forward is x @ W0 @ W1 @ W2 @ Wf.
    let again = Cruncher::new(16, 3, &mut Rng::seed(0)).unwrap();
    assert_eq!(
        model.state_dict()[2].1.to_vec_f64().unwrap(),
        again.state_dict()[2].1.to_vec_f64().unwrap()
    );
}

#[test]
fn initialisers_have_their_scale() {
    let mut rng = Rng::seed(1);
    let n = 512;
    let std = |t: &Tensor| {
        let v = t.to_vec_f64().unwrap();
        (v.iter().map(|x| x * x).sum::<f64>() / v.len() as f64).sqrt()
    };
    let xavier = Init::Xavier.sample(&[n, 64], DType::F32, &mut rng).unwrap();
    assert!((std(&xavier) * (n as f64).sqrt() - 1.0).abs() < 0.03);
    let normal = Init::Normal { std: 2.0 }
        .sample(&[n, 64], DType::F32, &mut rng)
        .unwrap();
    assert!((std(&normal) / 2.0 - 1.0).abs() < 0.03);
    let trunc = Init::TruncatedXavier.sample(&[n, 64], DType::F32, &mut rng).unwrap();
    let bound = 3.0 / (n as f64).sqrt();
    assert!(trunc.to_vec_f64().unwrap().iter().all(|x| x.abs() <= bound));
    // Truncation at ±3σ trims the tails: the std drops slightly below σ (by about 1.3 %).
    let ratio = std(&trunc) * (n as f64).sqrt();
    assert!(ratio < 1.0 && ratio > 0.95, "{ratio}");
}

/// One gradient for every parameter of `model`, from a fixed batch.
fn backward_once(model: &Cruncher, b: usize, x_requires_grad: bool, rng: &mut Rng) -> cs336::flops::FlopCount {
    let x = Var::leaf(
        Tensor::randn(&[b, model.dim], DType::F32, rng).unwrap(),
        x_requires_grad,
    );
    let y = Var::constant(Tensor::randn(&[b], DType::F32, rng).unwrap());
    let counter = FlopCounter::start();
    mse_loss(&model.forward(&x).unwrap(), &y).unwrap().backward().unwrap();
    counter.finish()
}

#[test]
fn train_step_flops_are_six_b_p() {
    let (d, layers, b) = (32, 3, 8);
    for x_requires_grad in [true, false] {
        let model = Cruncher::new(d, layers, &mut Rng::seed(2)).unwrap();
        let p = model.num_parameters() as u64;
        let count = backward_once(&model, b, x_requires_grad, &mut Rng::seed(3));
        let matmul = count.by_op["matmul"];
        // Forward 2·B·P; backward 4·B·P, minus the first layer's input gradient when x is data.
        let skipped = if x_requires_grad { 0 } else { 2 * (b * d * d) as u64 };
        assert_eq!(
            matmul,
            6 * b as u64 * p - skipped,
            "x_requires_grad = {x_requires_grad}"
        );
        assert!(count.forward >= 2 * b as u64 * p && count.backward >= 4 * b as u64 * p - skipped);
    }
}

#[test]
fn sgd_step_is_p_minus_lr_g() {
    let model = Cruncher::new(4, 1, &mut Rng::seed(4)).unwrap();
    let mut opt = Sgd::new(&model, 0.25).unwrap();
    backward_once(&model, 3, false, &mut Rng::seed(5));
    let before: Vec<Vec<f32>> = model
        .state_dict()
        .iter()
        .map(|(_, t)| t.to_vec::<f32>().unwrap())
        .collect();
    let grads: Vec<Vec<f32>> = model
        .named_parameters()
        .iter()
        .map(|(_, p)| p.grad().unwrap().to_vec::<f32>().unwrap())
        .collect();
    let counter = FlopCounter::start();
    opt.step().unwrap();
    assert_eq!(counter.finish().by_op["sgd_update"], 2 * model.num_parameters() as u64);
    for (((_, after), b), g) in model.state_dict().iter().zip(&before).zip(&grads) {
        let expected: Vec<f32> = b.iter().zip(g).map(|(b, g)| b - 0.25 * g).collect();
        assert_eq!(after.to_vec::<f32>().unwrap(), expected);
    }
    opt.zero_grad();
    assert!(model.named_parameters().iter().all(|(_, p)| p.grad().is_none()));
    assert_eq!(opt.steps_taken(), 1);
    assert!(opt.state().is_empty());
}

#[test]
fn adagrad_accumulates_squared_gradients() {
    let model = Cruncher::new(4, 1, &mut Rng::seed(6)).unwrap();
    let mut opt = AdaGrad::new(&model, 0.1).unwrap();
    assert_eq!(
        opt.state_bytes(),
        model.parameter_bytes(),
        "one state value per parameter"
    );
    let mut sum_sq = vec![0f32; 4];
    for step in 0..3 {
        backward_once(&model, 3, false, &mut Rng::seed(10 + step));
        let g = model.final_layer.weight.grad().unwrap().to_vec::<f32>().unwrap();
        let p = model.final_layer.weight.value().to_vec::<f32>().unwrap();
        opt.step().unwrap();
        opt.zero_grad();
        for i in 0..4 {
            sum_sq[i] += g[i] * g[i];
        }
        let g2 = opt.g2("final.weight").unwrap().to_vec::<f32>().unwrap();
        assert_eq!(g2, sum_sq, "step {step}");
        let after = model.final_layer.weight.value().to_vec::<f32>().unwrap();
        for i in 0..4 {
            let expected = p[i] - 0.1 * g[i] / (sum_sq[i] + 1e-5).sqrt();
            assert!(
                (after[i] - expected).abs() <= 1e-6 * expected.abs().max(1.0),
                "step {step}: {} vs {expected}",
                after[i]
            );
        }
    }
    assert_eq!(
        opt.state().iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        vec!["layers.0.weight.g2", "final.weight.g2"]
    );
}

#[test]
fn bf16_parameters_lose_updates_below_half_their_spacing() {
    // bf16 has 8 significant bits: around 1.0 the spacing is 2⁻⁷, so an update of 2⁻⁹ is lost.
    let options = ParamOptions {
        dtype: DType::BF16,
        init: Init::Normal { std: 1e-9 },
        ..Default::default()
    };
    let model = Cruncher::with_options(2, 0, &options, &mut Rng::seed(7)).unwrap();
    let w = &model.final_layer.weight;
    w.value()
        .copy_from(&Tensor::ones(&[2, 1], DType::F32).unwrap())
        .unwrap();
    let g = Tensor::from_data(&[[1.0 / 512.0], [1.0 / 64.0]], DType::BF16).unwrap();
    w.value().sgd_update_(&g, 1.0).unwrap();
    assert_eq!(w.value().to_vec_f64().unwrap(), vec![1.0, 1.0 - 1.0 / 64.0]);
}

#[test]
fn optimizer_arguments_are_checked() {
    let model = Cruncher::new(2, 0, &mut Rng::seed(8)).unwrap();
    assert!(Sgd::new(&model, f64::NAN).is_err());
    assert!(AdaGrad::new(&model, -1.0).is_err());
    let w = model.final_layer.weight.value();
    let wrong = Tensor::ones(&[1, 2], DType::F32).unwrap();
    assert!(w.sgd_update_(&wrong, 0.1).unwrap_err().to_string().contains("shape"));
    assert!(
        w.sgd_update_(w, 0.1)
            .unwrap_err()
            .to_string()
            .contains("shares storage")
    );
    assert!(
        w.t().unwrap().copy_from(&wrong).is_ok(),
        "a [1, 2] view of a contiguous [2, 1] is still contiguous"
    );
}

#[test]
fn a_step_with_mixed_precision_reaches_fp32_masters() {
    let model = Cruncher::new(8, 1, &mut Rng::seed(9)).unwrap();
    let x = Var::constant(Tensor::randn(&[4, 8], DType::F32, &mut Rng::seed(10)).unwrap());
    let y = Var::constant(Tensor::randn(&[4], DType::F32, &mut Rng::seed(11)).unwrap());
    let pred = model.forward_in(&x, DType::BF16).unwrap();
    assert_eq!(pred.value().dtype(), DType::F32);
    mse_loss(&pred, &y).unwrap().backward().unwrap();
    for (name, p) in model.named_parameters() {
        assert_eq!(p.grad().unwrap().dtype(), DType::F32, "{name}");
    }
}
