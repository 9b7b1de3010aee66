//! The CUDA backend agrees with the CPU backend, op by op (every op declared in `base::op`),
//! dtype by dtype, on contiguous, strided, offset and broadcast views. Bit for bit where both
//! compute the same IEEE operations (arithmetic, sqrt, casts, fills, updates); within a few units
//! in the last place where the math libraries differ (`Accuracy::MathLibrary`: pow) or the
//! summation order does (reductions, matmul). Also: the allocator's exact byte count, the
//! out-of-memory error, TF32.
//!
//! Needs a GPU: without one every test says that it skipped and why (once on the terminal for the
//! whole binary), and passes. On the GPU
//! machine `.ci/gpu-check` runs this binary with CS336_CUDA_SYNC_CHECK=1 (a failing kernel is
//! then reported by name) and CS336_REQUIRE_GPU=1 (no GPU is then a failure, not a skip).

mod common;

use std::sync::{Mutex, MutexGuard};

use cs336::Error;
use cs336::base::{Accuracy, BinaryOp, DType, ReduceOp, UnaryOp};
use cs336::device::cuda::ops::UpdateKernel;
use cs336::device::cuda::{self, GemmMode};
use cs336::device::{self, Device, DeviceRequest, F32Matmul};
use cs336::rng::Rng;
use cs336::tensor::{Buffer, Tensor};

/// One test at a time: they share the process's GPU backend, and the memory tests read its
/// allocator's count.
static SERIAL: Mutex<()> = Mutex::new(());

fn gpu() -> Option<(Device, MutexGuard<'static, ()>)> {
    let guard = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    match device::choose(DeviceRequest::Auto) {
        Ok(choice) if choice.device.is_cuda() => Some((choice.device, guard)),
        Ok(choice) => {
            let why = choice.cuda_unavailable_reason.unwrap_or_default();
            // The GPU check sets this: there, a GPU that cannot be opened is a failure, not a skip.
            assert!(
                std::env::var_os("CS336_REQUIRE_GPU").is_none(),
                "CS336_REQUIRE_GPU is set but CUDA cannot be used: {why}"
            );
            // Once per binary on the terminal (past the harness's capture, which takes
            // `eprintln!`), so that a passing run shows every test here skipped; each test's
            // own line goes to its captured output.
            common::note_once(&format!(
                "cuda_agreement: skipped, every test: no GPU ({why}); CS336_REQUIRE_GPU=1 makes that a failure"
            ));
            eprintln!("skipped: no GPU ({why})");
            None
        }
        Err(e) => panic!("choosing a device failed: {e}"),
    }
}

const FLOATS: [DType; 3] = [DType::F32, DType::BF16, DType::F16];

fn eps(dtype: DType) -> f64 {
    match dtype {
        DType::F32 => f32::EPSILON as f64,
        DType::BF16 => 2f64.powi(-7),
        DType::F16 => 2f64.powi(-10),
        DType::I32 | DType::I64 => 0.0,
    }
}

/// `got` (from the GPU) equals `want` (from the CPU) within `ulps` units in the last place of the
/// dtype (0: bit for bit, NaN matching NaN).
fn assert_agree(what: &str, want: &Tensor, got: &Tensor, ulps: f64) {
    assert_eq!(want.shape(), got.shape(), "{what}: shapes");
    assert_eq!(want.dtype(), got.dtype(), "{what}: dtypes");
    assert!(got.device().is_cuda(), "{what}: the result should be on the GPU");
    let (w, g) = (
        want.to_vec_f64().expect("cpu values"),
        got.to_vec_f64().expect("gpu values"),
    );
    let tol = eps(want.dtype()) * ulps;
    for (i, (a, b)) in w.iter().zip(&g).enumerate() {
        let ok = if a.is_nan() || b.is_nan() {
            a.is_nan() && b.is_nan()
        } else if ulps == 0.0 || a.is_infinite() || b.is_infinite() {
            a == b
        } else {
            (a - b).abs() <= tol * a.abs().max(b.abs()).max(f64::MIN_POSITIVE)
        };
        assert!(
            ok,
            "{what}: element {i}: CPU {a:e}, GPU {b:e} (tolerance {ulps} ulp of {})",
            want.dtype()
        );
    }
}

/// A random [rows, cols] tensor of `dtype` on the CPU, with values of both signs.
fn random(rows: usize, cols: usize, dtype: DType, seed: u64) -> Tensor {
    let mut rng = Rng::seed(seed);
    let v: Vec<f64> = (0..rows * cols)
        .map(|_| {
            if dtype.is_float() {
                3.0 * rng.normal()
            } else {
                (rng.below(200) as f64) - 100.0
            }
        })
        .collect();
    Tensor::from_f64_vec(&v, &[rows, cols], dtype).expect("tensor")
}

/// The views every elementwise op is tried on: contiguous, transposed, sliced with an offset.
fn views(x: &Tensor) -> Vec<(&'static str, Tensor)> {
    vec![
        ("contiguous", x.clone()),
        ("transposed", x.t().expect("t")),
        (
            "sliced",
            x.narrow(0, 1, x.shape()[0] - 2)
                .expect("narrow")
                .narrow(1, 2, x.shape()[1] - 3)
                .expect("narrow"),
        ),
    ]
}

fn on(x: &Tensor, dev: &Device) -> Tensor {
    x.to_device(dev).expect("to the GPU")
}

/// How many units in the last place the GPU may be from the CPU: the same IEEE operations give
/// the same bits; CUDA's math library (powf is within 4 ulp of exact) does not.
fn ulps(accuracy: Accuracy) -> f64 {
    match accuracy {
        Accuracy::CorrectlyRounded | Accuracy::TwoRoundings => 0.0,
        Accuracy::MathLibrary => 8.0,
    }
}

/// Every declared unary op, scalar ops with each of `scalars`.
fn unary_ops(scalars: &[f64]) -> Vec<UnaryOp> {
    let mut ops: Vec<UnaryOp> = Vec::new();
    for op in UnaryOp::ALL {
        for &s in scalars {
            let op = op.with_scalar(s);
            if !ops.contains(&op) {
                ops.push(op);
            }
        }
    }
    ops
}

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

/// Relative Frobenius error of the GPU product against an f64 product of the same inputs.
fn rel_error(a: &Tensor, b: &Tensor, got: &Tensor) -> f64 {
    let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
    let (av, bv, gv) = (
        a.to_vec_f64().unwrap(),
        b.to_vec_f64().unwrap(),
        got.to_vec_f64().unwrap(),
    );
    let (mut num, mut den) = (0.0, 0.0);
    for i in 0..m {
        for j in 0..n {
            let r: f64 = (0..k).map(|t| av[i * k + t] * bv[t * n + j]).sum();
            num += (r - gv[i * n + j]).powi(2);
            den += r * r;
        }
    }
    (num / den).sqrt()
}

/// ‖got − want‖ / ‖want‖ over all elements (products near zero make elementwise ratios useless).
fn assert_frobenius(what: &str, want: &Tensor, got: &Tensor, tol: f64) {
    assert_eq!(want.shape(), got.shape(), "{what}: shapes");
    assert!(got.device().is_cuda(), "{what}: the result should be on the GPU");
    let (w, g) = (want.to_vec_f64().unwrap(), got.to_vec_f64().unwrap());
    let num: f64 = w.iter().zip(&g).map(|(a, b)| (a - b).powi(2)).sum();
    let den: f64 = w.iter().map(|a| a * a).sum();
    let e = (num / den.max(f64::MIN_POSITIVE)).sqrt();
    assert!(e <= tol, "{what}: relative error {e:e} (tolerance {tol:e})");
}

#[test]
fn matmul_agrees_in_every_layout_and_precision() {
    let Some((dev, _g)) = gpu() else { return };
    let was = dev.set_f32_matmul(F32Matmul::Default);
    for dtype in FLOATS {
        let a = random(70, 50, dtype, 8);
        let b = random(50, 30, dtype, 9);
        let (ga, gb) = (on(&a, &dev), on(&b, &dev));
        // fp32 lands far under 1e-5; bf16/f16 outputs are rounded to 8/11 significant bits.
        let tol = match dtype {
            DType::F32 => 1e-5,
            DType::BF16 => 1e-2,
            _ => 2e-3,
        };
        let cases: Vec<(&str, Tensor, Tensor, Tensor, Tensor)> = vec![
            ("plain", a.clone(), b.clone(), ga.clone(), gb.clone()),
            (
                "transposed left",
                a.t().unwrap().contiguous().unwrap().t().unwrap(),
                b.clone(),
                ga.t().unwrap().contiguous().unwrap().t().unwrap(),
                gb.clone(),
            ),
            (
                "transposed right",
                a.clone(),
                b.t().unwrap().contiguous().unwrap().t().unwrap(),
                ga.clone(),
                gb.t().unwrap().contiguous().unwrap().t().unwrap(),
            ),
            (
                "sliced",
                a.narrow(1, 5, 40).unwrap(),
                b.narrow(0, 5, 40).unwrap(),
                ga.narrow(1, 5, 40).unwrap(),
                gb.narrow(0, 5, 40).unwrap(),
            ),
        ];
        for (name, ca, cb, xa, xb) in cases {
            let got = xa.matmul(&xb).unwrap();
            let want = ca.matmul(&cb).unwrap();
            assert_eq!(got.shape(), want.shape(), "{dtype} {name}");
            let e = rel_error(&ca.contiguous().unwrap(), &cb.contiguous().unwrap(), &got);
            assert!(e < tol, "{dtype} {name}: relative error {e:e} (tolerance {tol:e})");
        }
        // Batched: independent batches, a shared right operand (folded), broadcast batch dims.
        let x = Tensor::from_f64_vec(
            &random(1, 4 * 3 * 7 * 5, dtype, 10).to_vec_f64().unwrap(),
            &[4, 3, 7, 5],
            dtype,
        )
        .unwrap();
        let w = Tensor::from_f64_vec(
            &random(1, 4 * 3 * 5 * 6, dtype, 11).to_vec_f64().unwrap(),
            &[4, 3, 5, 6],
            dtype,
        )
        .unwrap();
        let shared = random(5, 6, dtype, 12);
        let bcast = Tensor::from_f64_vec(
            &random(1, 3 * 5 * 6, dtype, 13).to_vec_f64().unwrap(),
            &[3, 5, 6],
            dtype,
        )
        .unwrap();
        for (name, rhs) in [("batched", &w), ("shared", &shared), ("broadcast batch", &bcast)] {
            let want = x.matmul(rhs).unwrap();
            let got = on(&x, &dev).matmul(&on(rhs, &dev)).unwrap();
            assert_frobenius(&format!("{dtype} {name} matmul"), &want, &got, tol);
        }
        // Vectors: matrix-vector, vector-matrix, dot.
        let v = random(1, 50, dtype, 14).squeeze(0).unwrap();
        let u = random(1, 70, dtype, 18).squeeze(0).unwrap();
        let (gv, gu) = (on(&v, &dev), on(&u, &dev));
        assert_frobenius(
            &format!("{dtype} matrix @ vector"),
            &a.matmul(&v).unwrap(),
            &ga.matmul(&gv).unwrap(),
            tol,
        );
        assert_frobenius(
            &format!("{dtype} vector @ matrix"),
            &u.matmul(&a).unwrap(),
            &gu.matmul(&ga).unwrap(),
            tol,
        );
        assert_frobenius(
            &format!("{dtype} vector @ vector"),
            &v.matmul(&v).unwrap(),
            &gv.matmul(&gv).unwrap(),
            tol,
        );
    }
    // TF32: the same f32 inputs give a less precise product (10-bit mantissas in), still close.
    // Large enough that cuBLAS uses tensor cores when it may.
    let a = random(512, 1024, DType::F32, 15);
    let b = random(1024, 256, DType::F32, 16);
    let (ga, gb) = (on(&a, &dev), on(&b, &dev));
    let fp32 = ga.matmul(&gb).unwrap();
    dev.set_f32_matmul(F32Matmul::Pedantic);
    let pedantic = ga.matmul(&gb).unwrap();
    dev.set_f32_matmul(F32Matmul::Tf32);
    let tf32 = ga.matmul(&gb).unwrap();
    dev.set_f32_matmul(was);
    let (e32, epd, etf) = (
        rel_error(&a, &b, &fp32),
        rel_error(&a, &b, &pedantic),
        rel_error(&a, &b, &tf32),
    );
    assert!(
        e32 < 1e-5 && epd < 1e-5 && etf > 10.0 * e32 && etf < 5e-3,
        "fp32 error {e32:e}, pedantic fp32 error {epd:e}, tf32 error {etf:e}"
    );
    // bf16 inputs with an f32 output.
    let (a16, b16) = (ga.to_dtype(DType::BF16).unwrap(), gb.to_dtype(DType::BF16).unwrap());
    let out = {
        let (x, y) = (a16.storage().read(), b16.storage().read());
        let (Buffer::Cuda(x), Buffer::Cuda(y)) = (&*x, &*y) else {
            panic!("on the GPU")
        };
        cuda::matmul_with(GemmMode::Bf16F32Out, x, a16.layout(), y, b16.layout()).unwrap()
    };
    assert_eq!(out.dtype(), DType::F32);
    let host = cuda::download(&out, 0..out.len()).unwrap();
    let got = Tensor::from_f64_vec(
        &(0..host.len()).map(|i| host.get_f64(i).unwrap()).collect::<Vec<_>>(),
        &[512, 256],
        DType::F32,
    )
    .unwrap();
    // Against the exact (f64) product of the same bf16 values. Tensor cores multiply bf16
    // exactly but add into their f32 accumulators with truncation (seen on an H200: elementwise
    // up to 6e-4 of max(|want|, 1) at k = 1024), so the test is norm-wise: far under the error of
    // rounding the output to bf16, which the bf16-output product shows beside it.
    let (a16h, b16h) = (a.to_dtype(DType::BF16).unwrap(), b.to_dtype(DType::BF16).unwrap());
    let f32_out = rel_error(&a16h, &b16h, &got);
    let bf16_out = rel_error(
        &a16h,
        &b16h,
        &a16.matmul(&b16).unwrap().to_device(&Device::Cpu).unwrap(),
    );
    assert!(
        f32_out < 1e-4 && bf16_out > 3.0 * f32_out,
        "bf16 inputs: relative error {f32_out:e} with an f32 output, {bf16_out:e} with a bf16 output"
    );
}

#[test]
fn copies_casts_triu_and_fills_agree() {
    let Some((dev, _g)) = gpu() else { return };
    let specials = [
        0.0,
        -0.0,
        1.5,
        -2.5,
        3.7,
        1e10,
        -1e10,
        65504.0,
        70000.0,
        3.0e38,
        f64::NAN,
        f64::INFINITY,
        -f64::INFINITY,
        1e-40,
        2147483647.0,
        -9.3e18,
    ];
    for from in DType::ALL {
        let x = random(23, 31, from, 17);
        let s = Tensor::from_data(&specials, from).unwrap();
        let (gx, gs) = (on(&x, &dev), on(&s, &dev));
        assert_agree(
            &format!("contiguous {from}"),
            &x.t().unwrap().contiguous().unwrap(),
            &gx.t().unwrap().contiguous().unwrap(),
            0.0,
        );
        assert_agree(
            &format!("round trip {from}"),
            &x,
            &gx.to_device(&Device::Cpu).unwrap().to_device(&dev).unwrap(),
            0.0,
        );
        for to in DType::ALL {
            assert_agree(
                &format!("cast {from} -> {to}"),
                &x.t().unwrap().to_dtype(to).unwrap(),
                &gx.t().unwrap().to_dtype(to).unwrap(),
                0.0,
            );
            assert_agree(
                &format!("cast {from} -> {to} specials"),
                &s.to_dtype(to).unwrap(),
                &gs.to_dtype(to).unwrap(),
                0.0,
            );
        }
        for diagonal in [-2, 0, 1, 5] {
            assert_agree(
                &format!("triu({diagonal}) {from}"),
                &x.triu(diagonal).unwrap(),
                &gx.triu(diagonal).unwrap(),
                0.0,
            );
            assert_agree(
                &format!("triu({diagonal}) {from} transposed"),
                &x.t().unwrap().triu(diagonal).unwrap(),
                &gx.t().unwrap().triu(diagonal).unwrap(),
                0.0,
            );
        }
        for value in [0.0, 1.0, -2.75, 0.1, 1e20] {
            let want = Tensor::full(&[7, 9], value, from).unwrap();
            assert_agree(
                &format!("full({value}) {from}"),
                &want,
                &Tensor::full_on(&[7, 9], value, from, &dev).unwrap(),
                0.0,
            );
        }
    }
}

#[test]
fn element_access_and_device_rules() {
    let Some((dev, _g)) = gpu() else { return };
    let x = on(&Tensor::arange(12, DType::F32).unwrap().view(&[3, 4]).unwrap(), &dev);
    assert_eq!(x.get(&[2, 1]).unwrap(), 9.0);
    let t = x.t().unwrap();
    x.set(&[0, 3], 100.0).unwrap();
    assert_eq!(
        t.get(&[3, 0]).unwrap(),
        100.0,
        "a write is seen through a view of the same GPU storage"
    );
    assert_eq!(x.to_vec::<f32>().unwrap()[3], 100.0);
    assert_eq!(x.device().to_string(), "cuda:0");
    let cpu = Tensor::ones(&[3, 4], DType::F32).unwrap();
    assert!(
        matches!(x.add(&cpu), Err(Error::DeviceMismatch { .. })),
        "CPU and GPU tensors do not mix"
    );
    let pinned = Tensor::arange(1000, DType::I32)
        .unwrap()
        .to_device_pinned(&dev)
        .unwrap();
    assert_agree(
        "pinned upload",
        &Tensor::arange(1000, DType::I32).unwrap(),
        &pinned,
        0.0,
    );
}

#[test]
fn random_fills_have_the_right_distribution_and_repeat_from_a_seed() {
    let Some((dev, _g)) = gpu() else { return };
    for dtype in FLOATS {
        let n = 1 << 20;
        let x = Tensor::randn_on(&[n], dtype, &dev, &mut Rng::seed(3)).unwrap();
        let v = x.to_vec_f64().unwrap();
        let mean = v.iter().sum::<f64>() / n as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(
            mean.abs() < 5e-3 && (var - 1.0).abs() < 1e-2,
            "{dtype}: mean {mean}, variance {var}"
        );
        let again = Tensor::randn_on(&[n], dtype, &dev, &mut Rng::seed(3))
            .unwrap()
            .to_vec_f64()
            .unwrap();
        assert_eq!(v, again, "{dtype}: the same seed gives the same samples");
        let u = Tensor::rand_on(&[n], dtype, &dev, &mut Rng::seed(4))
            .unwrap()
            .to_vec_f64()
            .unwrap();
        let umean = u.iter().sum::<f64>() / n as f64;
        assert!(
            u.iter().all(|&x| (0.0..=1.0).contains(&x)) && (umean - 0.5).abs() < 5e-3,
            "{dtype}: uniform mean {umean}"
        );
    }
}

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

#[test]
fn the_allocator_counts_exactly_and_out_of_memory_is_a_clear_error() {
    let Some((dev, _g)) = gpu() else { return };
    let before = device::memory_allocated(&dev).expect("a GPU count");
    let x = Tensor::zeros_on(&[32, 32], DType::F32, &dev).unwrap();
    let y = Tensor::ones(&[100, 3], DType::BF16).unwrap().to_device(&dev).unwrap();
    assert_eq!(
        device::memory_allocated(&dev).unwrap() - before,
        32 * 32 * 4 + 100 * 3 * 2
    );
    let view = x.t().unwrap();
    assert_eq!(
        device::memory_allocated(&dev).unwrap() - before,
        32 * 32 * 4 + 600,
        "a view allocates nothing"
    );
    drop((x, y));
    assert_eq!(
        device::memory_allocated(&dev).unwrap() - before,
        32 * 32 * 4,
        "the view keeps its storage alive"
    );
    drop(view);
    assert_eq!(device::memory_allocated(&dev).unwrap(), before);
    // More than this GPU has: the error names what was asked for and what was free.
    let total = dev.memory_bytes().expect("a GPU knows its memory") as usize;
    let huge = (total + (1 << 30)) / 4 * 4;
    match Tensor::zeros_on(&[huge / 4], DType::F32, &dev) {
        Err(Error::CudaOutOfMemory { requested, free, total }) => {
            assert_eq!(requested, huge);
            assert!(free <= total && total > 0, "free {free}, total {total}");
            let msg = Error::CudaOutOfMemory { requested, free, total }.to_string();
            assert!(msg.contains(&huge.to_string()) && msg.contains("free"), "{msg}");
        }
        other => panic!(
            "expected an out-of-memory error, got {:?}",
            other.map(|t| t.shape().to_vec())
        ),
    }
    assert_eq!(
        device::memory_allocated(&dev).unwrap(),
        before,
        "a failed allocation counts nothing"
    );
}

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

#[test]
fn in_place_updates_through_the_tensor_api_agree() {
    let Some((dev, _g)) = gpu() else { return };
    for dtype in FLOATS {
        let p0 = random(17, 29, dtype, 40);
        let g = random(17, 29, dtype, 41);
        let (cp, cs) = (p0.deep_clone().unwrap(), Tensor::zeros(&[17, 29], dtype).unwrap());
        let (gp, gs, gg) = (
            on(&p0, &dev),
            Tensor::zeros_on(&[17, 29], dtype, &dev).unwrap(),
            on(&g, &dev),
        );
        for _ in 0..3 {
            cp.adagrad_update_(&cs, &g, 0.05, 1e-5).unwrap();
            gp.adagrad_update_(&gs, &gg, 0.05, 1e-5).unwrap();
        }
        assert_agree(&format!("adagrad_update_ {dtype}"), &cp, &gp, 0.0);
        assert_agree(&format!("adagrad state {dtype}"), &cs, &gs, 0.0);
        cp.sgd_update_(&g, 0.3).unwrap();
        gp.sgd_update_(&gg, 0.3).unwrap();
        assert_agree(&format!("sgd_update_ {dtype}"), &cp, &gp, 0.0);
        // copy_from converts and copies in place, from any layout.
        cp.copy_from(&g.t().unwrap().contiguous().unwrap().t().unwrap())
            .unwrap();
        gp.copy_from(&gg.t().unwrap().contiguous().unwrap().t().unwrap())
            .unwrap();
        assert_agree(&format!("copy_from {dtype}"), &cp, &gp, 0.0);
        assert!(
            matches!(gp.sgd_update_(&g, 0.1), Err(Error::DeviceMismatch { .. })),
            "a CPU gradient for a GPU parameter"
        );
    }
}

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
