//! Training the Cruncher on the GPU follows the CPU run.

use super::*;

#[test]
fn training_the_cruncher_on_the_gpu_follows_the_cpu() {
    use cs336::autograd::{Var, mse_loss};
    use cs336::nn::{Cruncher, Module};
    use cs336::optim::{AdaGrad, Optimizer};
    let Some((dev, _g)) = gpu() else { return };
    let (d, layers, b) = (64, 2, 8);
    let cpu_model = Cruncher::new(d, layers, &mut Rng::seed(5)).unwrap();
    let gpu_model = cpu_model.to_device(&dev).unwrap();
    let (mut cpu_opt, mut gpu_opt) = (
        AdaGrad::new(&cpu_model, 0.01).unwrap(),
        AdaGrad::new(&gpu_model, 0.01).unwrap(),
    );
    let mut rng = Rng::seed(6);
    for step in 0..5 {
        let x = Tensor::randn(&[b, d], DType::F32, &mut rng).unwrap();
        let y = Tensor::randn(&[b], DType::F32, &mut rng).unwrap();
        let cpu_loss = mse_loss(
            &cpu_model.forward(&Var::constant(x.clone())).unwrap(),
            &Var::constant(y.clone()),
        )
        .unwrap();
        let gpu_loss = mse_loss(
            &gpu_model.forward(&Var::constant(on(&x, &dev))).unwrap(),
            &Var::constant(on(&y, &dev)),
        )
        .unwrap();
        assert!(gpu_loss.value().device().is_cuda());
        let (lc, lg) = (cpu_loss.value().item().unwrap(), gpu_loss.value().item().unwrap());
        assert!(
            (lc - lg).abs() <= 1e-4 * lc.abs().max(1e-6),
            "step {step}: CPU loss {lc}, GPU loss {lg}"
        );
        cpu_loss.backward().unwrap();
        gpu_loss.backward().unwrap();
        cpu_opt.step().unwrap();
        gpu_opt.step().unwrap();
        cpu_opt.zero_grad();
        gpu_opt.zero_grad();
    }
    for ((name, c), (_, g)) in cpu_model.named_parameters().iter().zip(gpu_model.named_parameters()) {
        assert!(g.value().device().is_cuda(), "{name} stays on the GPU");
        assert_frobenius(&format!("{name} after 5 AdaGrad steps"), c.value(), g.value(), 1e-4);
    }
}
