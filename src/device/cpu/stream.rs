//! The memory hierarchy of this CPU, measured: STREAM's four kernels (copy, scale, add, triad) and a
//! read (a sum), from 4 KiB up to beyond the largest cache, doubling, on one thread and on all of
//! the lecture's. `device::hierarchy` reads the levels off the curves.
//!
//! Bytes are counted as STREAM counts them: each element of each array a kernel touches, once
//! (a copy of n floats: 8n bytes). A cached store first reads its line, so the hardware moves more
//! than that for the four kernels that write; the read has no store.
//!
//! At small sizes one pass takes less time than waking a thread, so a timed call repeats the
//! pass until it has moved about [`CALL_BYTES`]: the curve shows the memory, not the call. (The
//! lecture's operations, timed one call at a time, show the call; that is the difference between
//! the two charts.)

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

use super::team::Shared;
use super::team::{Team, claim};
use crate::device::hierarchy::Point;
use crate::error::{Error, Result};
use crate::timing::{self, Budget, Clock, Timing};

/// A STREAM kernel, or the read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// `c = a`.
    Copy,
    /// `b = s·c`.
    Scale,
    /// `c = a + b`.
    Add,
    /// `a = b + s·c`.
    Triad,
    /// `Σ a`.
    Read,
}

impl Kernel {
    pub const ALL: [Kernel; 5] = [Kernel::Copy, Kernel::Scale, Kernel::Add, Kernel::Triad, Kernel::Read];

    pub fn name(self) -> &'static str {
        match self {
            Kernel::Copy => "copy",
            Kernel::Scale => "scale",
            Kernel::Add => "add",
            Kernel::Triad => "triad",
            Kernel::Read => "read",
        }
    }

    /// Arrays of n floats one pass touches.
    fn arrays(self) -> usize {
        match self {
            Kernel::Copy | Kernel::Scale => 2,
            Kernel::Add | Kernel::Triad => 3,
            Kernel::Read => 1,
        }
    }
}

/// One kernel on one thread count, at every size.
#[derive(Debug, Clone)]
pub struct Curve {
    pub kernel: Kernel,
    pub threads: usize,
    pub points: Vec<Point>,
}

/// The smallest size: a page.
pub const SMALLEST: usize = 4 << 10;
/// A timed call repeats its pass until it has moved this much (8 MiB: tens of microseconds in
/// a cache, against a few for waking the threads).
pub const CALL_BYTES: usize = 8 << 20;
/// From this size on (larger than the last-level cache of most CPUs, or a VM's share of it), a
/// point's calls are timed without a warm-up call.
const NO_WARM_UP_FROM: usize = 256 << 20;
/// The scalar of scale and triad: with it, the values stay near their start however often the
/// kernels run in turn (each round multiplies `a` by 1.25 at most).
const S: f32 = 0.5;

/// The sweep's timing: a few calls per size, after one untimed call that brings the buffers
/// into the level being measured. 190 curve points have to fit in a few seconds.
pub fn sweep_budget() -> Budget {
    Budget {
        warmup: 1,
        warmup_time: Duration::ZERO,
        min_samples: 3,
        min_time: Duration::from_millis(5),
        max_samples: 10_000,
        block: Duration::from_millis(2),
        settle: Duration::ZERO,
    }
}

/// The largest size: four times the largest reported cache, so that no cache holds a useful
/// part of it, and at least 64 MiB; at most a sixteenth of the memory available now (the
/// buffers take twice the size, and the rest of the run needs room).
pub fn largest_size(largest_cache: u64, available: Option<u64>) -> usize {
    let wanted = largest_cache.saturating_mul(4).max(64 << 20);
    let room = available.map_or(wanted, |a| a / 16);
    usize::try_from(wanted.min(room).max(SMALLEST as u64)).unwrap_or(usize::MAX)
}

/// Sizes from [`SMALLEST`], doubling, and `largest` last (a doubling within √2 of it is left out).
pub fn sizes(largest: usize) -> Vec<usize> {
    let mut sizes: Vec<usize> = std::iter::successors(Some(SMALLEST), |&s| s.checked_mul(2))
        .take_while(|&s| (s as f64) * std::f64::consts::SQRT_2 <= largest as f64)
        .collect();
    sizes.push(largest.max(SMALLEST));
    sizes
}

/// The three arrays, sized for the largest working set and written once before any timing (the
/// first write to each page takes its fault).
pub struct Buffers {
    a: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
}

impl Buffers {
    pub fn new(largest: usize) -> Result<Buffers> {
        // The read's one array holds the whole working set; copy and scale use half of it in each
        // of two arrays, add and triad a third in each of three.
        super::check_bytes("memory hierarchy", 2 * largest as u128)?;
        let fill = |n: usize| (0..n).map(|i| (i % 1000) as f32 * 1e-3 + 1.0).collect::<Vec<f32>>();
        Ok(Buffers {
            a: fill(largest / 4),
            b: fill(largest / 8),
            c: fill(largest / 8),
        })
    }

    /// Times `kernel` on a working set of about `bytes` (the largest whole number of floats per
    /// array that fits), on `threads` threads. Returns the point at the bytes actually touched.
    pub fn measure(&mut self, kernel: Kernel, bytes: usize, threads: usize, budget: Budget) -> Result<Point> {
        let threads = threads.max(1);
        let n = bytes / 4 / kernel.arrays();
        if n == 0 || n > self.b.len() && kernel != Kernel::Read || n > self.a.len() {
            return Err(Error::invalid(
                "memory hierarchy",
                format!("{bytes} bytes is not a size the buffers hold for {}", kernel.name()),
            ));
        }
        let touched = n * 4 * kernel.arrays();
        let passes = CALL_BYTES.div_ceil(touched).max(1);
        // Whole 16-float vectors per thread, the last thread taking what is left.
        let per_thread = (n / threads).div_ceil(16) * 16;
        let (a, b, c) = (
            Shared(self.a.as_mut_ptr()),
            Shared(self.b.as_mut_ptr()),
            Shared(self.c.as_mut_ptr()),
        );
        let mut sink = 0f32;
        let mut call = || -> Result<()> {
            let sums = std::sync::Mutex::new(0f32);
            in_parts(threads, threads, &|part| {
                let lo = (part * per_thread).min(n);
                let len = per_thread.min(n - lo);
                // SAFETY: parts cover disjoint ranges below `n`, each claimed once, and `n` fits
                // every array the kernel touches (checked above); the buffers outlive the call.
                let (a, b, c) = unsafe {
                    let slice = |p: Shared<*mut f32>| std::slice::from_raw_parts_mut(p.get().add(lo), len);
                    (
                        slice(a),
                        if kernel == Kernel::Read { &mut [][..] } else { slice(b) },
                        if kernel == Kernel::Read { &mut [][..] } else { slice(c) },
                    )
                };
                let total = pass(kernel, passes, a, b, c);
                *sums.lock().unwrap_or_else(std::sync::PoisonError::into_inner) += total;
            });
            sink += sums.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
            Ok(())
        };
        let timing = timing::in_turns(budget, &mut [&mut timing::contender(Clock::Host, &mut call)])?[0];
        std::hint::black_box(sink);
        Ok(point(touched * passes, touched, &timing))
    }
}

/// A point of `touched` bytes whose calls each moved `moved`.
fn point(moved: usize, touched: usize, t: &Timing) -> Point {
    Point {
        bytes: touched,
        bytes_per_sec: moved as f64 / t.median_s,
        best_bytes_per_sec: moved as f64 / t.min_s,
        spread: t.spread(),
    }
}

/// Every kernel on every thread count in `threads`, at every size up to `largest`: kernels take
/// turns at each size, so that a busy moment of the machine shows as one bumpy size, not as one
/// kernel slower than the rest.
pub fn measure(threads: &[usize], largest: usize, budget: Budget) -> Result<Vec<Curve>> {
    let mut buffers = Buffers::new(largest)?;
    let mut curves: Vec<Curve> = (threads.iter())
        .flat_map(|&t| {
            Kernel::ALL.map(|kernel| Curve {
                kernel,
                threads: t,
                points: Vec::new(),
            })
        })
        .collect();
    for size in sizes(largest) {
        // Beyond every cache a warm-up call warms nothing: it only takes time.
        let budget = match size >= NO_WARM_UP_FROM {
            true => Budget { warmup: 0, ..budget },
            false => budget,
        };
        for curve in &mut curves {
            curve
                .points
                .push(buffers.measure(curve.kernel, size, curve.threads, budget)?);
        }
    }
    Ok(curves)
}

/// `passes` passes of `kernel` over equal-length slices (the read uses `a` only), the
/// instruction set chosen once for all of them; returns the reads' sum.
fn pass(kernel: Kernel, passes: usize, a: &mut [f32], b: &mut [f32], c: &mut [f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F (checked just above).
        return unsafe { pass_avx512(kernel, passes, a, b, c) };
    }
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { pass_avx2(kernel, passes, a, b, c) };
    }
    pass_lanes(kernel, passes, a, b, c)
}

#[inline(always)]
fn pass_lanes(kernel: Kernel, passes: usize, a: &mut [f32], b: &mut [f32], c: &mut [f32]) -> f32 {
    let mut total = 0f32;
    for _ in 0..passes {
        match kernel {
            Kernel::Copy => c.copy_from_slice(a),
            Kernel::Scale => b.iter_mut().zip(c.iter()).for_each(|(b, c)| *b = S * c),
            Kernel::Add => (c.iter_mut().zip(a.iter()).zip(b.iter())).for_each(|((c, a), b)| *c = a + b),
            Kernel::Triad => (a.iter_mut().zip(b.iter()).zip(c.iter())).for_each(|((a, b), c)| *a = b + S * c),
            Kernel::Read => total += sum_lanes(a),
        }
    }
    total
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn pass_avx512(kernel: Kernel, passes: usize, a: &mut [f32], b: &mut [f32], c: &mut [f32]) -> f32 {
    pass_lanes(kernel, passes, a, b, c)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn pass_avx2(kernel: Kernel, passes: usize, a: &mut [f32], b: &mut [f32], c: &mut [f32]) -> f32 {
    pass_lanes(kernel, passes, a, b, c)
}

/// Runs `work(part)` for every part below `parts`, on `threads` threads of the matmuls' team.
/// Each thread first takes the parts that are its own (`thread + k·threads`), so that a part
/// stays with one core from call to call (its L2 keeps it), then helps with what is left.
fn in_parts(threads: usize, parts: usize, work: &(dyn Fn(usize) + Sync)) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kernel_does_what_stream_says_and_counts_its_bytes() {
        let mut a = vec![1.0f32, 2.0, 3.0];
        let (mut b, mut c) = (vec![0.0f32; 3], vec![0.0f32; 3]);
        pass(Kernel::Copy, 1, &mut a, &mut b, &mut c);
        assert_eq!(c, [1.0, 2.0, 3.0]);
        pass(Kernel::Scale, 1, &mut a, &mut b, &mut c);
        assert_eq!(b, [0.5, 1.0, 1.5]);
        pass(Kernel::Add, 1, &mut a, &mut b, &mut c);
        assert_eq!(c, [1.5, 3.0, 4.5]);
        pass(Kernel::Triad, 1, &mut a, &mut b, &mut c);
        assert_eq!(a, [1.25, 2.5, 3.75]);
        assert_eq!(pass(Kernel::Read, 1, &mut a, &mut [], &mut []), 7.5);
        assert_eq!(pass(Kernel::Read, 2, &mut a, &mut [], &mut []), 15.0);
        assert_eq!(sum_lanes(&(0..1000).map(|i| i as f32).collect::<Vec<_>>()), 499_500.0);

        let mut buffers = Buffers::new(1 << 20).unwrap();
        for kernel in Kernel::ALL {
            for threads in [1, 2, 3] {
                let p = buffers.measure(kernel, 12 << 10, threads, Budget::count(0, 2)).unwrap();
                assert_eq!(p.bytes, 12 << 10, "{kernel:?}");
                assert!(p.best_bytes_per_sec >= p.bytes_per_sec && p.spread >= 1.0, "{p:?}");
            }
        }
        // Beyond the buffers, refused.
        assert!(buffers.measure(Kernel::Add, 2 << 20, 1, Budget::count(0, 1)).is_err());
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
    fn sizes_double_from_a_page_to_four_times_the_largest_cache() {
        assert_eq!(sizes(16 << 10), [4 << 10, 8 << 10, 16 << 10]);
        assert_eq!(sizes(1040 << 20).last(), Some(&(1040 << 20)));
        assert_eq!(sizes(1040 << 20).iter().rev().nth(1), Some(&(512 << 20)));
        assert_eq!(largest_size(260 << 20, Some(24 << 30)), 1040 << 20);
        assert_eq!(largest_size(1 << 20, None), 64 << 20);
        // Bounded by the memory available.
        assert_eq!(largest_size(260 << 20, Some(1 << 30)), 64 << 20);
    }
}
