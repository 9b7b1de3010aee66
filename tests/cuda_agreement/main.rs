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

mod allocator;
mod copies;
mod elementwise;
mod in_place;
mod integers;
mod matmul;
mod training;
mod updates;

#[path = "../common/mod.rs"]
mod common;

use std::sync::{Mutex, MutexGuard};

use cs336::Error;
use cs336::base::{Accuracy, BinaryOp, ReduceOp, UnaryOp};
use cs336::device::cuda::ops::UpdateKernel;
use cs336::device::cuda::{self, GemmMode};
use cs336::device::{self, Device, DeviceRequest, F32Matmul};
use cs336::rng::Rng;
use cs336::tensor::DType;
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
    let tol = eps(want.dtype()) * ulps;
    agree_each(what, want, got, &format!("{ulps} ulp"), |_, a, b| {
        if ulps == 0.0 || a.is_infinite() || b.is_infinite() {
            a == b
        } else {
            (a - b).abs() <= tol * a.abs().max(b.abs()).max(f64::MIN_POSITIVE)
        }
    });
}

/// `got` (from the GPU) equals `want` (from the CPU) within `allowance[i]` at element `i`, plus
/// one ulp of the dtype (each side rounds its own result into it): for results whose error is
/// bounded absolutely, which a relative tolerance cannot hold where the result is near 0.
fn assert_agree_within(what: &str, want: &Tensor, got: &Tensor, allowance: &[f64]) {
    assert_eq!(want.numel(), allowance.len(), "{what}: one allowance per element");
    let ulp = eps(want.dtype());
    agree_each(what, want, got, "the allowance", |i, a, b| {
        if a.is_infinite() || b.is_infinite() || ulp == 0.0 {
            a == b
        } else {
            (a - b).abs() <= allowance[i] + ulp * a.abs().max(b.abs())
        }
    });
}

/// Each element of `got` against `want`'s with `ok` (NaN must match NaN).
fn agree_each(what: &str, want: &Tensor, got: &Tensor, tolerance: &str, ok: impl Fn(usize, f64, f64) -> bool) {
    assert_eq!(want.shape(), got.shape(), "{what}: shapes");
    assert_eq!(want.dtype(), got.dtype(), "{what}: dtypes");
    assert!(got.device().is_cuda(), "{what}: the result should be on the GPU");
    let (w, g) = (
        want.to_vec_f64().expect("cpu values"),
        got.to_vec_f64().expect("gpu values"),
    );
    for (i, (&a, &b)) in w.iter().zip(&g).enumerate() {
        let agrees = if a.is_nan() || b.is_nan() {
            a.is_nan() && b.is_nan()
        } else {
            ok(i, a, b)
        };
        assert!(
            agrees,
            "{what}: element {i}: CPU {a:e}, GPU {b:e} (tolerance {tolerance}, {})",
            want.dtype()
        );
    }
}

/// How far an `Accuracy::Approximation` op (GeLU and its backwards) may differ between the
/// devices at each element of its result: the CPU's polynomial and CUDA's `erff`/`expf`/`tanhf`
/// are each within 1e-6·(1 + |x|) of exact (times |g| for a backward's `g·f'(x)`), so the two
/// are within twice that. `x` and `g` have the result's shape (broadcast already).
fn approximation_allowance(x: &Tensor, g: Option<&Tensor>) -> Vec<f64> {
    let x = x.to_vec_f64().expect("x");
    let g = g.map_or_else(|| vec![1.0; x.len()], |g| g.to_vec_f64().expect("g"));
    x.iter()
        .zip(&g)
        .map(|(x, g)| 2e-6 * (1.0 + x.abs()) * g.abs())
        .collect()
}

/// How far a float sum or mean may differ between the devices: the CPU adds each block's
/// elements in f32 (64 lanes of at most 64 elements each, folded in 6 steps), the GPU in f64, so
/// the CPU's result is within about (64 + 6) f32 epsilons of the sum of the magnitudes, which
/// `magnitudes` (the same reduction of |x|) gives, element by element. Integers: exact.
fn sum_allowance(dtype: DType, magnitudes: &Tensor) -> Vec<f64> {
    let per_magnitude = if dtype.is_float() { 72.0 * eps(DType::F32) } else { 0.0 };
    let m = magnitudes.to_vec_f64().expect("magnitudes");
    m.iter().map(|m| per_magnitude * m).collect()
}

/// |x| as an f32 tensor of x's shape, on the CPU.
fn magnitudes(x: &Tensor) -> Tensor {
    let v: Vec<f64> = x.to_vec_f64().expect("values").iter().map(|v| v.abs()).collect();
    Tensor::from_f64_vec(&v, x.shape(), DType::F32).expect("magnitudes")
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
        // Where the results are not near 0 (specials); elsewhere `approximation_allowance`.
        Accuracy::Approximation => 512.0,
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
