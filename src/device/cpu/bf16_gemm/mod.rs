//! bf16 matrix multiply on the CPU, accumulating in f32 and rounding to bf16 once at the end.
//!
//! Three kernels compute the same thing:
//! - `Amx`: x86-64 CPUs with AMX-BF16 (Intel Sapphire Rapids and later) multiply whole tiles,
//!   16×32 by 32×16 bf16 values into 16×16 f32 sums, in one instruction; see `amx.rs`.
//! - `Avx512Bf16`: x86-64 CPUs with AVX512_BF16 (Intel Cooper Lake / Sapphire Rapids, AMD Zen 4+)
//!   have `vdpbf16ps`, which multiplies pairs of bf16 values and adds both products into one f32
//!   lane: 32 multiply-adds per instruction, twice an f32 FMA's, but where the instruction issues
//!   at less than half the FMA's rate (measured: a quarter, on an Intel Xeon without AMX) it is
//!   the slower unit; see `avx512.rs`.
//! - `PortableF32`: widen bf16 to f32 (exact), multiply with `gemm` in f32 and round once. It is
//!   f32 plus two conversions: the only kernel on CPUs without a bf16 instruction, and the faster
//!   one on CPUs whose bf16 unit is slower than their FMA.
//!
//! Which one a product takes is decided per process by timing the units (`route.rs`).
//!
//! Operands are strided matrices (row and column strides in elements, any values), so transposed,
//! sliced and broadcast views are multiplied without a copy of the caller's data: the AVX-512 path
//! packs them into its own layout anyway.

#[cfg(target_arch = "x86_64")]
mod amx;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "x86_64")]
mod blocking;
#[cfg(target_arch = "x86_64")]
mod pack;
mod portable;
mod route;
#[cfg(target_arch = "x86_64")]
mod transpose;
pub(super) mod units;

pub use route::Route;
pub use units::amx_peak_loop;
use units::{amx_detected, avx512_bf16_detected};

use std::cell::Cell;

use half::bf16;

use super::isa::{self, CpuIsa};
use crate::error::{Error, Result};

/// Which instruction set does the work for a bf16 matmul.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bf16Kernel {
    /// AMX tiles (`tdpbf16ps`), packed and cache-blocked like `Avx512Bf16`, on the same threads.
    Amx,
    /// `vdpbf16ps` (AVX512_BF16), packed and cache-blocked, on as many threads as rayon's pool
    /// has (so one setting sizes this and `gemm`).
    Avx512Bf16,
    /// bf16 widened to f32, multiplied by `gemm` in f32, rounded back.
    PortableF32,
}

impl Bf16Kernel {
    /// The name the trace records.
    pub fn name(self) -> &'static str {
        match self {
            Bf16Kernel::Amx => "amx_bf16",
            Bf16Kernel::Avx512Bf16 => "avx512_bf16",
            Bf16Kernel::PortableF32 => "portable-f32",
        }
    }

    /// Whether this CPU can run the kernel.
    pub fn is_available(self) -> bool {
        match self {
            Bf16Kernel::PortableF32 => true,
            Bf16Kernel::Avx512Bf16 => avx512_bf16_detected(),
            Bf16Kernel::Amx => amx_detected(),
        }
    }

    /// Every kernel, fastest first.
    pub const ALL: [Bf16Kernel; 3] = [Bf16Kernel::Amx, Bf16Kernel::Avx512Bf16, Bf16Kernel::PortableF32];

    /// The fastest kernel our code may use at `level` (`CS336_CPU_ISA`) on this CPU.
    pub fn best_within(level: CpuIsa) -> Bf16Kernel {
        match level {
            CpuIsa::Amx if amx_detected() => Bf16Kernel::Amx,
            CpuIsa::Amx | CpuIsa::Avx512 if avx512_bf16_detected() => Bf16Kernel::Avx512Bf16,
            _ => Bf16Kernel::PortableF32,
        }
    }

    /// The fastest kernel this CPU supports.
    pub fn detect() -> Bf16Kernel {
        if amx_detected() {
            Bf16Kernel::Amx
        } else if avx512_bf16_detected() {
            Bf16Kernel::Avx512Bf16
        } else {
            Bf16Kernel::PortableF32
        }
    }
}

thread_local! {
    static OVERRIDE: Cell<Option<Bf16Kernel>> = const { Cell::new(None) };
}

/// The kernel `Tensor::matmul` uses for bf16 on this thread: the one `with_kernel` chose, else
/// the route measured for the instruction-set level (`CS336_CPU_ISA`, see `isa.rs`): the fastest
/// kernel the level allows, unless widening to float32 is faster on this CPU (`route.rs`). Fails
/// where `CS336_CPU_ISA` names no level or one this CPU lacks.
pub fn current_kernel() -> Result<Bf16Kernel> {
    if let Some(kernel) = OVERRIDE.with(|o| o.get()) {
        return Ok(kernel);
    }
    Ok(route::kernel_at(isa::current()?))
}

/// The route bf16 matmuls take on this thread, with the sentence that says why.
pub fn current_route() -> Result<Route> {
    if let Some(kernel) = OVERRIDE.with(|o| o.get()) {
        return Ok(Route {
            kernel,
            reason: format!("the caller forced the {} kernel", kernel.name()),
        });
    }
    Ok(route::at(isa::current()?))
}

/// The fastest bf16 kernel this thread's level allows, whether or not it is the faster route:
/// what the CPU offers, which names its trace (a route decided by timing must not rename it).
pub fn offered_kernel() -> Result<Bf16Kernel> {
    if let Some(kernel) = OVERRIDE.with(|o| o.get()) {
        return Ok(kernel);
    }
    Ok(Bf16Kernel::best_within(isa::current()?))
}

/// Runs `f` with bf16 matmuls on this thread forced to `kernel` (tests use it to exercise both
/// paths through the tensor layer on any CPU), whatever `CS336_CPU_ISA` says. Fails if the CPU
/// cannot run `kernel`.
pub fn with_kernel<R>(kernel: Bf16Kernel, f: impl FnOnce() -> R) -> Result<R> {
    require(kernel)?;
    struct Restore(Option<Bf16Kernel>);
    impl Drop for Restore {
        fn drop(&mut self) {
            OVERRIDE.with(|o| o.set(self.0));
        }
    }
    let _restore = Restore(OVERRIDE.with(|o| o.replace(Some(kernel))));
    Ok(f())
}

fn require(kernel: Bf16Kernel) -> Result<()> {
    if kernel.is_available() {
        Ok(())
    } else {
        let needs = match kernel {
            Bf16Kernel::Amx => "AMX-BF16 (granted by the OS) and AVX512_BF16",
            _ => "AVX512_BF16",
        };
        Err(Error::invalid(
            "matmul",
            format!(
                "the {} bf16 kernel needs a CPU with {needs}, and this one lacks it",
                kernel.name()
            ),
        ))
    }
}

/// One matrix inside a buffer: where element (0, 0) is and the (row, column) strides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Operand {
    pub offset: usize,
    pub rs: isize,
    pub cs: isize,
}

impl Operand {
    /// Storage position of element (i, j); callers keep i, j inside the matrix.
    #[inline(always)]
    fn at(&self, i: usize, j: usize) -> usize {
        (self.offset as isize + i as isize * self.rs + j as isize * self.cs) as usize
    }

    /// Checks that every element of a rows × cols matrix lies inside a buffer of `len`.
    fn check(&self, what: &str, rows: usize, cols: usize, len: usize) -> Result<()> {
        if rows == 0 || cols == 0 {
            return Ok(());
        }
        let corners = [(0, 0), (rows - 1, 0), (0, cols - 1), (rows - 1, cols - 1)];
        for (i, j) in corners {
            let pos = self.offset as i128 + i as i128 * self.rs as i128 + j as i128 * self.cs as i128;
            if pos < 0 || pos >= len as i128 {
                return Err(Error::invalid(
                    "matmul",
                    format!("{what} ({rows}×{cols}, {self:?}) reaches outside its storage of {len} elements"),
                ));
            }
        }
        Ok(())
    }
}

/// A batched product: `pairs[i]` = (lhs, rhs) of output matrix i; each lhs is m×k, each rhs k×n.
#[derive(Debug, Clone)]
pub struct Problem<'a> {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a: &'a [bf16],
    pub b: &'a [bf16],
    pub pairs: &'a [(Operand, Operand)],
}

/// Multiplies every pair with `kernel`; the result holds the m×n row-major outputs one after the
/// other. Fails if an operand reaches outside its buffer or the CPU lacks the kernel.
pub fn matmul(kernel: Bf16Kernel, p: &Problem<'_>) -> Result<Vec<bf16>> {
    require(kernel)?;
    p.check()?;
    Ok(match kernel {
        Bf16Kernel::PortableF32 => portable::matmul(p),
        #[cfg(target_arch = "x86_64")]
        Bf16Kernel::Avx512Bf16 => avx512::matmul(p),
        #[cfg(target_arch = "x86_64")]
        Bf16Kernel::Amx => amx::matmul(p),
        #[cfg(not(target_arch = "x86_64"))]
        Bf16Kernel::Avx512Bf16 | Bf16Kernel::Amx => unreachable!("require() rejects AVX-512 and AMX off x86-64"),
    })
}

impl Problem<'_> {
    fn check(&self) -> Result<()> {
        for (oa, ob) in self.pairs {
            oa.check("lhs", self.m, self.k, self.a.len())?;
            ob.check("rhs", self.k, self.n, self.b.len())?;
        }
        Ok(())
    }
}
