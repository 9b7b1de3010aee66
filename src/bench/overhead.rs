//! `bench matmul-overhead`: what the tensor layer adds to an f32 matmul. The same input buffers
//! are multiplied through `Tensor::matmul` (shape checks, broadcasting, the plan, dispatch, a fresh
//! output tensor, FLOP counting) and by calling `gemm::gemm` directly, with the same threading,
//! taking turns: once into one preallocated output, once into a new zeroed output per call, which
//! separates the cost of a new output from the rest of the layer.

use crate::outln;
use anyhow::{Context, bail};
use gemm::Parallelism;

use super::{SHAPES, Shape};
use crate::rng::Rng;
use crate::tensor::{Buffer, CpuBuffer};
use crate::tensor::{DType, Tensor};
use crate::timing::{Budget, Clock, contender, in_turns};

pub struct Row {
    pub shape: Shape,
    pub tensor_s: f64,
    /// `gemm` into one output buffer reused by every call.
    pub direct_s: f64,
    /// `gemm` into a freshly allocated, zeroed output each call, as the tensor layer must: the
    /// difference to `direct_s` is what a new output costs (allocation, first touch of its pages).
    pub direct_fresh_s: f64,
    pub samples: usize,
}

impl Row {
    /// Tensor-layer time over direct `gemm` time, minus one.
    pub fn overhead(&self) -> f64 {
        self.tensor_s / self.direct_s - 1.0
    }
}

fn f32_ptr(t: &Tensor) -> anyhow::Result<*const f32> {
    match &*t.storage().read() {
        Buffer::Cpu(CpuBuffer::F32(v)) => Ok(v.as_ptr()),
        #[allow(unreachable_patterns)]
        _ => bail!("expected an f32 CPU tensor"),
    }
}

pub fn measure(shape: Shape, budget: Budget) -> anyhow::Result<Row> {
    let Shape { m, k, n } = shape;
    let mut rng = Rng::seed(0);
    let a = Tensor::randn(&[m, k], DType::F32, &mut rng)?;
    let b = Tensor::randn(&[k, n], DType::F32, &mut rng)?;
    // The tensors own their storage for the whole run and nothing writes to it, so the pointers
    // stay valid and the direct calls read exactly what `Tensor::matmul` reads.
    let (pa, pb) = (f32_ptr(&a)?, f32_ptr(&b)?);
    let mut dst = vec![0f32; m * n];
    let gemm_into = |dst: &mut [f32]| {
        // SAFETY: pa is m×k and pb k×n row-major (contiguous randn tensors), dst has m×n
        // elements, and read_dst = false means dst is only written.
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                dst.as_mut_ptr(),
                1,
                n as isize,
                false,
                pa,
                1,
                k as isize,
                pb,
                1,
                n as isize,
                0.0f32,
                1.0f32,
                false,
                false,
                false,
                Parallelism::Rayon(0),
            );
        }
    };
    let mut via_tensor = contender(Clock::Host, || {
        a.matmul(&b)
            .with_context(|| format!("Tensor::matmul {}", shape.label()))?;
        Ok(())
    });
    let mut direct = contender(Clock::Host, || {
        gemm_into(&mut dst);
        Ok(())
    });
    let mut direct_fresh = contender(Clock::Host, || {
        let mut fresh = vec![0f32; m * n];
        gemm_into(&mut fresh);
        std::hint::black_box(fresh);
        Ok(())
    });
    let s = in_turns::<anyhow::Error>(budget, &mut [&mut via_tensor, &mut direct, &mut direct_fresh])?;
    Ok(Row {
        shape,
        tensor_s: s[0].median_s,
        direct_s: s[1].median_s,
        direct_fresh_s: s[2].median_s,
        samples: s[0].reps,
    })
}

pub fn run(budget: Budget, threads: usize) -> anyhow::Result<Vec<Row>> {
    outln!("f32 matmul: Tensor::matmul vs gemm::gemm called directly on the same buffers")?;
    outln!(
        "{threads} threads, medians of samples taken in turns (≥{} each, ≥{:.1} s each)\n",
        budget.min_samples,
        budget.min_time.as_secs_f64()
    )?;
    outln!(
        "{:<16} {:>10} {:>10} {:>10} {:>11} {:>11} {:>9} {:>12} {:>8}",
        "shape",
        "tensor ms",
        "direct ms",
        "fresh ms",
        "tensor GF/s",
        "direct GF/s",
        "overhead",
        "vs fresh out",
        "samples"
    )?;
    let mut rows = Vec::new();
    for shape in SHAPES {
        let row = measure(shape, budget)?;
        let gf = |s: f64| shape.flop() / s / 1e9;
        outln!(
            "{:<16} {:>10.3} {:>10.3} {:>10.3} {:>11.1} {:>11.1} {:>+8.1}% {:>+11.1}% {:>8}",
            shape.label(),
            row.tensor_s * 1e3,
            row.direct_s * 1e3,
            row.direct_fresh_s * 1e3,
            gf(row.tensor_s),
            gf(row.direct_s),
            row.overhead() * 100.0,
            (row.tensor_s / row.direct_fresh_s - 1.0) * 100.0,
            row.samples
        )?;
        rows.push(row);
    }
    let big: Vec<&Row> = rows
        .iter()
        .filter(|r| r.shape.m * r.shape.k * r.shape.n >= 1024 * 1024 * 1024)
        .collect();
    let worst = big.iter().map(|r| r.overhead()).fold(f64::NEG_INFINITY, f64::max);
    outln!(
        "\nworst overhead at 1024³ and above: {:+.1}% (goal: ≤ 5%)",
        worst * 100.0
    )?;
    outln!(
        "overhead: tensor over direct into a reused output; vs fresh out: tensor over direct into a new zeroed output per call (\"fresh\")"
    )?;
    Ok(rows)
}
