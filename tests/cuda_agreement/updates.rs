//! The optimizer's update kernels against the CPU backend's formulas.

use super::*;

/// The CPU backend's update formulas, element by element in f32 (the dtype's rounding applied
/// where it stores), as src/device/cpu computes them.
fn cpu_adagrad(p: &[f64], s: &[f64], g: &[f64], dtype: DType, lr: f32, eps: f32) -> (Vec<f64>, Vec<f64>) {
    let round = |x: f32| Tensor::from_data(&[x as f64], dtype).unwrap().item().unwrap() as f32;
    let mut out = (Vec::new(), Vec::new());
    for ((&p, &s), &g) in p.iter().zip(s).zip(g) {
        let (p, s, g) = (p as f32, s as f32, g as f32);
        let s = round(s + g * g);
        let p = round(p - lr * g / (s + eps).sqrt());
        out.0.push(p as f64);
        out.1.push(s as f64);
    }
    out
}

#[test]
fn optimizer_updates_match_the_cpu_formulas_in_both_kernels() {
    let Some((dev, _g)) = gpu() else { return };
    for dtype in FLOATS {
        // Lengths with tails that do not fill a 16-byte vector, and an unaligned start (offset 1).
        for (n, offset) in [(1000usize, 0usize), (1003, 0), (1003, 1), (7, 0)] {
            let total = n + offset;
            let p0 = random(1, total, dtype, 20).squeeze(0).unwrap();
            let s0 = random(1, total, dtype, 21).squeeze(0).unwrap().square().unwrap();
            let g0 = random(1, total, dtype, 22).squeeze(0).unwrap();
            let (lr, eps) = (0.01f32, 1e-5f32);
            let (want_p, want_s) = cpu_adagrad(
                &p0.to_vec_f64().unwrap()[offset..],
                &s0.to_vec_f64().unwrap()[offset..],
                &g0.to_vec_f64().unwrap()[offset..],
                dtype,
                lr,
                eps,
            );
            for which in [UpdateKernel::Fast, UpdateKernel::Reference] {
                let (p, s, g) = (on(&p0, &dev), on(&s0, &dev), on(&g0, &dev));
                let (p, s, g) = (
                    p.narrow(0, offset, n).unwrap(),
                    s.narrow(0, offset, n).unwrap(),
                    g.narrow(0, offset, n).unwrap(),
                );
                {
                    let (mut pw, mut sw, gr) = (p.storage().write(), s.storage().write(), g.storage().read());
                    let (Buffer::Cuda(pb), Buffer::Cuda(sb), Buffer::Cuda(gb)) = (&mut *pw, &mut *sw, &*gr) else {
                        panic!("on the GPU")
                    };
                    cuda::adagrad_update_with(
                        which,
                        pb,
                        p.layout(),
                        sb,
                        s.layout(),
                        gb,
                        g.layout(),
                        lr as f64,
                        eps as f64,
                    )
                    .unwrap();
                }
                let what = format!("adagrad {dtype} n={n} offset={offset} {which:?}");
                assert_eq!(p.to_vec_f64().unwrap(), want_p, "{what}: parameters");
                assert_eq!(s.to_vec_f64().unwrap(), want_s, "{what}: state");
                // SGD on the updated parameters.
                let before = p.to_vec_f64().unwrap();
                {
                    let (mut pw, gr) = (p.storage().write(), g.storage().read());
                    let (Buffer::Cuda(pb), Buffer::Cuda(gb)) = (&mut *pw, &*gr) else {
                        panic!("on the GPU")
                    };
                    cuda::sgd_update_with(which, pb, p.layout(), gb, g.layout(), 0.1).unwrap();
                }
                let round = |x: f32| Tensor::from_data(&[x as f64], dtype).unwrap().item().unwrap();
                let want: Vec<f64> = before
                    .iter()
                    .zip(&g0.to_vec_f64().unwrap()[offset..])
                    .map(|(&p, &g)| round(p as f32 - 0.1f32 * g as f32))
                    .collect();
                assert_eq!(
                    p.to_vec_f64().unwrap(),
                    want,
                    "sgd {dtype} n={n} offset={offset} {which:?}"
                );
            }
        }
    }
}
