//! Keeping freed memory for the next training step.
//!
//! A training step frees its activations and gradients and the next one allocates the same sizes
//! again. glibc's malloc serves blocks over its threshold (128 KiB to start with) straight from
//! the OS with `mmap`, and gives a freed heap top back once it exceeds another threshold, so each
//! step's megabyte-sized tensors came back as fresh pages: a page fault and a page of zeros from
//! the kernel for every 4 KiB written. `bench train-step` measured the cost (Intel Xeon with AMX,
//! 2 threads, Cruncher 1024×4, batch 256): a 21.6 ms step took 17.9–18.3 ms with freed memory
//! kept, and the AdaGrad update fell from 2.0 to 1.2 ms. PyTorch keeps freed GPU memory in its
//! caching allocator for the same reason; on the CPU we ask glibc to keep it.

/// The largest block glibc lets `mmap` take over (its documented maximum on 64-bit): everything
/// smaller comes from the heap, and freed blocks are reused.
const MMAP_THRESHOLD: i32 = 32 << 20;
/// Freed memory at the top of the heap is given back only above this (1 GiB).
const TRIM_THRESHOLD: i32 = 1 << 30;

/// Asks the C allocator to keep freed memory for reuse; call once, early (the lecture and the
/// benchmarks do, from `main`). Fails, saying why, where the allocator offers no such setting:
/// memory is then given back as before, and timings include the page faults.
pub fn keep_freed_memory() -> Result<(), String> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        for (name, param, value) in [
            ("M_MMAP_THRESHOLD", libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD),
            ("M_TRIM_THRESHOLD", libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD),
        ] {
            // SAFETY: mallopt takes two integers and returns 0 on a value it refuses.
            if unsafe { libc::mallopt(param, value) } == 0 {
                return Err(format!("glibc refused mallopt({name}, {value})"));
            }
        }
        Ok(())
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        let _ = (MMAP_THRESHOLD, TRIM_THRESHOLD);
        Err("the C allocator here is not glibc's, which is the one whose freed memory we know how to keep".into())
    }
}

/// Asks Linux to back the 2 MiB-aligned interior of a fresh buffer with huge pages (this
/// machine's setting is `madvise`: only where asked); the bf16 kernels' packing scratch and large
/// elementwise outputs use it. A packed panel of a large product spans
/// hundreds of 4 KiB pages that the tile loads walk across; with 2 MiB pages the TLB covers
/// them. Measured on the Intel Xeon with AMX, 2 threads, in three alternating pairs of runs:
/// 2048³ bf16 at 2.19–2.26 TFLOP/s against 2.03–2.16 without. Advice only: where the kernel
/// declines, nothing changes.
pub(crate) fn huge_pages(ptr: *mut u8, bytes: usize) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = (ptr as usize).next_multiple_of(HUGE);
        let end = (ptr as usize + bytes) / HUGE * HUGE;
        if end > start {
            // SAFETY: the range lies inside the caller's live allocation; the advice changes
            // how its pages are backed, not their contents (none are written yet).
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// glibc takes both settings (a refused one would leave the benchmarks paying page faults
    /// every step without a word).
    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn glibc_keeps_freed_memory() {
        keep_freed_memory().expect("glibc takes both thresholds");
    }
}
