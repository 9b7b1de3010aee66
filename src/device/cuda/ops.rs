//! Plans for every kernel launch: which kernel (by op and dtype), with which arguments, on which
//! grid. Pure functions of layouts and device addresses, so they are tested without a GPU.

use half::{bf16, f16};

use super::launch::{Arg, Launch, THREADS, dtype_suffix, grid_for, strided_many};
use crate::base::op::ReduceWalk;
use crate::base::{BinaryOp, DType, Element, Layout, ReduceOp, UnaryOp};
use crate::error::{Error, Result};

fn n_arg(n: usize) -> Arg {
    Arg::I64(n as i64)
}

/// `<kernel>_<dtype>` with the op's scalar (0 for ops without one): f32 for floats, i64 for
/// integers (where the declaration keeps only integral scalars). Floats run the op's exact form
/// (`pow` with 2 and 0.5 as `square` and `sqrt`), as the CPU backend does.
pub fn unary(op: UnaryOp, dtype: DType, out: u64, input: u64, layout: &Layout, sm: u32) -> Result<Launch> {
    op.check_dtype(dtype)?;
    let n = layout.numel();
    let l = strided_many(op.name(), &[layout])?[0];
    let (op, scalar) = if dtype.is_float() {
        let op = op.simplified();
        (op, Arg::F32(op.scalar().unwrap_or(0.0) as f32))
    } else {
        (op, Arg::I64(op.scalar().unwrap_or(0.0) as i64))
    };
    Ok(Launch {
        kernel: format!("{}_{}", op.kernel(), dtype_suffix(dtype)),
        args: vec![Arg::Ptr(out), Arg::Ptr(input), Arg::Strided(l), n_arg(n), scalar],
        grid: grid_for(n, sm),
        block: (THREADS, 1, 1),
    })
}

pub fn binary(op: BinaryOp, dtype: DType, out: u64, a: (u64, &Layout), b: (u64, &Layout), sm: u32) -> Result<Launch> {
    op.check_dtype(dtype)?;
    let n = a.1.numel();
    let ls = strided_many(op.name(), &[a.1, b.1])?;
    Ok(Launch {
        kernel: format!("{}_{}", op.kernel(), dtype_suffix(dtype)),
        args: vec![
            Arg::Ptr(out),
            Arg::Ptr(a.0),
            Arg::Strided(ls[0]),
            Arg::Ptr(b.0),
            Arg::Strided(ls[1]),
            n_arg(n),
        ],
        grid: grid_for(n, sm),
        block: (THREADS, 1, 1),
    })
}

/// Threads per block of the first reduction pass (REDUCE_THREADS in kernels/reduce.cu).
pub const REDUCE_THREADS: u32 = 256;

/// A two-pass reduction: `partial` needs `outputs × chunks` f64s.
#[derive(Debug, Clone, PartialEq)]
pub struct ReducePlan {
    pub outputs: usize,
    pub chunks: usize,
    pub first: Launch,
    pub finish: Launch,
}

/// How many blocks share one output's run: enough to put several blocks on every multiprocessor
/// when there are few outputs, but never a chunk shorter than a few elements per thread.
pub fn reduce_chunks(outputs: usize, run: usize, sm: u32) -> (usize, usize) {
    let target_blocks = sm.max(1) as usize * 8;
    let by_occupancy = target_blocks.div_ceil(outputs.max(1));
    let by_work = run.div_ceil(REDUCE_THREADS as usize * 4).max(1);
    let chunks = by_occupancy.min(by_work).clamp(1, 65535);
    let chunk = run.div_ceil(chunks).max(1);
    (run.div_ceil(chunk).max(1), chunk)
}

/// Both passes of a reduction along `w` (see `ReduceOp::walk`).
pub fn reduce(
    op: ReduceOp,
    dtype: DType,
    out: u64,
    partial: u64,
    input: u64,
    w: &ReduceWalk,
    sm: u32,
) -> Result<ReducePlan> {
    op.check_dtype(dtype)?;
    let (walk, outputs, run) = (&w.walk, w.outputs, w.run);
    let l = strided_many(op.name(), &[walk])?[0];
    let (chunks, chunk) = reduce_chunks(outputs, run, sm);
    let suffix = dtype_suffix(dtype);
    let grid_x = outputs.clamp(1, 1 << 30) as u32;
    let first = Launch {
        kernel: format!("{}_{suffix}", op.first_pass_kernel()),
        args: vec![
            Arg::Ptr(partial),
            Arg::Ptr(input),
            Arg::Strided(l),
            n_arg(outputs),
            n_arg(run),
            n_arg(chunk),
        ],
        grid: (grid_x, chunks as u32, 1),
        block: (REDUCE_THREADS, 1, 1),
    };
    let finish = Launch {
        kernel: format!("reduce_finish_{}_{suffix}", op.name()),
        args: vec![
            Arg::Ptr(out),
            Arg::Ptr(partial),
            n_arg(outputs),
            n_arg(chunks),
            n_arg(run),
        ],
        grid: grid_for(outputs, sm),
        block: (THREADS, 1, 1),
    };
    Ok(ReducePlan {
        outputs,
        chunks,
        first,
        finish,
    })
}

/// `contiguous()`: a strided gather into row-major order.
pub fn gather(dtype: DType, out: u64, input: u64, layout: &Layout, sm: u32) -> Result<Launch> {
    let n = layout.numel();
    let l = strided_many("contiguous", &[layout])?[0];
    Ok(Launch {
        kernel: format!("strided_copy_{}", dtype_suffix(dtype)),
        args: vec![Arg::Ptr(out), Arg::Ptr(input), Arg::Strided(l), n_arg(n)],
        grid: grid_for(n, sm),
        block: (THREADS, 1, 1),
    })
}

pub fn cast(from: DType, to: DType, out: u64, input: u64, layout: &Layout, sm: u32) -> Result<Launch> {
    let n = layout.numel();
    let l = strided_many("to_dtype", &[layout])?[0];
    Ok(Launch {
        kernel: format!("cast_{}_{}", dtype_suffix(from), dtype_suffix(to)),
        args: vec![Arg::Ptr(out), Arg::Ptr(input), Arg::Strided(l), n_arg(n)],
        grid: grid_for(n, sm),
        block: (THREADS, 1, 1),
    })
}

pub fn triu(dtype: DType, out: u64, input: u64, layout: &Layout, diagonal: i64, sm: u32) -> Result<Launch> {
    let nd = layout.ndim();
    if nd < 2 {
        return Err(Error::invalid(
            "triu",
            format!("needs at least 2 dimensions, got shape {:?}", layout.shape),
        ));
    }
    let n = layout.numel();
    let (rows, cols) = (layout.shape[nd - 2], layout.shape[nd - 1]);
    let l = strided_many("triu", &[layout])?[0];
    Ok(Launch {
        kernel: format!("triu_{}", dtype_suffix(dtype)),
        args: vec![
            Arg::Ptr(out),
            Arg::Ptr(input),
            Arg::Strided(l),
            n_arg(n),
            n_arg(rows.max(1)),
            n_arg(cols.max(1)),
            Arg::I64(diagonal),
        ],
        grid: grid_for(n, sm),
        block: (THREADS, 1, 1),
    })
}

/// Fills `n` elements with `value` rounded into `dtype` on the host (exactly as the CPU backend
/// rounds it); the kernel only writes the bit pattern.
pub fn fill(dtype: DType, out: u64, n: usize, value: f64, sm: u32) -> Result<Launch> {
    let (kernel, bits) = match dtype {
        DType::F32 => ("fill_u32", Arg::U32(f32::from_f64(value).to_bits())),
        DType::F16 => ("fill_u16", Arg::U32(u32::from(f16::from_f64(value).to_bits()))),
        DType::BF16 => ("fill_u16", Arg::U32(u32::from(bf16::from_f64(value).to_bits()))),
        DType::I32 => ("fill_u32", Arg::U32(i32::from_f64(value) as u32)),
        DType::I64 => ("fill_u64", Arg::U64(i64::from_f64(value) as u64)),
    };
    Ok(Launch {
        kernel: kernel.into(),
        args: vec![Arg::Ptr(out), n_arg(n), bits],
        grid: grid_for(n, sm),
        block: (THREADS, 1, 1),
    })
}

/// Which random distribution a device fill draws from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    /// N(0, 1).
    Normal,
    /// Uniform on [0, 1).
    Uniform,
}

pub fn random(dist: Distribution, dtype: DType, out: u64, n: usize, seed: u64, sm: u32) -> Result<Launch> {
    let name = match dist {
        Distribution::Normal => "randn",
        Distribution::Uniform => "rand",
    };
    dtype.require_float(name)?;
    Ok(Launch {
        kernel: format!("{name}_{}", dtype_suffix(dtype)),
        args: vec![Arg::Ptr(out), n_arg(n), Arg::U64(seed)],
        grid: grid_for(n.div_ceil(2), sm),
        block: (THREADS, 1, 1),
    })
}

/// Whether every address allows the 16-byte vector kernels.
fn aligned16(ptrs: &[u64]) -> bool {
    ptrs.iter().all(|p| p % 16 == 0)
}

/// Elements per 16-byte vector.
fn per_vector(dtype: DType) -> usize {
    16 / dtype.size_in_bytes()
}

fn update_grid(dtype: DType, n: usize, vectorised: bool, sm: u32) -> (u32, u32, u32) {
    if vectorised {
        grid_for(n / per_vector(dtype) + 1, sm)
    } else {
        // The reference kernels have no loop: one thread per element.
        (n.div_ceil(THREADS as usize).max(1) as u32, 1, 1)
    }
}

/// Which version of an update kernel to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateKernel {
    /// 16-byte vectors and a grid-stride loop (used whenever the addresses are 16-byte aligned).
    Fast,
    /// One element per thread: the reference.
    Reference,
}

fn update_kernel(op: &str, dtype: DType, ptrs: &[u64], which: UpdateKernel) -> (String, bool) {
    let vectorised = which == UpdateKernel::Fast && aligned16(ptrs);
    (
        format!("{op}_{}{}", dtype_suffix(dtype), if vectorised { "_vec" } else { "" }),
        vectorised,
    )
}

/// `p -= lr · g` over `n` contiguous elements starting at the given addresses.
pub fn sgd(dtype: DType, p: u64, g: u64, n: usize, lr: f64, which: UpdateKernel, sm: u32) -> Result<Launch> {
    if !dtype.is_float() {
        return Err(Error::UnsupportedDType {
            op: "sgd_update",
            dtype: dtype.name(),
            why: "parameters must be floating point",
        });
    }
    let (kernel, vectorised) = update_kernel("sgd", dtype, &[p, g], which);
    Ok(Launch {
        kernel,
        args: vec![Arg::Ptr(p), Arg::Ptr(g), n_arg(n), Arg::F32(lr as f32)],
        grid: update_grid(dtype, n, vectorised, sm),
        block: (THREADS, 1, 1),
    })
}

/// `s += g²; p -= lr · g / √(s + eps)` over `n` contiguous elements.
#[allow(clippy::too_many_arguments)]
pub fn adagrad(
    dtype: DType,
    p: u64,
    s: u64,
    g: u64,
    n: usize,
    lr: f64,
    eps: f64,
    which: UpdateKernel,
    sm: u32,
) -> Result<Launch> {
    if !dtype.is_float() {
        return Err(Error::UnsupportedDType {
            op: "adagrad_update",
            dtype: dtype.name(),
            why: "parameters must be floating point",
        });
    }
    let (kernel, vectorised) = update_kernel("adagrad", dtype, &[p, s, g], which);
    Ok(Launch {
        kernel,
        args: vec![
            Arg::Ptr(p),
            Arg::Ptr(s),
            Arg::Ptr(g),
            n_arg(n),
            Arg::F32(lr as f32),
            Arg::F32(eps as f32),
        ],
        grid: update_grid(dtype, n, vectorised, sm),
        block: (THREADS, 1, 1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_names_say_op_and_dtype() {
        let l = Layout::contiguous(&[4]);
        assert_eq!(
            unary(UnaryOp::Sqrt, DType::BF16, 0, 0, &l, 1).expect("plan").kernel,
            "sqrt_bf16"
        );
        assert_eq!(
            unary(UnaryOp::PowScalar(2.0), DType::F32, 0, 0, &l, 1)
                .expect("plan")
                .kernel,
            "square_f32"
        );
        assert_eq!(
            unary(UnaryOp::PowScalar(3.0), DType::F32, 0, 0, &l, 1)
                .expect("plan")
                .kernel,
            "pow_scalar_f32"
        );
        assert_eq!(
            unary(UnaryOp::AddScalar(2.0), DType::I64, 0, 0, &l, 1)
                .expect("plan")
                .args[4],
            Arg::I64(2)
        );
        assert!(
            unary(UnaryOp::AddScalar(0.5), DType::I32, 0, 0, &l, 1).is_err(),
            "a fractional scalar on integers"
        );
        assert!(unary(UnaryOp::Sqrt, DType::I32, 0, 0, &l, 1).is_err());
        assert_eq!(
            binary(BinaryOp::Mul, DType::I32, 0, (0, &l), (0, &l), 1)
                .expect("plan")
                .kernel,
            "mul_i32"
        );
        assert!(binary(BinaryOp::Div, DType::I64, 0, (0, &l), (0, &l), 1).is_err());
    }

    #[test]
    fn fills_carry_the_dtype_rounded_bit_pattern() {
        let bits = |dtype, v| fill(dtype, 0, 1, v, 1).expect("plan").args[2];
        assert_eq!(bits(DType::F32, 1.5), Arg::U32(1.5f32.to_bits()));
        assert_eq!(bits(DType::BF16, 1.0), Arg::U32(0x3f80));
        assert_eq!(bits(DType::F16, 1.0), Arg::U32(0x3c00));
        assert_eq!(bits(DType::I32, -1.0), Arg::U32(u32::MAX));
        assert_eq!(bits(DType::I64, -2.7), Arg::U64((-2i64) as u64));
    }

    #[test]
    fn reductions_split_long_runs_across_blocks() {
        // One output over 100M elements: many chunks, each a long stretch of work.
        let (chunks, chunk) = reduce_chunks(1, 100_000_000, 132);
        assert!(
            chunks >= 132 && chunks * chunk >= 100_000_000 && (chunks - 1) * chunk < 100_000_000,
            "{chunks} x {chunk}"
        );
        // Many outputs: one block each.
        assert_eq!(reduce_chunks(1 << 20, 64, 132), (1, 64));
        // An empty run still has one (empty) chunk per output.
        assert_eq!(reduce_chunks(5, 0, 132), (1, 1));
    }

    #[test]
    fn a_reduction_over_an_empty_dimension_keeps_its_outputs() {
        // x: [3, 0] reduced over dim 1 -> 3 outputs (sum 0, mean NaN).
        let walk = ReduceOp::Sum.walk(&Layout::contiguous(&[3, 0]), &[1], 0).expect("walk");
        let plan = reduce(ReduceOp::Sum, DType::F32, 0, 0, 0, &walk, 132).expect("plan");
        assert_eq!((plan.outputs, plan.chunks), (3, 1));
    }

    #[test]
    fn updates_use_vectors_only_on_aligned_addresses() {
        let fast = adagrad(DType::F32, 256, 512, 1024, 1000, 0.01, 1e-5, UpdateKernel::Fast, 132).expect("plan");
        assert_eq!(fast.kernel, "adagrad_f32_vec");
        let odd = adagrad(DType::F32, 260, 512, 1024, 1000, 0.01, 1e-5, UpdateKernel::Fast, 132).expect("plan");
        assert_eq!(odd.kernel, "adagrad_f32");
        assert_eq!(
            odd.grid.0 as usize * THREADS as usize,
            1024,
            "one thread per element, every element covered"
        );
        let reference = sgd(DType::BF16, 256, 512, 10, 0.1, UpdateKernel::Reference, 132).expect("plan");
        assert_eq!(reference.kernel, "sgd_bf16");
    }
}
