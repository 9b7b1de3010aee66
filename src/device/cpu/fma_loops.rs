//! The peak loops: each runs rounds of independent multiply-adds (enough chains to hide the
//! instruction's latency) on one instruction set, so nothing a matmul does on that instruction
//! set can beat it. `measured_peak.rs` times them on every core.

/// One loop per instruction set our code or `gemm` can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PeakLoop {
    /// Plain Rust over float32 arrays, vectorised by LLVM for the build target.
    PortableFma,
    /// `vfmadd231ps ymm`: AVX2 with FMA, 8 float32 lanes.
    Avx2Fma,
    /// `vfmadd231ps zmm`: AVX-512F, 16 float32 lanes.
    Avx512Fma,
    /// `vdpbf16ps zmm`: AVX512_BF16, 32 bf16 pairs into 16 float32 lanes.
    Avx512Bf16,
    /// `tdpbf16ps`: AMX-BF16 tile products.
    AmxBf16,
}

/// `iters` rounds of the loop; returns a sum of its results so the work cannot be dropped.
pub type Kernel = fn(u64) -> f32;

/// Independent accumulators in the AVX-512 and AMX loops (AVX-512 has 32 registers).
pub const CHAINS: usize = 16;
/// Independent accumulators in the AVX2 loop: with its two operands they fill 14 of the 16 ymm
/// registers. 16 chains spilled two of them to memory in every round, and the loop measured half
/// the FMA rate; 12 still hide the FMA latency (4 cycles on 2 pipes needs 8).
pub const AVX2_CHAINS: usize = 12;

/// The portable loop's accumulators: chains of 4 float32 lanes (one 128-bit register each), as
/// many as fit in the vector registers with the two operands. On aarch64, 24 chains are 24 of the
/// 32 NEON registers (enough to keep four FMA pipes of latency 4 busy); elsewhere 12 chains are 12
/// of baseline x86-64's 16 xmm registers (more spill to memory, measured slower).
pub const PORTABLE_LANES: usize = 4;
#[cfg(target_arch = "aarch64")]
pub const PORTABLE_CHAINS: usize = 24;
#[cfg(not(target_arch = "aarch64"))]
pub const PORTABLE_CHAINS: usize = 12;

impl PeakLoop {
    pub const ALL: [PeakLoop; 5] = [
        PeakLoop::PortableFma,
        PeakLoop::Avx2Fma,
        PeakLoop::Avx512Fma,
        PeakLoop::Avx512Bf16,
        PeakLoop::AmxBf16,
    ];

    /// The name the trace records.
    pub fn name(self) -> &'static str {
        match self {
            PeakLoop::PortableFma => "portable_fma",
            PeakLoop::Avx2Fma => "avx2_fma",
            PeakLoop::Avx512Fma => "avx512_fma",
            PeakLoop::Avx512Bf16 => "avx512_bf16",
            PeakLoop::AmxBf16 => "amx_bf16",
        }
    }

    /// The instruction in the loop, in words.
    pub fn instruction(self) -> &'static str {
        match self {
            PeakLoop::PortableFma => PORTABLE_INSTRUCTION,
            PeakLoop::Avx2Fma => "vfmadd231ps ymm (AVX2+FMA, 8 fp32 lanes)",
            PeakLoop::Avx512Fma => "vfmadd231ps zmm (AVX-512F, 16 fp32 lanes)",
            PeakLoop::Avx512Bf16 => "vdpbf16ps zmm (AVX512_BF16, 32 bf16 pairs into 16 fp32 lanes)",
            PeakLoop::AmxBf16 => "tdpbf16ps (AMX-BF16, a 16×32 by 32×16 bf16 tile product into 16×16 fp32 sums)",
        }
    }

    /// FLOPs one round of the loop does.
    pub fn flop_per_round(self) -> u64 {
        self.chains() as u64 * self.flop_per_instruction()
    }

    /// Independent vector accumulators per round (for the portable loop: chains of 4 lanes).
    pub fn chains(self) -> usize {
        match self {
            PeakLoop::PortableFma => PORTABLE_CHAINS,
            PeakLoop::Avx2Fma => AVX2_CHAINS,
            _ => CHAINS,
        }
    }

    /// FLOPs of one vector instruction, for the textbook formula. For the portable loop: one
    /// multiply-add on a chain of 4 lanes (one 128-bit register: SSE2 and NEON).
    pub fn flop_per_instruction(self) -> u64 {
        match self {
            PeakLoop::PortableFma => 8,
            PeakLoop::Avx2Fma => 16,
            PeakLoop::Avx512Fma => 32,
            PeakLoop::Avx512Bf16 => 64,
            PeakLoop::AmxBf16 => 16 * 16 * 32 * 2,
        }
    }

    /// The textbook issue rate per core, for the formula: one vector instruction per cycle, one
    /// AMX tile product every 16 cycles (Intel's optimisation manual, Sapphire Rapids).
    pub fn instructions_per_cycle(self) -> f64 {
        match self {
            PeakLoop::AmxBf16 => 1.0 / 16.0,
            _ => 1.0,
        }
    }

    /// Whether this CPU (and OS) can run the loop.
    pub fn is_available(self) -> bool {
        match self {
            PeakLoop::PortableFma => true,
            #[cfg(target_arch = "x86_64")]
            PeakLoop::Avx2Fma => is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"),
            #[cfg(target_arch = "x86_64")]
            PeakLoop::Avx512Fma => is_x86_feature_detected!("avx512f"),
            #[cfg(target_arch = "x86_64")]
            PeakLoop::Avx512Bf16 => is_x86_feature_detected!("avx512bf16") && is_x86_feature_detected!("avx512f"),
            PeakLoop::AmxBf16 => super::bf16_gemm::units::amx_detected(),
            #[cfg(not(target_arch = "x86_64"))]
            PeakLoop::Avx2Fma | PeakLoop::Avx512Fma | PeakLoop::Avx512Bf16 => false,
        }
    }

    /// The loop, or None where this CPU cannot run it.
    pub fn kernel(self) -> Option<Kernel> {
        if !self.is_available() {
            return None;
        }
        match self {
            PeakLoop::PortableFma => Some(portable_fma),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: AVX2 and FMA were detected just above (`is_available`).
            PeakLoop::Avx2Fma => Some(|n| unsafe { x86::fma_avx2(n) }),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: AVX-512F was detected just above.
            PeakLoop::Avx512Fma => Some(|n| unsafe { x86::fma_avx512(n) }),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: AVX512_BF16 and AVX-512F were detected just above.
            PeakLoop::Avx512Bf16 => Some(|n| unsafe { x86::dpbf16_avx512(n) }),
            PeakLoop::AmxBf16 => Some(|n| super::bf16_gemm::units::amx_peak_loop(n).unwrap_or(f32::NAN)),
            #[cfg(not(target_arch = "x86_64"))]
            PeakLoop::Avx2Fma | PeakLoop::Avx512Fma | PeakLoop::Avx512Bf16 => None,
        }
    }
}

/// Opaque to the optimiser, so the loops cannot be folded (1.0·0.999 + 0.001 is a fixed point
/// the compiler would otherwise see through).
fn opaque(x: f32) -> f32 {
    std::hint::black_box(x)
}

/// One multiply-add (2 FLOPs) into the accumulator `c`. Fused where the build target has a fused
/// multiply-add instruction (every aarch64 CPU; x86-64 only when built for FMA), as c + a·b: NEON's
/// `fmla` adds into its destination, so that form needs no register copies. Elsewhere `mul_add`
/// would be a slow library call, so c·a + b, a multiply and an add (c + a·b would let the
/// compiler hoist the loop-invariant product out of the loop).
#[inline(always)]
fn madd(c: f32, a: f32, b: f32) -> f32 {
    #[cfg(any(target_arch = "aarch64", target_feature = "fma"))]
    {
        a.mul_add(b, c)
    }
    #[cfg(not(any(target_arch = "aarch64", target_feature = "fma")))]
    {
        c * a + b
    }
}

#[cfg(target_arch = "aarch64")]
const PORTABLE_INSTRUCTION: &str =
    "multiply-adds on float32 arrays in plain Rust, vectorised by LLVM for aarch64 (NEON fmla, 4 fp32 lanes)";
#[cfg(all(target_arch = "x86_64", target_feature = "fma"))]
const PORTABLE_INSTRUCTION: &str =
    "multiply-adds on float32 arrays in plain Rust, vectorised by LLVM for the build target (x86-64 with FMA)";
#[cfg(all(target_arch = "x86_64", not(target_feature = "fma")))]
const PORTABLE_INSTRUCTION: &str = "multiply-adds on float32 arrays in plain Rust, vectorised by LLVM for baseline x86-64 (SSE2 mulps and addps, 4 fp32 lanes)";
#[cfg(not(any(target_arch = "aarch64", target_arch = "x86_64")))]
const PORTABLE_INSTRUCTION: &str =
    "multiply-adds on float32 arrays in plain Rust, vectorised by LLVM for the build target";

/// The portable loop: plain Rust, no intrinsics. Each chain is a fixed-size array of lanes, so
/// LLVM keeps it in one vector register (or several, on wider targets) and multiplies and adds
/// whole registers.
fn portable_fma(iters: u64) -> f32 {
    let (a, b) = (opaque(0.999), opaque(0.001));
    // Every lane its own starting value: identical lanes would let the compiler merge chains.
    let mut acc: [[f32; PORTABLE_LANES]; PORTABLE_CHAINS] =
        std::array::from_fn(|i| std::array::from_fn(|l| opaque(1.0 + (i * PORTABLE_LANES + l) as f32 / 1024.0)));
    for _ in 0..iters {
        for chain in acc.iter_mut() {
            for c in chain.iter_mut() {
                *c = madd(*c, a, b);
            }
        }
    }
    // Summed after an opaque copy: a sum over the live accumulators made LLVM lay the loop's
    // vectors out across chains and shuffle them in every round, three times slower.
    let acc = std::hint::black_box(acc);
    acc.iter().flatten().sum()
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{AVX2_CHAINS, CHAINS, opaque};
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx512f")]
    pub fn fma_avx512(iters: u64) -> f32 {
        let (a, b) = (_mm512_set1_ps(opaque(0.999)), _mm512_set1_ps(opaque(0.001)));
        let mut acc = [_mm512_set1_ps(opaque(1.0)); CHAINS];
        for _ in 0..iters {
            for c in acc.iter_mut() {
                *c = _mm512_fmadd_ps(*c, a, b);
            }
        }
        let mut sum = _mm512_setzero_ps();
        for c in acc {
            sum = _mm512_add_ps(sum, c);
        }
        _mm512_reduce_add_ps(sum)
    }

    #[target_feature(enable = "avx512bf16,avx512f")]
    pub fn dpbf16_avx512(iters: u64) -> f32 {
        let half = _mm512_set1_ps(opaque(0.5));
        let (a, b) = (_mm512_cvtne2ps_pbh(half, half), _mm512_cvtne2ps_pbh(half, half));
        let mut acc = [_mm512_set1_ps(opaque(0.0)); CHAINS];
        for _ in 0..iters {
            for c in acc.iter_mut() {
                *c = _mm512_dpbf16_ps(*c, a, b);
            }
        }
        let mut sum = _mm512_setzero_ps();
        for c in acc {
            sum = _mm512_add_ps(sum, c);
        }
        _mm512_reduce_add_ps(sum)
    }

    #[target_feature(enable = "avx2,fma")]
    pub fn fma_avx2(iters: u64) -> f32 {
        let (a, b) = (_mm256_set1_ps(opaque(0.999)), _mm256_set1_ps(opaque(0.001)));
        let mut acc = [_mm256_set1_ps(opaque(1.0)); AVX2_CHAINS];
        for _ in 0..iters {
            for c in acc.iter_mut() {
                *c = _mm256_fmadd_ps(*c, a, b);
            }
        }
        let mut out = [0f32; 8];
        let mut sum = _mm256_setzero_ps();
        for c in acc {
            sum = _mm256_add_ps(sum, c);
        }
        // SAFETY: `out` has room for 8 floats; storeu has no alignment requirement.
        unsafe { _mm256_storeu_ps(out.as_mut_ptr(), sum) };
        out.iter().sum()
    }
}

/// CPU time this thread has run for: time-slicing by other processes does not count, so a
/// trial on a busy machine still measures what a core does while it runs our loop.
#[cfg(unix)]
pub(crate) fn thread_cpu_time() -> Option<std::time::Duration> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec for the call to fill in.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

#[cfg(not(unix))]
pub(crate) fn thread_cpu_time() -> Option<std::time::Duration> {
    None
}
