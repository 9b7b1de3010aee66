//! The memory's speed on this CPU, measured STREAM-style: a copy (read a buffer, write another)
//! and a read (sum a buffer), on every thread the lecture uses, at three sizes: one that fits in
//! each core's L2, one that fits in the last-level cache, and one several times larger than it
//! (main memory). A CPU has a roof per level, and an operation whose bytes fit in a cache runs
//! at that cache's speed, not at the memory's.
//!
//! Bytes are counted as STREAM counts them: a copy of n bytes moves 2n (read + write), a read n.
//! (A cached store first reads its line, so the copy's hardware traffic can be 3n; glibc's
//! `memcpy` uses non-temporal stores for large copies, which skip that read.)

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};

use super::matmul::Shared;
use super::team::{Team, claim};
use crate::error::{Error, Result};
use crate::timing::{self, Budget, Clock, Timing};

/// The cache sizes the sizes are chosen from, read from the OS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caches {
    /// One core's L2, bytes.
    pub l2_bytes: usize,
    /// The last-level cache (shared), bytes.
    pub llc_bytes: usize,
}

/// This CPU's L2 and last-level cache, as the OS reports them (`host::caches`), or an error
/// that says the sizes are unknown.
pub fn caches() -> Result<Caches> {
    let c = crate::host::caches().ok_or_else(|| {
        Error::invalid(
            "memory bandwidth",
            "cannot read this CPU's cache sizes (/sys/devices/system/cpu/cpu0/cache lists no L2 data cache)",
        )
    })?;
    let bytes = |b: u64| usize::try_from(b).unwrap_or(usize::MAX);
    Ok(Caches {
        l2_bytes: bytes(c.l2_bytes),
        llc_bytes: bytes(c.llc_bytes),
    })
}

/// Where a working set lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    L2,
    Llc,
    Dram,
}

impl Level {
    pub const ALL: [Level; 3] = [Level::L2, Level::Llc, Level::Dram];

    pub fn name(self) -> &'static str {
        match self {
            Level::L2 => "L2",
            Level::Llc => "LLC",
            Level::Dram => "DRAM",
        }
    }

    /// The level `bytes` touched by `threads` threads fit in: L2 when each thread's share fits in
    /// half of its core's L2, the last-level cache when the whole fits in half of it (the rest
    /// holds everything else a program keeps warm), else main memory.
    pub fn of(bytes: usize, threads: usize, caches: Caches) -> Level {
        if bytes / threads.max(1) <= caches.l2_bytes / 2 {
            Level::L2
        } else if bytes <= caches.llc_bytes / 2 {
            Level::Llc
        } else {
            Level::Dram
        }
    }

    /// Bytes a buffer of this level's measurement touches in all (sources and destinations).
    pub fn touched_bytes(self, threads: usize, caches: Caches) -> usize {
        match self {
            Level::L2 => threads.max(1) * caches.l2_bytes / 4,
            Level::Llc => caches.llc_bytes / 4,
            // Four times the LLC, and at least 256 MiB, so that no cache holds a useful part.
            Level::Dram => (4 * caches.llc_bytes).max(256 << 20),
        }
    }
}

/// A STREAM kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// `dst[i] = src[i]`: 2 bytes moved per byte copied.
    Copy,
    /// `Σ src[i]`: 1 byte moved per byte read.
    Read,
}

/// One measured bandwidth.
#[derive(Debug, Clone)]
pub struct Measured {
    pub bytes_per_sec: f64,
    /// Bytes counted per call (STREAM's count).
    pub bytes_per_call: usize,
    pub threads: usize,
    pub timing: Timing,
}

/// Parts of a buffer per thread: small enough to share out when a thread is missing, large
/// enough that claiming costs nothing.
const PARTS_PER_THREAD: usize = 4;

/// Times `stream` over buffers that touch `touched` bytes in all, on `threads` threads.
pub fn measure(stream: Stream, touched: usize, threads: usize, budget: Budget) -> Result<Measured> {
    let threads = threads.max(1);
    // Bytes counted per byte of source: a copy reads and writes it.
    let moved = match stream {
        Stream::Copy => 2,
        Stream::Read => 1,
    };
    let floats = touched / moved / 4;
    // Whole 64-float blocks per part, so that every part runs the vector loop only.
    let parts = threads * PARTS_PER_THREAD;
    let per_part = (floats / parts / 64).max(1) * 64;
    let n = per_part * parts;
    let bytes_per_call = n * 4 * moved;
    super::check_bytes("memory bandwidth", bytes_per_call as u128)?;
    // Written once before timing: the first touch takes each page's fault.
    let src: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 1e-3).collect();
    let mut dst = vec![0f32; if stream == Stream::Copy { n } else { 0 }];
    let out = Shared(dst.as_mut_ptr());
    let sink = AtomicUsize::new(0);
    let mut call = || -> Result<()> {
        in_parts(threads, parts, &|p| {
            let range = p * per_part..(p + 1) * per_part;
            match stream {
                Stream::Copy => {
                    // SAFETY: each part is claimed once, inside `dst`, so the slices never overlap;
                    // `dst` outlives the call.
                    let d = unsafe { std::slice::from_raw_parts_mut(out.get().add(range.start), per_part) };
                    d.copy_from_slice(&src[range]);
                }
                Stream::Read => {
                    // Kept, so that the compiler cannot drop the sum.
                    sink.fetch_add(sum(&src[range]).to_bits() as usize & 1, Relaxed);
                }
            }
        });
        Ok(())
    };
    let timing = timing::in_turns(budget, &mut [&mut timing::contender(Clock::Host, &mut call)])?[0];
    std::hint::black_box((&dst, sink.load(Relaxed)));
    Ok(Measured {
        bytes_per_sec: bytes_per_call as f64 / timing.median_s,
        bytes_per_call,
        threads,
        timing,
    })
}

/// Runs `work(part)` for every part below `parts`, on `threads` threads of the matmuls' team.
/// Each thread first takes the parts that are its own (`thread + k·threads`), so that a part
/// stays with one core from call to call (its L2 keeps it), then helps with what is left.
pub(super) fn in_parts(threads: usize, parts: usize, work: &(dyn Fn(usize) + Sync)) {
    let taken: Vec<AtomicBool> = (0..parts).map(|_| AtomicBool::new(false)).collect();
    let next = AtomicUsize::new(0);
    let take = |p: usize| !taken[p].swap(true, Relaxed);
    Team::global().run(threads, &|me| {
        for p in (me..parts).step_by(threads) {
            if take(p) {
                work(p);
            }
        }
        while let Some(p) = claim(&next, parts) {
            if take(p) {
                work(p);
            }
        }
    });
}

/// A sum with 64 independent lanes, which the compiler keeps in vector registers: the read is
/// limited by the memory, not by the latency of one long chain of additions.
pub(super) fn sum(x: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F (checked just above).
        return unsafe { sum_avx512(x) };
    }
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { sum_avx2(x) };
    }
    sum_lanes(x)
}

#[inline(always)]
fn sum_lanes(x: &[f32]) -> f32 {
    let mut acc = [0f32; 64];
    let mut blocks = x.chunks_exact(64);
    for block in &mut blocks {
        for (a, v) in acc.iter_mut().zip(block) {
            *a += v;
        }
    }
    acc.iter().sum::<f32>() + blocks.remainder().iter().sum::<f32>()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn sum_avx512(x: &[f32]) -> f32 {
    sum_lanes(x)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn sum_avx2(x: &[f32]) -> f32 {
    sum_lanes(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn working_sets_land_in_the_level_they_fit() {
        let caches = Caches {
            l2_bytes: 2 << 20,
            llc_bytes: 32 << 20,
        };
        assert_eq!(Level::of(1 << 20, 1, caches), Level::L2);
        assert_eq!(Level::of(3 << 20, 1, caches), Level::Llc);
        assert_eq!(Level::of(3 << 20, 4, caches), Level::L2);
        assert_eq!(Level::of(17 << 20, 2, caches), Level::Dram);
        for level in Level::ALL {
            for threads in [1, 2] {
                assert_eq!(Level::of(level.touched_bytes(threads, caches), threads, caches), level);
            }
        }
    }

    #[test]
    fn every_part_is_done_once_whatever_the_threads() {
        for (threads, parts) in [(1, 4), (2, 8), (3, 7), (8, 2)] {
            let done: Vec<AtomicUsize> = (0..parts).map(|_| AtomicUsize::new(0)).collect();
            in_parts(threads, parts, &|p| {
                done[p].fetch_add(1, Relaxed);
            });
            assert!(
                done.iter().all(|d| d.load(Relaxed) == 1),
                "{threads} threads, {parts} parts"
            );
        }
    }

    #[test]
    fn the_read_sums_and_the_copy_copies() {
        let x: Vec<f32> = (0..1000).map(|i| i as f32).collect();
        assert_eq!(sum(&x), 499_500.0);
        assert_eq!(sum_lanes(&x[..3]), 3.0);
        let m = measure(Stream::Copy, 1 << 20, 2, Budget::count(0, 2)).unwrap();
        assert_eq!(m.bytes_per_call, 1 << 20);
        assert!(m.bytes_per_sec > 0.0 && m.timing.reps == 2);
    }
}
