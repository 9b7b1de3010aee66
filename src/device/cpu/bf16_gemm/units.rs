//! Whether this CPU has each bf16 unit, and the AMX peak loop: what the peak loops
//! (`fma_loops.rs`) ask of the bf16 kernels, apart from the kernels' routing, which asks the
//! peak loops in turn (`route.rs`).

#[cfg(target_arch = "x86_64")]
use super::amx;

/// AVX512_BF16, with the AVX-512 parts its packing and stores use.
pub(super) fn avx512_bf16_detected() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        // The packing and stores also use AVX512BW (16-bit masked stores).
        is_x86_feature_detected!("avx512bf16")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// AMX tiles, and AVX512_BF16 for rounding and storing the sums (every AMX CPU has it). The first
/// call asks the OS for the tile state.
pub(in crate::device::cpu) fn amx_detected() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        avx512_bf16_detected() && amx::available()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `iters` rounds of 16 independent AMX `tdpbf16ps` instructions, for the peak measurement; None
/// where this CPU (or OS) offers no AMX.
pub fn amx_peak_loop(iters: u64) -> Option<f32> {
    #[cfg(target_arch = "x86_64")]
    {
        amx::peak_loop(iters)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = iters;
        None
    }
}
